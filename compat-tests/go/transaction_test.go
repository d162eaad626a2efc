package gocompat

import (
	"context"
	"sync"
	"testing"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
)

// txListener answers from each message's "outcome" property: commit and rollback at once,
// check-commit and check-rollback only when the broker checks; it counts the checks per key.
type txListener struct {
	mu     sync.Mutex
	checks map[string]int
}

func (l *txListener) ExecuteLocalTransaction(m *primitive.Message) primitive.LocalTransactionState {
	switch m.GetProperty("outcome") {
	case "commit":
		return primitive.CommitMessageState
	case "rollback":
		return primitive.RollbackMessageState
	}
	return primitive.UnkonwnState
}

func (l *txListener) CheckLocalTransaction(m *primitive.MessageExt) primitive.LocalTransactionState {
	l.mu.Lock()
	l.checks[m.GetKeys()]++
	l.mu.Unlock()
	if m.GetProperty("outcome") == "check-rollback" {
		return primitive.RollbackMessageState
	}
	return primitive.CommitMessageState
}

func (l *txListener) checked(key string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.checks[key]
}

// TestTransactionProducer: the Go client's transaction producer sends four kinds of transactions
// (committed and rolled back at once, committed and rolled back when the broker checks, which
// the suite's broker does every second); a push consumer receives exactly the committed ones,
// each once, and transactions the producer ended are never checked.
func TestTransactionProducer(t *testing.T) {
	e := begin(t)
	e.createTopic(queueCount)
	l := &txListener{checks: map[string]int{}}
	p, err := producer.NewTransactionProducer(l,
		producer.WithNsResolver(primitive.NewPassthroughResolver([]string{server.namesrvAddr()})),
		producer.WithGroupName("PID_TX_"+e.topic),
		producer.WithInstanceName(instanceName("tx-producer")),
		producer.WithSendMsgTimeout(sendTimeout),
		producer.WithRetry(0),
	)
	if err != nil {
		t.Fatalf("NewTransactionProducer: %v", err)
	}
	if err := p.Start(); err != nil {
		t.Fatalf("transaction producer Start: %v", err)
	}
	t.Cleanup(func() { _ = p.Shutdown() })

	send := func(outcome, key string) {
		t.Helper()
		m := primitive.NewMessage(e.topic, []byte("tx "+key+" of run "+runID))
		m.WithKeys([]string{key})
		m.WithProperty("outcome", outcome)
		ctx, cancel := context.WithTimeout(context.Background(), sendTimeout)
		defer cancel()
		r, err := p.SendMessageInTransaction(ctx, m)
		if err != nil || r.Status != primitive.SendOK {
			t.Fatalf("SendMessageInTransaction %s: %v %v", key, r, err)
		}
	}
	var want []sent
	for _, outcome := range []string{"commit", "rollback", "check-commit", "check-rollback"} {
		for i := 0; i < 3; i++ {
			key := outcome + "-" + string(rune('0'+i))
			send(outcome, key)
			if outcome == "commit" || outcome == "check-commit" {
				want = append(want, sent{key: key, body: "tx " + key + " of run " + runID})
			}
		}
	}
	rec := &recorder{}
	e.startPushConsumer(rec, consumer.MessageSelector{Type: consumer.TAG, Expression: "*"})
	rec.awaitAll(t, want, consumeTimeout)
	// A last unknown transaction: once it has been checked, every older half message was passed
	// by a check round, so the rolled back ones were finished, not pending.
	send("check-rollback", "sentinel")
	waitUntil(t, consumeTimeout, func() string { return "waiting for the check of the sentinel" },
		func() bool { return l.checked("sentinel") > 0 })
	assertExactlyOnce(t, want, rec.snapshot())
	for _, outcome := range []string{"commit", "rollback"} {
		for i := 0; i < 3; i++ {
			if n := l.checked(outcome + "-" + string(rune('0'+i))); n > 0 {
				t.Errorf("%s-%d was ended by its producer but checked %d times", outcome, i, n)
			}
		}
	}
}
