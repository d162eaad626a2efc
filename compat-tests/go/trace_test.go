package gocompat

import (
	"context"
	"strings"
	"testing"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
)

// TestMessageTrace: a producer and a push consumer with tracing on (WithTrace) write their traces
// to RMQ_SYS_TRACE_TOPIC, and every message sent and consumed has its Pub, SubBefore and SubAfter
// records there. Every delivered message carries MSG_REGION, TRACE_ON and CLUSTER, which the broker
// adds on the way in as the Java broker does (the consumer's trace hook reads the region from it).
func TestMessageTrace(t *testing.T) {
	e := begin(t)
	queues := e.createTopic(queueCount)
	trace := &primitive.TraceConfig{
		GroupName: "PID_" + e.topic + "_trace",
		Access:    primitive.Local,
		Resolver:  primitive.NewPassthroughResolver([]string{server.namesrvAddr()}),
	}
	p := e.newProducer(producer.WithQueueSelector(producer.NewManualQueueSelector()), producer.WithTrace(trace))
	msgs, want := newMessages(e.topic, "traced", 8, nil)
	results := sendToQueues(t, p, queues, msgs, want)

	rec := &recorder{}
	e.startPushConsumer(rec, consumer.MessageSelector{Type: consumer.TAG, Expression: "*"}, consumer.WithTrace(trace))
	rec.awaitAll(t, want, consumeTimeout)
	for _, d := range rec.snapshot() {
		if d.props["MSG_REGION"] != "DefaultRegion" || d.props["TRACE_ON"] != "true" || d.props["CLUSTER"] == "" {
			t.Errorf("%s delivered with MSG_REGION %q, TRACE_ON %q, CLUSTER %q; want DefaultRegion, true, the cluster",
				d.key, d.props["MSG_REGION"], d.props["TRACE_ON"], d.props["CLUSTER"])
		}
	}

	// The trace topic is created by the first trace a dispatcher sends (autoCreateTopicEnable), in
	// the background: the reader starts once it has a route.
	var c interface {
		PullFrom(context.Context, *primitive.MessageQueue, int64, int) (*primitive.PullResult, error)
	}
	var traceQueues []*primitive.MessageQueue
	startReader := func() bool {
		pc, err := consumer.NewPullConsumer(
			consumer.WithNsResolver(primitive.NewPassthroughResolver([]string{server.namesrvAddr()})),
			consumer.WithGroupName(e.group+"_traces"),
			consumer.WithInstance(instanceName("traces")))
		if err != nil {
			t.Fatalf("NewPullConsumer: %v", err)
		}
		if err := pc.Assign(traceTopic, nil); err != nil {
			t.Fatalf("Assign: %v", err)
		}
		if err := pc.Start(); err != nil {
			return false
		}
		t.Cleanup(func() { _ = pc.Shutdown() })
		if traceQueues, err = pc.GetTopicRouteInfo(traceTopic); err != nil || len(traceQueues) == 0 {
			t.Fatalf("route of %s: %d queues, %v", traceTopic, len(traceQueues), err)
		}
		c = pc
		return true
	}
	waitUntil(t, consumeTimeout, func() string { return "a route of " + traceTopic }, startReader)

	// Record types seen per msgId; the trace dispatchers flush in the background.
	seen := map[string]map[string]bool{}
	offsets := map[int]int64{}
	missing := func() []string {
		var out []string
		for _, w := range want {
			id := results[w.key].MsgID
			for _, typ := range []string{"Pub", "SubBefore", "SubAfter"} {
				if !seen[id][typ] {
					out = append(out, w.key+" "+typ)
				}
			}
		}
		return out
	}
	waitUntil(t, consumeTimeout, func() string { return "trace records; missing " + abbreviate(missing()) }, func() bool {
		for _, mq := range traceQueues {
			for {
				ctx, cancel := context.WithTimeout(context.Background(), sendTimeout)
				res, err := c.PullFrom(ctx, mq, offsets[mq.QueueId], 32)
				cancel()
				if err != nil || res.Status != primitive.PullFound {
					break
				}
				for _, m := range res.GetMessageExts() {
					for _, r := range traceRecords(string(m.Body)) {
						if seen[r.msgID] == nil {
							seen[r.msgID] = map[string]bool{}
						}
						seen[r.msgID][r.typ] = true
					}
				}
				offsets[mq.QueueId] = res.NextBeginOffset
				// A pull at the end of the queue is held (long polling) until a trace arrives:
				// only make one while something is missing.
				if len(missing()) == 0 {
					return true
				}
			}
		}
		return len(missing()) == 0
	})
}

const traceTopic = "RMQ_SYS_TRACE_TOPIC"

// traceRecord is one record of a trace message: its type and the msgId it is about.
type traceRecord struct{ typ, msgID string }

// traceRecords decodes a trace message body as the Java and Go clients write it (records end with
// \x02, fields are separated by \x01): its Pub, SubBefore and SubAfter records.
func traceRecords(body string) []traceRecord {
	var out []traceRecord
	for _, rec := range strings.Split(body, "\x02") {
		f := strings.Split(rec, "\x01")
		switch {
		case (f[0] == "Pub" || f[0] == "SubBefore") && len(f) > 5:
			out = append(out, traceRecord{f[0], f[5]})
		case f[0] == "SubAfter" && len(f) > 2:
			out = append(out, traceRecord{f[0], f[2]})
		}
	}
	return out
}
