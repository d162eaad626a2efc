package gocompat

import (
	"context"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
)

// TestTimerMessage: the Go client's timer messages (WithDelayTimestamp, i.e. TIMER_DELIVER_MS, and
// the TIMER_DELAY_SEC / TIMER_DELAY_MS properties) reach a push consumer exactly once, on their
// topic, never before their time and at most delayMargin after it; a message without a timer
// arrives at once.
func TestTimerMessage(t *testing.T) {
	e := begin(t)
	e.createTopic(queueCount)
	p := e.newProducer()
	rec := &recorder{}
	e.startPushConsumer(rec, consumer.MessageSelector{})

	type timed struct {
		s   sent
		due time.Time
	}
	var all []timed
	send := func(key string, set func(m *primitive.Message, now time.Time) time.Time) {
		s := sent{key: key, body: key + " of run " + runID, tags: "Timer"}
		m := primitive.NewMessage(e.topic, []byte(s.body))
		m.WithKeys([]string{s.key})
		m.WithTag(s.tags)
		now := time.Now()
		due := set(m, now)
		ctx, cancel := context.WithTimeout(context.Background(), sendTimeout)
		res, err := p.SendSync(ctx, m)
		cancel()
		if err != nil || res.Status != primitive.SendOK {
			t.Fatalf("SendSync %s: %v %v", key, res, err)
		}
		all = append(all, timed{s, due})
	}
	send("timer-at", func(m *primitive.Message, now time.Time) time.Time {
		at := now.Add(3 * time.Second)
		m.WithDelayTimestamp(at)
		return at.Truncate(time.Millisecond)
	})
	send("timer-sec", func(m *primitive.Message, now time.Time) time.Time {
		m.WithProperty("TIMER_DELAY_SEC", "2")
		return now.Truncate(time.Millisecond).Add(2 * time.Second)
	})
	send("timer-ms", func(m *primitive.Message, now time.Time) time.Time {
		m.WithProperty("TIMER_DELAY_MS", "1500")
		return now.Truncate(time.Millisecond).Add(1500 * time.Millisecond)
	})
	send("timer-none", func(m *primitive.Message, now time.Time) time.Time { return now.Truncate(time.Millisecond) })

	var want []sent
	for _, x := range all {
		want = append(want, x.s)
	}
	rec.awaitAll(t, want, 3*time.Second+delayMargin+consumeTimeout)
	got := rec.snapshot()
	assertExactlyOnce(t, want, got)
	for _, d := range got {
		for _, x := range all {
			if x.s.key != d.key {
				continue
			}
			if d.at.Before(x.due) {
				t.Errorf("%s arrived %v before it was due", d.key, x.due.Sub(d.at))
			}
			if d.at.After(x.due.Add(delayMargin)) {
				t.Errorf("%s arrived %v after it was due: more than %v late", d.key, d.at.Sub(x.due), delayMargin)
			}
			if d.topic != e.topic {
				t.Errorf("%s delivered on topic %s, want %s", d.key, d.topic, e.topic)
			}
			t.Logf("%s: arrived %v after it was due", d.key, d.at.Sub(x.due).Round(time.Millisecond))
		}
	}
}
