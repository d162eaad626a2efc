package gocompat

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/admin"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
)

const (
	routeTimeout   = 15 * time.Second
	consumeTimeout = 30 * time.Second
	sendTimeout    = 10 * time.Second
)

// runID makes topic, group and instance names unique per run (the Go client keeps broadcasting
// offsets under $HOME, across runs).
var (
	runID     = fmt.Sprintf("%x", time.Now().UnixNano()&0xffffffffff)
	instances int64
)

// testEnv holds a test's unique names: topic GoCompat_<test>_<run>, consumer group GID_<topic>,
// producer group PID_<topic>. begin registers a cleanup that prints what ferrocket logged during
// the test if it failed.
type testEnv struct {
	t     *testing.T
	topic string
	group string
}

func begin(t *testing.T) *testEnv {
	t.Helper()
	if err := server.running(); err != nil {
		t.Fatalf("%v\n%s", err, server.logTail(0, 60))
	}
	from := server.logSize()
	start := time.Now()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("ferrocket log during %s (%v):\n%s\nGo client log: %s", t.Name(), time.Since(start).Round(time.Millisecond),
				server.logTail(from, 60), clientLog)
		}
	})
	topic := "GoCompat_" + strings.TrimPrefix(t.Name(), "Test") + "_" + runID
	return &testEnv{t: t, topic: topic, group: "GID_" + topic}
}

// instanceName gives every client its own client id, hence its own connections and offsets, as
// separate processes would have.
func instanceName(label string) string {
	return fmt.Sprintf("%s-%s-%d", label, runID, atomic.AddInt64(&instances, 1))
}

// createTopic creates the topic on the broker with the Go admin API and waits until the NameServer
// routes it with all its queues; returns those queues (what producers write to).
func (e *testEnv) createTopic(queues int) []*primitive.MessageQueue {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), sendTimeout)
	defer cancel()
	err := adm.CreateTopic(ctx,
		admin.WithTopicCreate(e.topic),
		admin.WithBrokerAddrCreate(server.brokerAddr()),
		admin.WithReadQueueNums(queues),
		admin.WithWriteQueueNums(queues))
	if err != nil {
		e.t.Fatalf("CreateTopic %s: %v", e.topic, err)
	}
	var mqs []*primitive.MessageQueue
	var lastErr error
	waitUntil(e.t, routeTimeout, func() string {
		return fmt.Sprintf("the route of %s with %d queues (last: %d queues, %v)", e.topic, queues, len(mqs), lastErr)
	}, func() bool {
		mqs, lastErr = adm.FetchPublishMessageQueues(context.Background(), e.topic)
		return lastErr == nil && len(mqs) == queues
	})
	sort.Slice(mqs, func(i, j int) bool { return mqs[i].QueueId < mqs[j].QueueId })
	return mqs
}

func (e *testEnv) newProducer(opts ...producer.Option) producerClient {
	e.t.Helper()
	all := append([]producer.Option{
		producer.WithNsResolver(primitive.NewPassthroughResolver([]string{server.namesrvAddr()})),
		producer.WithGroupName("PID_" + e.topic),
		producer.WithInstanceName(instanceName("producer")),
		producer.WithSendMsgTimeout(sendTimeout),
		// No retries: a send the broker refuses fails the test instead of being hidden.
		producer.WithRetry(0),
	}, opts...)
	p, err := producer.NewDefaultProducer(all...)
	if err != nil {
		e.t.Fatalf("NewDefaultProducer: %v", err)
	}
	if err := p.Start(); err != nil {
		e.t.Fatalf("producer Start: %v", err)
	}
	e.t.Cleanup(func() { _ = p.Shutdown() })
	return p
}

// producerClient is what the tests use of the default producer.
type producerClient interface {
	SendSync(ctx context.Context, msgs ...*primitive.Message) (*primitive.SendResult, error)
	SendAsync(ctx context.Context, f func(context.Context, *primitive.SendResult, error), msgs ...*primitive.Message) error
	SendOneWay(ctx context.Context, msgs ...*primitive.Message) error
}

// startPushConsumer starts a push consumer of the test's group (its own instance, from the first
// offset; opts may override) subscribed to e.topic with selector; every delivery is recorded.
func (e *testEnv) startPushConsumer(rec *recorder, selector consumer.MessageSelector, opts ...consumer.Option) {
	e.t.Helper()
	all := append([]consumer.Option{
		consumer.WithNsResolver(primitive.NewPassthroughResolver([]string{server.namesrvAddr()})),
		consumer.WithGroupName(e.group),
		consumer.WithInstance(instanceName("consumer")),
		consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset),
	}, opts...)
	c, err := consumer.NewPushConsumer(all...)
	if err != nil {
		e.t.Fatalf("NewPushConsumer: %v", err)
	}
	err = c.Subscribe(e.topic, selector, func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
		rec.add(msgs...)
		return consumer.ConsumeSuccess, nil
	})
	if err != nil {
		e.t.Fatalf("Subscribe: %v", err)
	}
	if err := c.Start(); err != nil {
		e.t.Fatalf("push consumer Start: %v", err)
	}
	e.t.Cleanup(func() { _ = c.Shutdown() })
}

// sent is one message as the test sent it.
type sent struct {
	key, body, tags string
}

// newMessages builds n messages for topic with keys "<prefix>-<i>", distinct bodies and the tag
// tag(i) ("" for none).
func newMessages(topic, prefix string, n int, tag func(i int) string) ([]*primitive.Message, []sent) {
	msgs := make([]*primitive.Message, 0, n)
	want := make([]sent, 0, n)
	for i := 0; i < n; i++ {
		s := sent{
			key:  fmt.Sprintf("%s-%03d", prefix, i),
			body: fmt.Sprintf("%s body %d of run %s", prefix, i, runID),
		}
		if tag != nil {
			s.tags = tag(i)
		}
		m := primitive.NewMessage(topic, []byte(s.body))
		m.WithKeys([]string{s.key})
		if s.tags != "" {
			m.WithTag(s.tags)
		}
		msgs = append(msgs, m)
		want = append(want, s)
	}
	return msgs, want
}

// delivery is one message as a consumer received it.
type delivery struct {
	key, body, tags string
	queueID         int
	queueOffset     int64
	msgID           string
	offsetMsgID     string
	topic           string
	props           map[string]string
	at              time.Time
}

// recorder collects deliveries from client goroutines.
type recorder struct {
	mu  sync.Mutex
	got []delivery
}

func (r *recorder) add(msgs ...*primitive.MessageExt) {
	now := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, m := range msgs {
		d := delivery{
			key:         m.GetKeys(),
			body:        string(m.Body),
			tags:        m.GetTags(),
			queueOffset: m.QueueOffset,
			msgID:       m.MsgId,
			offsetMsgID: m.OffsetMsgId,
			topic:       m.Topic,
			props:       m.GetProperties(),
			at:          now,
		}
		if m.Queue != nil {
			d.queueID = m.Queue.QueueId
		}
		r.got = append(r.got, d)
	}
}

func (r *recorder) snapshot() []delivery {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]delivery(nil), r.got...)
}

// hasAll reports whether every key of want has been delivered at least once.
func (r *recorder) hasAll(want []sent) bool {
	seen := map[string]bool{}
	for _, d := range r.snapshot() {
		seen[d.key] = true
	}
	for _, w := range want {
		if !seen[w.key] {
			return false
		}
	}
	return true
}

// progress describes how far a recorder is, for timeout messages.
func (r *recorder) progress(want []sent) string {
	got := r.snapshot()
	seen := map[string]bool{}
	for _, d := range got {
		seen[d.key] = true
	}
	var missing []string
	for _, w := range want {
		if !seen[w.key] {
			missing = append(missing, w.key)
		}
	}
	return fmt.Sprintf("all %d messages (%d deliveries so far, %d keys missing: %s)",
		len(want), len(got), len(missing), abbreviate(missing))
}

// awaitAll waits until every key of want was delivered.
func (r *recorder) awaitAll(t *testing.T, want []sent, timeout time.Duration) {
	t.Helper()
	waitUntil(t, timeout, func() string { return r.progress(want) }, func() bool { return r.hasAll(want) })
}

// assertExactlyOnce checks that got holds each message of want exactly once, with its body and
// tags, and nothing else; duplicates and strangers are counted and listed.
func assertExactlyOnce(t *testing.T, want []sent, got []delivery) {
	t.Helper()
	byKey := map[string]sent{}
	for _, w := range want {
		byKey[w.key] = w
	}
	count := map[string]int{}
	var strangers, mismatched []string
	for _, d := range got {
		w, ok := byKey[d.key]
		if !ok {
			strangers = append(strangers, fmt.Sprintf("%q (tags %q, body %q)", d.key, d.tags, d.body))
			continue
		}
		count[d.key]++
		if d.body != w.body || d.tags != w.tags {
			mismatched = append(mismatched, fmt.Sprintf("%s: body %q tags %q, want body %q tags %q", d.key, d.body, d.tags, w.body, w.tags))
		}
	}
	var missing, dups []string
	for _, w := range want {
		switch n := count[w.key]; {
		case n == 0:
			missing = append(missing, w.key)
		case n > 1:
			dups = append(dups, fmt.Sprintf("%s×%d", w.key, n))
		}
	}
	if len(missing)+len(dups)+len(strangers)+len(mismatched) > 0 {
		t.Fatalf("sent %d, delivered %d: %d missing %s; %d duplicated %s; %d unexpected %s; %d with wrong body/tags %s",
			len(want), len(got), len(missing), abbreviate(missing), len(dups), abbreviate(dups),
			len(strangers), abbreviate(strangers), len(mismatched), abbreviate(mismatched))
	}
}

func abbreviate(items []string) string {
	const max = 10
	if len(items) <= max {
		return "[" + strings.Join(items, ", ") + "]"
	}
	return "[" + strings.Join(items[:max], ", ") + fmt.Sprintf(", ... %d more]", len(items)-max)
}

// waitUntil polls cond every 20 ms until it holds; fails the test with what() after timeout.
func waitUntil(t *testing.T, timeout time.Duration, what func() string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what())
		}
		if err := server.running(); err != nil {
			t.Fatalf("while waiting for %s: %v", what(), err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// removeLocalOffsets deletes the offset files broadcasting consumers wrote under the Go client's
// local offset directory ($HOME/.rocketmq_client_go unless rocketmq.client.localOffsetStoreDir is
// set). The client documents <dir>/<clientId>/<group>/offset.json but passes the arguments the
// other way round, so both layouts are removed.
func removeLocalOffsets(t *testing.T, group string, instances ...string) {
	root := os.Getenv("rocketmq.client.localOffsetStoreDir")
	if root == "" {
		root = filepath.Join(os.Getenv("HOME"), ".rocketmq_client_go")
	}
	dirs := []string{filepath.Join(root, group)}
	for _, instance := range instances {
		found, _ := filepath.Glob(filepath.Join(root, "*@"+instance))
		dirs = append(dirs, found...)
	}
	for _, d := range dirs {
		if err := os.RemoveAll(d); err != nil {
			t.Logf("cannot remove %s: %v", d, err)
		}
	}
	_ = os.Remove(root) // only if nothing else is left in it
}
