package gocompat

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
)

// sendToQueues sends msgs[i] with SendSync to queues[i % len(queues)] (manual queue selector) and
// returns each message's SendResult.
func sendToQueues(t *testing.T, p producerClient, queues []*primitive.MessageQueue, msgs []*primitive.Message, want []sent) map[string]*primitive.SendResult {
	t.Helper()
	results := map[string]*primitive.SendResult{}
	for i, m := range msgs {
		m.Queue = queues[i%len(queues)]
		ctx, cancel := context.WithTimeout(context.Background(), sendTimeout)
		res, err := p.SendSync(ctx, m)
		cancel()
		if err != nil {
			t.Fatalf("SendSync %s: %v", want[i].key, err)
		}
		if res.Status != primitive.SendOK || res.MessageQueue.QueueId != m.Queue.QueueId {
			t.Fatalf("SendSync %s to queue %d: %v", want[i].key, m.Queue.QueueId, res)
		}
		results[want[i].key] = res
	}
	return results
}

// sendTaggedMessages creates the test's topic and sends 44 messages tagged TagA, TagB, TagC or
// untagged, message i to queue i%4, the last four (one per queue) TagA. It returns the queues,
// every message sent, and those a "TagA || TagC" subscription must receive.
func sendTaggedMessages(t *testing.T, e *testEnv, prefix string) ([]*primitive.MessageQueue, []sent, []sent) {
	t.Helper()
	queues := e.createTopic(queueCount)
	p := e.newProducer(producer.WithQueueSelector(producer.NewManualQueueSelector()))
	tags := []string{"TagB", "TagC", "", "TagB", "TagA"}
	msgs, all := newMessages(e.topic, prefix, 44, func(i int) string {
		if i >= 40 {
			return "TagA"
		}
		return tags[i%len(tags)]
	})
	sendToQueues(t, p, queues, msgs, all)
	var want []sent
	for _, s := range all {
		if s.tags == "TagA" || s.tags == "TagC" {
			want = append(want, s)
		}
	}
	return queues, all, want
}

// TestPushConsumerTagFilter: 44 messages tagged TagA, TagB, TagC or untagged over four queues,
// the last one of each queue tagged TagA; a push consumer subscribed to "TagA || TagC" receives
// every TagA and TagC message exactly once and nothing else.
func TestPushConsumerTagFilter(t *testing.T) {
	e := begin(t)
	_, _, want := sendTaggedMessages(t, e, "tagged")

	rec := &recorder{}
	e.startPushConsumer(rec, consumer.MessageSelector{Type: consumer.TAG, Expression: "TagA || TagC"})
	// Every queue's last message matches, so once all matching messages arrived the consumer has
	// pulled past every other one.
	rec.awaitAll(t, want, consumeTimeout)
	assertExactlyOnce(t, want, rec.snapshot())
}

// TestPushConsumerSQL92Filter: 44 messages with property a = i, tagged as in
// TestPushConsumerTagFilter (the last one of each queue TagA); a push consumer with the SQL92
// selector "a >= 20 AND (TAGS = 'TagA' OR TAGS = 'TagC')" receives exactly the matching messages,
// each once. The broker evaluates the selector (enablePropertyFilter=true).
func TestPushConsumerSQL92Filter(t *testing.T) {
	e := begin(t)
	queues := e.createTopic(queueCount)
	p := e.newProducer(producer.WithQueueSelector(producer.NewManualQueueSelector()))
	tags := []string{"TagB", "TagC", "", "TagB", "TagA"}
	msgs, all := newMessages(e.topic, "sql", 44, func(i int) string {
		if i >= 40 {
			return "TagA"
		}
		return tags[i%len(tags)]
	})
	var want []sent
	for i, m := range msgs {
		m.WithProperty("a", strconv.Itoa(i))
		if i >= 20 && (all[i].tags == "TagA" || all[i].tags == "TagC") {
			want = append(want, all[i])
		}
	}
	sendToQueues(t, p, queues, msgs, all)

	rec := &recorder{}
	e.startPushConsumer(rec, consumer.MessageSelector{Type: consumer.SQL92, Expression: "a >= 20 AND (TAGS = 'TagA' OR TAGS = 'TagC')"})
	rec.awaitAll(t, want, consumeTimeout)
	assertExactlyOnce(t, want, rec.snapshot())
}

// TestPullFromBrokerTagFilter: the same subscription as TestPushConsumerTagFilter through the pull
// consumer's PullFrom, looking at the raw pull bodies (the client filters tags again after the
// broker): the broker itself sends only TagA and TagC messages, each exactly once, and the next
// offsets step over the others until each queue's end.
func TestPullFromBrokerTagFilter(t *testing.T) {
	e := begin(t)
	queues, all, want := sendTaggedMessages(t, e, "brokerfilter")

	c, err := consumer.NewPullConsumer(
		consumer.WithNsResolver(primitive.NewPassthroughResolver([]string{server.namesrvAddr()})),
		consumer.WithGroupName(e.group),
		consumer.WithInstance(instanceName("pull")))
	if err != nil {
		t.Fatalf("NewPullConsumer: %v", err)
	}
	if err := c.Subscribe(e.topic, consumer.MessageSelector{Type: consumer.TAG, Expression: "TagA || TagC"}); err != nil {
		t.Fatalf("Subscribe: %v", err)
	}
	if err := c.Start(); err != nil {
		t.Fatalf("pull consumer Start: %v", err)
	}
	t.Cleanup(func() { _ = c.Shutdown() })

	rec := &recorder{}
	for _, mq := range queues {
		count := int64(len(all) / queueCount)
		offset := int64(0)
		for offset < count {
			ctx, cancel := context.WithTimeout(context.Background(), sendTimeout)
			res, err := c.PullFrom(ctx, mq, offset, 4)
			cancel()
			if err != nil {
				t.Fatalf("PullFrom queue %d offset %d: %v", mq.QueueId, offset, err)
			}
			if (res.Status != primitive.PullFound && res.Status != primitive.PullNoMsgMatched) || res.NextBeginOffset <= offset {
				t.Fatalf("PullFrom queue %d offset %d: status %v next %d, want FOUND or NO_MATCHED_MSG moving forward",
					mq.QueueId, offset, res.Status, res.NextBeginOffset)
			}
			raw := primitive.DecodeMessage(res.GetBody())
			for _, m := range raw {
				m.Queue = mq
				if tag := m.GetTags(); tag != "TagA" && tag != "TagC" {
					t.Errorf("queue %d: the broker sent %s with tag %q to a \"TagA || TagC\" subscription", mq.QueueId, m.GetKeys(), tag)
				}
			}
			rec.add(raw...)
			offset = res.NextBeginOffset
		}
	}
	assertExactlyOnce(t, want, rec.snapshot())
}

// TestPullConsumerPullFrom: the pull consumer's PullFrom reads each queue from offset 0 in pulls of
// up to 8: FOUND with min offset 0, next offset = offset + messages returned, max offset between
// that and the messages in the queue, consecutive queue offsets, every message exactly once at its
// send result's queue and offset; a pull far past the end answers OFFSET_ILLEGAL
// (PULL_OFFSET_MOVED) with the max offset as next offset (Java 5.x; 4.9 answered the min offset
// when it was 0).
func TestPullConsumerPullFrom(t *testing.T) {
	e := begin(t)
	queues := e.createTopic(queueCount)
	p := e.newProducer(producer.WithQueueSelector(producer.NewManualQueueSelector()))
	// Queues 0..3 get 10, 12, 12 and 12 messages (see queueFor).
	msgs, want := newMessages(e.topic, "pull", 46, cycleTags("TagA", "TagB", ""))
	for i, m := range msgs {
		m.Queue = queues[queueFor(i)]
	}
	results := map[string]*primitive.SendResult{}
	perQueue := map[int]int64{}
	for i, m := range msgs {
		ctx, cancel := context.WithTimeout(context.Background(), sendTimeout)
		res, err := p.SendSync(ctx, m)
		cancel()
		if err != nil || res.Status != primitive.SendOK {
			t.Fatalf("SendSync %s: %v %v", want[i].key, res, err)
		}
		results[want[i].key] = res
		perQueue[m.Queue.QueueId]++
	}

	c, err := consumer.NewPullConsumer(
		consumer.WithNsResolver(primitive.NewPassthroughResolver([]string{server.namesrvAddr()})),
		consumer.WithGroupName(e.group),
		consumer.WithInstance(instanceName("pull")))
	if err != nil {
		t.Fatalf("NewPullConsumer: %v", err)
	}
	// Assign with no queue: the consumer knows the topic (Start checks its route) and pulls nothing by itself.
	if err := c.Assign(e.topic, nil); err != nil {
		t.Fatalf("Assign: %v", err)
	}
	if err := c.Start(); err != nil {
		t.Fatalf("pull consumer Start: %v", err)
	}
	t.Cleanup(func() { _ = c.Shutdown() })
	routeQueues, err := c.GetTopicRouteInfo(e.topic)
	if err != nil || len(routeQueues) != queueCount {
		t.Fatalf("GetTopicRouteInfo: %d queues, %v; want %d", len(routeQueues), err, queueCount)
	}

	rec := &recorder{}
	for _, mq := range routeQueues {
		count := perQueue[mq.QueueId]
		offset := int64(0)
		for offset < count {
			ctx, cancel := context.WithTimeout(context.Background(), sendTimeout)
			res, err := c.PullFrom(ctx, mq, offset, 8)
			cancel()
			if err != nil {
				t.Fatalf("PullFrom queue %d offset %d: %v", mq.QueueId, offset, err)
			}
			msgs := res.GetMessageExts()
			if res.Status != primitive.PullFound || len(msgs) == 0 || len(msgs) > 8 {
				t.Fatalf("PullFrom queue %d offset %d: status %v with %d messages, want FOUND with 1..8", mq.QueueId, offset, res.Status, len(msgs))
			}
			// The ConsumeQueue is built after the send is acknowledged (as in Java), so the max offset
			// may still be below the count while the dispatcher catches up; a pull at the max offset
			// is held until the next message is dispatched.
			next := offset + int64(len(msgs))
			if res.MinOffset != 0 || res.NextBeginOffset != next || res.MaxOffset < next || res.MaxOffset > count {
				t.Errorf("PullFrom queue %d offset %d: min %d max %d next %d, want 0, %d..%d, %d",
					mq.QueueId, offset, res.MinOffset, res.MaxOffset, res.NextBeginOffset, next, count, next)
			}
			for i, m := range msgs {
				if m.QueueOffset != offset+int64(i) {
					t.Errorf("queue %d: message %d of a pull from %d has offset %d", mq.QueueId, i, offset, m.QueueOffset)
				}
			}
			rec.add(msgs...)
			offset = res.NextBeginOffset
		}
	}
	got := rec.snapshot()
	assertExactlyOnce(t, want, got)
	checkDeliveredAsSent(t, e.topic, got, results)

	ctx, cancel := context.WithTimeout(context.Background(), sendTimeout)
	defer cancel()
	past := perQueue[routeQueues[0].QueueId] + 100
	res, err := c.PullFrom(ctx, routeQueues[0], past, 8)
	if err != nil {
		t.Fatalf("PullFrom past the end (offset %d): %v", past, err)
	}
	held := perQueue[routeQueues[0].QueueId]
	if res.Status != primitive.PullOffsetIllegal || res.NextBeginOffset != held || len(res.GetMessageExts()) != 0 {
		t.Errorf("PullFrom offset %d of a queue holding %d: status %v next %d with %d messages, want OFFSET_ILLEGAL (%v), next %d, none",
			past, held, res.Status, res.NextBeginOffset, len(res.GetMessageExts()), primitive.PullOffsetIllegal, held)
	}
}

// queueFor spreads 46 messages as 10, 12, 12, 12 over queues 0..3.
func queueFor(i int) int {
	if i < 40 {
		return i % queueCount
	}
	return 1 + (i-40)%3
}

// TestPullConsumerPoll: the pull consumer subscribed to "TagB" (its own rebalance and pull loop),
// Poll + ACK until every TagB message arrived; each exactly once, no other tag.
func TestPullConsumerPoll(t *testing.T) {
	e := begin(t)
	queues := e.createTopic(queueCount)
	p := e.newProducer(producer.WithQueueSelector(producer.NewManualQueueSelector()))
	// i%3 == 1 is TagB; with 36 messages on 4 queues every queue gets three TagB among nine.
	msgs, all := newMessages(e.topic, "poll", 36, cycleTags("TagA", "TagB", ""))
	sendToQueues(t, p, queues, msgs, all)
	var want []sent
	for _, s := range all {
		if s.tags == "TagB" {
			want = append(want, s)
		}
	}

	c, err := consumer.NewPullConsumer(
		consumer.WithNsResolver(primitive.NewPassthroughResolver([]string{server.namesrvAddr()})),
		consumer.WithGroupName(e.group),
		consumer.WithInstance(instanceName("poll")),
		consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset))
	if err != nil {
		t.Fatalf("NewPullConsumer: %v", err)
	}
	if err := c.Subscribe(e.topic, consumer.MessageSelector{Type: consumer.TAG, Expression: "TagB"}); err != nil {
		t.Fatalf("Subscribe: %v", err)
	}
	if err := c.Start(); err != nil {
		t.Fatalf("pull consumer Start: %v", err)
	}
	t.Cleanup(func() { _ = c.Shutdown() })

	rec := &recorder{}
	deadline := time.Now().Add(consumeTimeout)
	for !rec.hasAll(want) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", consumeTimeout, rec.progress(want))
		}
		cr, err := c.Poll(context.Background(), 200*time.Millisecond)
		if consumer.IsNoNewMsgError(err) {
			continue
		}
		if err != nil {
			t.Fatalf("Poll: %v", err)
		}
		rec.add(cr.GetMsgList()...)
		c.ACK(context.Background(), cr, consumer.ConsumeSuccess)
	}
	assertExactlyOnce(t, want, rec.snapshot())
}

// TestOrderlyConsumption: 8 sharding keys × 25 messages sent with the hash queue selector; every
// sharding key's messages land in one queue; an orderly push consumer (queue locks) receives each
// message exactly once, each queue's messages in offset order and each sharding key's in send order.
func TestOrderlyConsumption(t *testing.T) {
	e := begin(t)
	e.createTopic(queueCount)
	p := e.newProducer(producer.WithQueueSelector(producer.NewHashQueueSelector()))
	const shardingKeys, perKey = 8, 25
	var want []sent
	queueOfKey := map[string]int{}
	for seq := 0; seq < perKey; seq++ {
		for k := 0; k < shardingKeys; k++ {
			shard := fmt.Sprintf("order-%d", k)
			s := sent{key: fmt.Sprintf("%s-%02d", shard, seq), body: fmt.Sprintf("%s:%d", shard, seq), tags: "Ordered"}
			m := primitive.NewMessage(e.topic, []byte(s.body))
			m.WithKeys([]string{s.key})
			m.WithTag(s.tags)
			m.WithShardingKey(shard)
			ctx, cancel := context.WithTimeout(context.Background(), sendTimeout)
			res, err := p.SendSync(ctx, m)
			cancel()
			if err != nil || res.Status != primitive.SendOK {
				t.Fatalf("SendSync %s: %v %v", s.key, res, err)
			}
			q, seen := queueOfKey[shard]
			if seen && q != res.MessageQueue.QueueId {
				t.Fatalf("sharding key %s went to queues %d and %d", shard, q, res.MessageQueue.QueueId)
			}
			queueOfKey[shard] = res.MessageQueue.QueueId
			want = append(want, s)
		}
	}

	rec := &recorder{}
	e.startPushConsumer(rec, consumer.MessageSelector{}, consumer.WithConsumerOrder(true))
	rec.awaitAll(t, want, consumeTimeout)
	got := rec.snapshot()
	assertExactlyOnce(t, want, got)

	lastOffset := map[int]int64{}
	nextSeq := map[string]int{}
	for _, d := range got {
		if last, ok := lastOffset[d.queueID]; ok && d.queueOffset <= last {
			t.Errorf("queue %d: offset %d consumed after offset %d", d.queueID, d.queueOffset, last)
		}
		lastOffset[d.queueID] = d.queueOffset
		parts := strings.SplitN(d.body, ":", 2)
		seq, _ := strconv.Atoi(parts[1])
		if seq != nextSeq[parts[0]] {
			t.Errorf("sharding key %s: message %d consumed when %d was due", parts[0], seq, nextSeq[parts[0]])
		}
		nextSeq[parts[0]] = seq + 1
		if d.queueID != queueOfKey[parts[0]] {
			t.Errorf("%s consumed from queue %d, sent to %d", d.key, d.queueID, queueOfKey[parts[0]])
		}
	}
}

// TestBroadcasting: two push consumers of one group in BROADCASTING mode each receive every one of
// 40 messages exactly once.
func TestBroadcasting(t *testing.T) {
	e := begin(t)
	e.createTopic(queueCount)
	p := e.newProducer()
	msgs, want := newMessages(e.topic, "broadcast", 40, cycleTags("TagA", "TagB"))
	for i, m := range msgs {
		ctx, cancel := context.WithTimeout(context.Background(), sendTimeout)
		res, err := p.SendSync(ctx, m)
		cancel()
		if err != nil || res.Status != primitive.SendOK {
			t.Fatalf("SendSync %s: %v %v", want[i].key, res, err)
		}
	}

	recs := []*recorder{{}, {}}
	// Broadcasting offsets live in local files; removed once both consumers have shut down.
	instances := []string{instanceName("broadcast0"), instanceName("broadcast1")}
	t.Cleanup(func() { removeLocalOffsets(t, e.group, instances...) })
	for i, rec := range recs {
		e.startPushConsumer(rec, consumer.MessageSelector{},
			consumer.WithInstance(instances[i]), consumer.WithConsumerModel(consumer.BroadCasting))
	}
	for _, rec := range recs {
		rec.awaitAll(t, want, consumeTimeout)
	}
	for _, rec := range recs {
		assertExactlyOnce(t, want, rec.snapshot())
	}
}
