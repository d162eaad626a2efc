package gocompat

// The Go 5.x SDK's PushConsumer on the shared broker's gRPC port: two FIFO PushConsumers of an
// orderly group (`ferrocket admin update-sub-group -o -r 1`, so max attempts 2) consume three
// message groups of a FIFO topic, each group's successes in order; the one message the listener
// always fails is consumed twice (the SDK retries FIFO messages locally) and then forwarded to
// %DLQ%<group> (ForwardMessageToDeadLetterQueue), where the broker's query by key finds it.

import (
	"context"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"

	rmq "github.com/apache/rocketmq-clients/golang/v5"
)

// fifoLog records what the listeners consumed: per message group the steps that succeeded, in
// consumption order, and how often the doomed message was tried.
type fifoLog struct {
	mu        sync.Mutex
	steps     map[string][]int
	doomed    int
	successes int
	byClient  map[string]int
}

func (l *fifoLog) listener(client, doomed string) rmq.MessageListener {
	return &rmq.FuncMessageListener{Consume: func(m *rmq.MessageView) rmq.ConsumerResult {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.byClient[client]++
		body := string(m.GetBody())
		if body == doomed {
			l.doomed++
			return rmq.FAILURE
		}
		parts := strings.SplitN(body, ":", 3) // group:step:run
		step, _ := strconv.Atoi(parts[1])
		l.steps[parts[0]] = append(l.steps[parts[0]], step)
		l.successes++
		return rmq.SUCCESS
	}}
}

func TestGrpcFifoPushDeadLetter(t *testing.T) {
	e := begin(t)
	e.createTopic(4)
	ferrocketAdmin(t, "update-topic", "-t", e.topic, "-c", "GoCompatCluster", "-r", "4", "-w", "4", "-a", "+message.type=FIFO")
	ferrocketAdmin(t, "update-sub-group", "-g", e.group, "-c", "GoCompatCluster", "-o", "-r", "1")
	useSsl(t, false)
	endpoint := "127.0.0.1:" + strconv.Itoa(grpcPort)
	doomed := "gb:2:" + runID
	rec := &fifoLog{steps: map[string][]int{}, byClient: map[string]int{}}
	// GracefulStop takes the SDK's request timeout + long polling time + 1 s (v5.1.4 leaves a
	// receive answered MESSAGE_NOT_FOUND counted as in flight): both stop at once.
	var consumers []rmq.PushConsumer
	t.Cleanup(func() {
		var wg sync.WaitGroup
		for _, c := range consumers {
			wg.Add(1)
			go func() { defer wg.Done(); _ = c.GracefulStop() }()
		}
		wg.Wait()
	})
	for _, name := range []string{"a", "b"} {
		c, err := rmq.NewPushConsumer(grpcConfig(endpoint, e.group, nil),
			rmq.WithPushSubscriptionExpressions(map[string]*rmq.FilterExpression{e.topic: rmq.SUB_ALL}),
			rmq.WithPushMessageListener(rec.listener(name, doomed)))
		if err != nil {
			t.Fatalf("NewPushConsumer %s: %v", name, err)
		}
		if err := c.Start(); err != nil {
			t.Fatalf("PushConsumer %s Start: %v", name, err)
		}
		consumers = append(consumers, c)
	}

	p := startGrpcProducer(t, grpcConfig(endpoint, "", nil), e.topic)
	for i := 0; i < 5; i++ {
		for _, g := range []string{"ga", "gb", "gc"} {
			body := fmt.Sprintf("%s:%d:%s", g, i, runID)
			m := goMessage(e.topic, body, body)
			m.SetMessageGroup(g)
			if _, err := p.Send(context.Background(), m); err != nil {
				t.Fatalf("Send %s: %v", body, err)
			}
		}
	}

	want := map[string][]int{"ga": {0, 1, 2, 3, 4}, "gb": {0, 1, 3, 4}, "gc": {0, 1, 2, 3, 4}}
	snapshot := func() (map[string][]int, int, int, string) {
		rec.mu.Lock()
		defer rec.mu.Unlock()
		copied := map[string][]int{}
		for g, s := range rec.steps {
			copied[g] = append([]int(nil), s...)
		}
		return copied, rec.successes, rec.doomed, fmt.Sprint(rec.byClient)
	}
	waitUntil(t, consumeTimeout, func() string {
		s, _, d, by := snapshot()
		return fmt.Sprintf("14 successes and the doomed message tried twice (steps %v, doomed tried %d, per consumer %s)", s, d, by)
	}, func() bool {
		_, n, d, _ := snapshot()
		return n >= 14 && d >= 2
	})
	// Forwarded to the DLQ after its second failure: the broker's index finds it there.
	if _, size := stored(t, "%DLQ%"+e.group, doomed); size != len(doomed) {
		t.Fatalf("%s in the DLQ with %d body bytes", doomed, size)
	}
	steps, n, d, by := snapshot()
	if !reflect.DeepEqual(steps, want) || n != 14 || d != 2 {
		t.Fatalf("consumed steps %v (want %v), %d successes, doomed tried %d times (want 2); per consumer %s", steps, want, n, d, by)
	}
	t.Logf("per consumer: %s", by)
}
