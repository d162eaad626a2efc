package gocompat

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
)

// levelDelay is the default messageDelayLevel ("1s 5s 10s ...") for the levels the test uses.
var levelDelay = map[int]time.Duration{0: 0, 1: time.Second, 2: 5 * time.Second, 3: 10 * time.Second}

// delayMargin bounds how late a delayed message may arrive after it was due: the broker's delivery
// tick, the consumer's long poll being woken and a loaded CI machine.
const delayMargin = 5 * time.Second

// TestDelayLevel: two messages each with DelayTimeLevel 0 (none), 1, 2 and 3 sent to a topic a push
// consumer already reads; each arrives exactly once, with its body, on its topic, and no earlier
// than its level's delay (1 s, 5 s, 10 s) after the send started, nor more than delayMargin later.
func TestDelayLevel(t *testing.T) {
	e := begin(t)
	e.createTopic(queueCount)
	p := e.newProducer()
	rec := &recorder{}
	e.startPushConsumer(rec, consumer.MessageSelector{})

	var want []sent
	sentAt := map[string]time.Time{}
	levelOf := map[string]int{}
	for level := 3; level >= 0; level-- {
		for i := 0; i < 2; i++ {
			s := sent{key: fmt.Sprintf("delay-L%d-%d", level, i), body: fmt.Sprintf("level %d #%d of run %s", level, i, runID), tags: "Delayed"}
			m := primitive.NewMessage(e.topic, []byte(s.body))
			m.WithKeys([]string{s.key})
			m.WithTag(s.tags)
			if level > 0 {
				m.WithDelayTimeLevel(level)
			}
			start := time.Now()
			ctx, cancel := context.WithTimeout(context.Background(), sendTimeout)
			res, err := p.SendSync(ctx, m)
			cancel()
			if err != nil || res.Status != primitive.SendOK {
				t.Fatalf("SendSync %s: %v %v", s.key, res, err)
			}
			want = append(want, s)
			sentAt[s.key] = start
			levelOf[s.key] = level
		}
	}

	rec.awaitAll(t, want, levelDelay[3]+delayMargin+consumeTimeout)
	got := rec.snapshot()
	assertExactlyOnce(t, want, got)
	for _, d := range got {
		level := levelOf[d.key]
		due := levelDelay[level]
		// The broker computes the delivery time from its millisecond store timestamp, which is not
		// before the send started, truncated to the millisecond.
		earliest := sentAt[d.key].Truncate(time.Millisecond).Add(due)
		took := d.at.Sub(sentAt[d.key]).Round(time.Millisecond)
		if d.at.Before(earliest) {
			t.Errorf("%s (level %d, %v) arrived %v after the send started: too early", d.key, level, due, took)
		}
		if d.at.After(sentAt[d.key].Add(due + delayMargin)) {
			t.Errorf("%s (level %d, %v) arrived %v after the send started: more than %v late", d.key, level, due, took, delayMargin)
		}
		if d.topic != e.topic {
			t.Errorf("%s delivered on topic %s, want %s", d.key, d.topic, e.topic)
		}
		t.Logf("%s: level %d arrived after %v", d.key, level, took)
	}
}
