package gocompat

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
)

const queueCount = 4

func cycleTags(tags ...string) func(int) string {
	return func(i int) string { return tags[i%len(tags)] }
}

// checkSendResult checks what every acknowledged single send must carry, and that queue offsets of
// a fresh topic count up from 0 in each queue (next holds the expected next offset per queue).
func checkSendResult(t *testing.T, topic, key string, res *primitive.SendResult, uniqKey string, next map[int]int64) {
	t.Helper()
	if res.Status != primitive.SendOK {
		t.Fatalf("%s: status %v, want SEND_OK", key, res.Status)
	}
	if res.MessageQueue == nil || res.MessageQueue.Topic != topic {
		t.Fatalf("%s: message queue %v, want one of %s", key, res.MessageQueue, topic)
	}
	q := res.MessageQueue.QueueId
	if res.QueueOffset != next[q] {
		t.Errorf("%s: queue %d offset %d, want %d (a fresh topic's offsets count from 0 per queue)", key, q, res.QueueOffset, next[q])
	}
	next[q] = res.QueueOffset + 1
	if uniqKey == "" || res.MsgID != uniqKey {
		t.Errorf("%s: msgId %q, want the message's UNIQ_KEY %q", key, res.MsgID, uniqKey)
	}
	// offsetMsgId: IPv4 store host (4 bytes address, 4 bytes port) and CommitLog offset (8), in hex.
	if len(res.OffsetMsgID) != 32 || !strings.HasPrefix(res.OffsetMsgID, "7F000001") {
		t.Errorf("%s: offsetMsgId %q, want 32 hex digits starting with 7F000001 (127.0.0.1)", key, res.OffsetMsgID)
	}
}

// consumeAll subscribes a push consumer to the whole topic and checks it receives each of want
// exactly once; it returns the deliveries.
func consumeAll(t *testing.T, e *testEnv, want []sent) []delivery {
	t.Helper()
	rec := &recorder{}
	e.startPushConsumer(rec, consumer.MessageSelector{})
	rec.awaitAll(t, want, consumeTimeout)
	got := rec.snapshot()
	assertExactlyOnce(t, want, got)
	return got
}

// checkDeliveredAsSent checks that each delivery sits where the send result put it.
func checkDeliveredAsSent(t *testing.T, topic string, got []delivery, results map[string]*primitive.SendResult) {
	t.Helper()
	for _, d := range got {
		res := results[d.key]
		if d.topic != topic || d.queueID != res.MessageQueue.QueueId || d.queueOffset != res.QueueOffset {
			t.Errorf("%s delivered from %s queue %d offset %d, sent to %s queue %d offset %d",
				d.key, d.topic, d.queueID, d.queueOffset, topic, res.MessageQueue.QueueId, res.QueueOffset)
		}
		if d.msgID != res.MsgID || d.offsetMsgID != res.OffsetMsgID {
			t.Errorf("%s delivered with msgId %s offsetMsgId %s, sent as %s / %s", d.key, d.msgID, d.offsetMsgID, res.MsgID, res.OffsetMsgID)
		}
	}
}

// TestSyncSend: SendSync of 41 messages (tags, no tag, one 8 KiB body the client sends
// zlib-compressed); each acknowledged with its queue and offset, msgId and offsetMsgId; a push
// consumer then receives each exactly once, at that queue and offset, with those ids.
func TestSyncSend(t *testing.T) {
	e := begin(t)
	e.createTopic(queueCount)
	p := e.newProducer()
	msgs, want := newMessages(e.topic, "sync", 40, cycleTags("TagA", "TagB", ""))
	big := strings.Repeat(fmt.Sprintf("compressible %s ", runID), 8*1024/20)
	bigMsg := primitive.NewMessage(e.topic, []byte(big))
	bigMsg.WithKeys([]string{"sync-big"})
	bigMsg.WithTag("Big")
	msgs = append(msgs, bigMsg)
	want = append(want, sent{key: "sync-big", body: big, tags: "Big"})

	results := map[string]*primitive.SendResult{}
	next := map[int]int64{}
	for i, m := range msgs {
		ctx, cancel := context.WithTimeout(context.Background(), sendTimeout)
		res, err := p.SendSync(ctx, m)
		cancel()
		if err != nil {
			t.Fatalf("SendSync %s: %v", want[i].key, err)
		}
		checkSendResult(t, e.topic, want[i].key, res, m.GetProperty(primitive.PropertyUniqueClientMessageIdKeyIndex), next)
		results[want[i].key] = res
	}
	if len(next) != queueCount {
		t.Errorf("the round-robin producer wrote to queues %v, want all %d", next, queueCount)
	}

	checkDeliveredAsSent(t, e.topic, consumeAll(t, e, want), results)
}

// TestAsyncSend: 40 SendAsync calls in flight together; every callback reports SEND_OK with a
// distinct (queue, offset), offsets 0..n-1 per queue; a push consumer receives each exactly once
// where its callback said.
func TestAsyncSend(t *testing.T) {
	e := begin(t)
	e.createTopic(queueCount)
	p := e.newProducer()
	msgs, want := newMessages(e.topic, "async", 40, cycleTags("TagA", ""))

	type outcome struct {
		res *primitive.SendResult
		err error
	}
	done := make(chan outcome, len(msgs))
	uniqToKey := map[string]string{}
	for i, m := range msgs {
		err := p.SendAsync(context.Background(), func(_ context.Context, res *primitive.SendResult, err error) {
			done <- outcome{res, err}
		}, m)
		if err != nil {
			t.Fatalf("SendAsync %s: %v", want[i].key, err)
		}
		uniqToKey[m.GetProperty(primitive.PropertyUniqueClientMessageIdKeyIndex)] = want[i].key
	}
	results := map[string]*primitive.SendResult{}
	offsets := map[int]map[int64]bool{}
	deadline := time.After(consumeTimeout)
	for n := 0; n < len(msgs); n++ {
		select {
		case o := <-done:
			if o.err != nil {
				t.Fatalf("async send callback: %v", o.err)
			}
			key, ok := uniqToKey[o.res.MsgID]
			if !ok {
				t.Fatalf("callback for unknown msgId %q: %v", o.res.MsgID, o.res)
			}
			if o.res.Status != primitive.SendOK || o.res.MessageQueue == nil || o.res.MessageQueue.Topic != e.topic {
				t.Fatalf("%s: %v, want SEND_OK on %s", key, o.res, e.topic)
			}
			q := o.res.MessageQueue.QueueId
			if offsets[q] == nil {
				offsets[q] = map[int64]bool{}
			}
			if offsets[q][o.res.QueueOffset] {
				t.Errorf("%s: queue %d offset %d acknowledged twice", key, q, o.res.QueueOffset)
			}
			offsets[q][o.res.QueueOffset] = true
			results[key] = o.res
		case <-deadline:
			t.Fatalf("%d of %d async send callbacks after %v", n, len(msgs), consumeTimeout)
		}
	}
	for q, set := range offsets {
		for off := int64(0); off < int64(len(set)); off++ {
			if !set[off] {
				t.Errorf("queue %d: offsets %v are not 0..%d", q, set, len(set)-1)
				break
			}
		}
	}

	checkDeliveredAsSent(t, e.topic, consumeAll(t, e, want), results)
}

// TestOneWaySend: 40 SendOneWay calls (no answer from the broker); a push consumer receives each
// exactly once with its body and tags.
func TestOneWaySend(t *testing.T) {
	e := begin(t)
	e.createTopic(queueCount)
	p := e.newProducer()
	msgs, want := newMessages(e.topic, "oneway", 40, cycleTags("TagA", "TagB"))
	for i, m := range msgs {
		ctx, cancel := context.WithTimeout(context.Background(), sendTimeout)
		err := p.SendOneWay(ctx, m)
		cancel()
		if err != nil {
			t.Fatalf("SendOneWay %s: %v", want[i].key, err)
		}
	}
	consumeAll(t, e, want)
}

// TestBatchSend: three SendSync calls with 10 messages each (the Go client encodes them into one
// SEND_BATCH_MESSAGE). The broker must store each as a message of its own: the answer carries the
// first queue offset and ten comma-separated offsetMsgIds (as Java's broker answers), and a push
// consumer receives 30 messages, each with its own key, body and tags, a batch's messages at
// consecutive offsets of one queue in batch order, with the offsetMsgIds of the answer.
func TestBatchSend(t *testing.T) {
	e := begin(t)
	e.createTopic(queueCount)
	p := e.newProducer()
	const batches, perBatch = 3, 10
	var want []sent
	type placed struct {
		queue       int
		offset      int64
		offsetMsgID string
	}
	where := map[string]placed{}
	for b := 0; b < batches; b++ {
		msgs, w := newMessages(e.topic, fmt.Sprintf("batch%d", b), perBatch, cycleTags("TagA", "TagB", "TagC", ""))
		ctx, cancel := context.WithTimeout(context.Background(), sendTimeout)
		res, err := p.SendSync(ctx, msgs...)
		cancel()
		if err != nil {
			t.Fatalf("batch %d: SendSync of %d messages: %v", b, perBatch, err)
		}
		if res.Status != primitive.SendOK || res.MessageQueue == nil || res.MessageQueue.Topic != e.topic {
			t.Fatalf("batch %d: %v, want SEND_OK on %s", b, res, e.topic)
		}
		ids := strings.Split(res.OffsetMsgID, ",")
		if len(ids) != perBatch {
			t.Errorf("batch %d: offsetMsgId %q has %d ids, want %d (one per message)", b, res.OffsetMsgID, len(ids), perBatch)
		}
		for i := range w {
			at := placed{queue: res.MessageQueue.QueueId, offset: res.QueueOffset + int64(i)}
			if i < len(ids) {
				at.offsetMsgID = ids[i]
			}
			where[w[i].key] = at
		}
		want = append(want, w...)
	}

	got := consumeAll(t, e, want)
	for _, d := range got {
		at := where[d.key]
		if d.queueID != at.queue || d.queueOffset != at.offset {
			t.Errorf("%s delivered from queue %d offset %d, want queue %d offset %d (the batch's queue, first offset + index)",
				d.key, d.queueID, d.queueOffset, at.queue, at.offset)
		}
		if at.offsetMsgID != "" && d.offsetMsgID != at.offsetMsgID {
			t.Errorf("%s delivered with offsetMsgId %s, the send answer said %s", d.key, d.offsetMsgID, at.offsetMsgID)
		}
	}
}
