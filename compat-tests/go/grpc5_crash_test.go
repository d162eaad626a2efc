package gocompat

// kill -9 in the middle of a 5.x SimpleConsumer's work (the Go SDK over gRPC), on a ferrocket of
// the test's own: after a restart on the same store and ports nothing acked comes back, the
// messages received but not acked come back as delivery attempt 2 once their invisible time is
// up, and the ones never received arrive as attempt 1. The broker runs the suite's ASYNC_FLUSH as
// compat-tests/grpc5's Grpc5CrashTest does: a killed process leaves what it wrote in the page cache.

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	rmq "github.com/apache/rocketmq-clients/golang/v5"
	v2 "github.com/apache/rocketmq-clients/golang/v5/protocol/v2"
)

const (
	crashSent  = 40
	crashAcked = 20
	crashHeld  = 5
	// crashInvisible is the broker's minimum invisible time: held messages come back after it.
	crashInvisible = 10 * time.Second
)

// receiveOnce is one Receive of up to 8 messages; a long poll that found nothing is no message.
// While the broker restarts the SDK's calls fail: tolerate says to count those as no message.
func receiveOnce(t *testing.T, c rmq.SimpleConsumer, tolerate bool) []*rmq.MessageView {
	t.Helper()
	ms, err := c.Receive(context.Background(), 8, crashInvisible)
	if rpc, ok := rmq.AsErrRpcStatus(err); ok && rpc.GetCode() == int32(v2.Code_MESSAGE_NOT_FOUND) {
		return nil
	} else if err != nil && tolerate {
		t.Logf("receive while the broker restarts: %v", err)
		return nil
	} else if err != nil {
		t.Fatalf("Receive: %v", err)
	}
	return ms
}

func TestGrpcCrash(t *testing.T) {
	e := begin(t)
	f := startGrpcBroker(t, t.TempDir())
	adminOn(t, f.namesrvAddr(), "update-topic", "-t", e.topic, "-c", "GoCompatCluster", "-r", "2", "-w", "2")
	useSsl(t, false)
	cfg := grpcConfig(f.grpcEndpoint(), e.group, nil)
	p := startGrpcProducer(t, cfg, e.topic)
	var bodies []string
	for i := 0; i < crashSent; i++ {
		b := fmt.Sprintf("crash-%02d-%s", i, runID)
		if _, err := p.Send(context.Background(), goMessage(e.topic, b, b)); err != nil {
			t.Fatalf("Send %s: %v", b, err)
		}
		bodies = append(bodies, b)
	}

	c := startSimpleConsumer(t, cfg, e.topic)
	acked, held := map[string]bool{}, map[string]bool{}
	deadline := time.Now().Add(30 * time.Second)
	for len(acked) < crashAcked || len(held) < crashHeld {
		if time.Now().After(deadline) {
			t.Fatalf("before the kill: acked %d, held %d", len(acked), len(held))
		}
		for _, m := range receiveOnce(t, c, false) {
			b := string(m.GetBody())
			if acked[b] || held[b] || m.GetDeliveryAttempt() != 1 {
				t.Fatalf("before the kill %s came again (attempt %d)", b, m.GetDeliveryAttempt())
			}
			if len(acked) < crashAcked {
				if err := c.Ack(context.Background(), m); err != nil {
					t.Fatalf("Ack %s: %v", b, err)
				}
				acked[b] = true
			} else {
				held[b] = true // received, never acked: invisible for crashInvisible
			}
		}
	}

	if err := f.killAndRestart(); err != nil {
		t.Fatalf("kill -9 and restart: %v", err)
	}

	// Everything not acked, once each: the never-received at once, the held ones after their time.
	left := map[string]bool{}
	for _, b := range bodies {
		if !acked[b] {
			left[b] = true
		}
	}
	got := map[string]int32{}
	deadline = time.Now().Add(60 * time.Second)
	for len(got) < len(left) {
		if time.Now().After(deadline) {
			var missing []string
			for b := range left {
				if _, ok := got[b]; !ok {
					missing = append(missing, b)
				}
			}
			sort.Strings(missing)
			t.Fatalf("after the restart: %d of %d received, missing %s", len(got), len(left), abbreviate(missing))
		}
		for _, m := range receiveOnce(t, c, true) {
			b := string(m.GetBody())
			if acked[b] {
				t.Fatalf("%s was acked before the kill and came back (attempt %d)", b, m.GetDeliveryAttempt())
			}
			if _, dup := got[b]; dup {
				t.Fatalf("%s came twice after the restart (attempts %d, %d)", b, got[b], m.GetDeliveryAttempt())
			}
			got[b] = m.GetDeliveryAttempt()
			if err := c.Ack(context.Background(), m); err != nil {
				t.Fatalf("Ack %s after the restart: %v", b, err)
			}
		}
	}
	t.Logf("acked %d and held %d before the kill; %d received after the restart", len(acked), len(held), len(got))
	for b, attempt := range got {
		if want := map[bool]int32{true: 2, false: 1}[held[b]]; attempt != want {
			t.Errorf("%s (held before the kill: %v) came back as attempt %d, want %d", b, held[b], attempt, want)
		}
	}
}
