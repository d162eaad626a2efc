package gocompat

// The official 5.x Go SDK (github.com/apache/rocketmq-clients/golang/v5, gRPC) on the shared
// broker's gRPC listener, with no proxy: a producer on plaintext and on TLS (one port; the SDK
// trusts any certificate, so the broker's self-signed one serves), and a FIFO producer. What they
// sent is read back through the broker's query by key (`ferrocket admin query-msg-by-key`). A
// SimpleConsumer receives and acks, and gets an unacked message again as delivery attempt 2.

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	rmq "github.com/apache/rocketmq-clients/golang/v5"
	"github.com/apache/rocketmq-clients/golang/v5/credentials"
	v2 "github.com/apache/rocketmq-clients/golang/v5/protocol/v2"
)

// rmq.EnableSsl is the SDK's one switch for every client it dials: the tests that set it run one
// at a time.
var sslSwitch sync.Mutex

func init() {
	// The SDK logs under $HOME/logs unless told: beside the v2 client's log, warnings and errors.
	os.Setenv("rocketmq.client.logRoot", os.TempDir())
	os.Setenv("rocketmq.client.logLevel", "warn")
	rmq.ResetLogger()
}

// ferrocketAdmin runs `ferrocket admin` against the shared NameServer.
func ferrocketAdmin(t *testing.T, args ...string) string {
	t.Helper()
	return adminOn(t, server.namesrvAddr(), args...)
}

// adminOn runs `ferrocket admin` against the NameServer at namesrv.
func adminOn(t *testing.T, namesrv string, args ...string) string {
	t.Helper()
	out, err := exec.Command(os.Getenv("FERROCKET_BIN"), append([]string{"admin", "-n", namesrv}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("ferrocket admin %v: %v\n%s", args, err, out)
	}
	return string(out)
}

var (
	storedQueue = regexp.MustCompile(`queue: (\d+)`)
	storedBody  = regexp.MustCompile(`body: (\d+) bytes`)
)

// stored is the queue id and body length of the one message stored under key, waiting for the
// broker's index (built after the send is answered) to have it.
func stored(t *testing.T, topic, key string) (queue, size int) {
	t.Helper()
	var out string
	var q, b []string
	waitUntil(t, routeTimeout, func() string { return "a message stored under " + key + "; last answer:\n" + out }, func() bool {
		out = ferrocketAdmin(t, "query-msg-by-key", "-t", topic, "-k", key)
		q, b = storedQueue.FindStringSubmatch(out), storedBody.FindStringSubmatch(out)
		return strings.Contains(out, "keys: "+key+"  tags: go5") && q != nil && b != nil
	})
	queue, _ = strconv.Atoi(q[1])
	size, _ = strconv.Atoi(b[1])
	return
}

// useSsl sets rmq.EnableSsl for every client the test makes, holding sslSwitch until it ends:
// call it once per test, before its first client.
func useSsl(t *testing.T, tls bool) {
	sslSwitch.Lock()
	t.Cleanup(sslSwitch.Unlock)
	rmq.EnableSsl = tls
}

// grpcConfig is a client config for the gRPC endpoint; creds nil means unsigned.
func grpcConfig(endpoint, group string, creds *credentials.SessionCredentials) *rmq.Config {
	if creds == nil {
		creds = &credentials.SessionCredentials{}
	}
	return &rmq.Config{Endpoint: endpoint, ConsumerGroup: group, Credentials: creds}
}

func grpcProducer(t *testing.T, topic string, tls bool) rmq.Producer {
	t.Helper()
	useSsl(t, tls)
	return startGrpcProducer(t, grpcConfig("127.0.0.1:"+strconv.Itoa(grpcPort), "", nil), topic)
}

// startGrpcProducer starts a producer of topic (useSsl first); stopped when the test ends.
func startGrpcProducer(t *testing.T, cfg *rmq.Config, topic string) rmq.Producer {
	t.Helper()
	p, err := rmq.NewProducer(cfg, rmq.WithTopics(topic))
	if err != nil {
		t.Fatalf("NewProducer: %v", err)
	}
	if err := p.Start(); err != nil {
		t.Fatalf("Start (tls %v): %v", rmq.EnableSsl, err)
	}
	t.Cleanup(func() { _ = p.GracefulStop() })
	return p
}

// startSimpleConsumer starts a SimpleConsumer of cfg's group on every tag of topic, waiting up to
// 3 s per receive; stopped when the test ends.
func startSimpleConsumer(t *testing.T, cfg *rmq.Config, topic string) rmq.SimpleConsumer {
	t.Helper()
	c, err := rmq.NewSimpleConsumer(cfg, rmq.WithSimpleAwaitDuration(3*time.Second),
		rmq.WithSimpleSubscriptionExpressions(map[string]*rmq.FilterExpression{topic: rmq.SUB_ALL}))
	if err != nil {
		t.Fatalf("NewSimpleConsumer: %v", err)
	}
	if err := c.Start(); err != nil {
		t.Fatalf("SimpleConsumer Start: %v", err)
	}
	t.Cleanup(func() { _ = c.GracefulStop() })
	return c
}

// startGrpcBroker starts a ferrocket of the test's own in dir with a gRPC port (long polls of
// 1..3 s) and extra; at the end it is stopped and its log must have no ERROR line.
func startGrpcBroker(t *testing.T, dir string, extra ...[2]string) *ferrocket {
	t.Helper()
	all := append([][2]string{{"grpcListenPort", strconv.Itoa(pickPort(portFree))},
		{"grpcClientConsumerMinLongPollingTimeoutMillis", "1000"},
		{"grpcClientConsumerMaxLongPollingTimeoutMillis", "3000"}}, extra...)
	f, err := startFerrocket(os.Getenv("FERROCKET_BIN"), dir, all...)
	if err != nil {
		t.Fatalf("ferrocket did not start: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the test's own ferrocket:\n%s", f.logTail(0, 60))
		}
		if err := f.stop(); err != nil {
			t.Errorf("the test's own ferrocket: %v", err)
		}
		if errs, err := f.errorLines(); err != nil || len(errs) > 0 {
			t.Errorf("ERROR lines in %s: %v %v", f.log, errs, err)
		}
	})
	return f
}

func (f *ferrocket) grpcEndpoint() string { return "127.0.0.1:" + strconv.Itoa(f.grpcPort) }

func goMessage(topic, key, body string) *rmq.Message {
	m := &rmq.Message{Topic: topic, Body: []byte(body)}
	m.SetTag("go5")
	m.SetKeys(key)
	return m
}

func TestGrpcProducer(t *testing.T) {
	for _, tls := range []bool{false, true} {
		name := map[bool]string{false: "plaintext", true: "tls"}[tls]
		t.Run(name, func(t *testing.T) {
			e := begin(t)
			e.topic = strings.ReplaceAll(e.topic, "/", "_") // GoCompat_GrpcProducer_tls_<run>
			e.createTopic(4)
			p := grpcProducer(t, e.topic, tls)
			ids := map[string]bool{}
			var keys []string
			for i := 0; i < 5; i++ {
				key := fmt.Sprintf("k-%s-%d-%v", runID, i, tls)
				r, err := p.Send(context.Background(), goMessage(e.topic, key, "body "+key))
				if err != nil || len(r) != 1 {
					t.Fatalf("Send: %v %v", r, err)
				}
				ids[r[0].MessageID] = true
				keys = append(keys, key)
			}
			if len(ids) != 5 {
				t.Fatalf("message ids %v", ids)
			}
			for _, k := range keys {
				if _, size := stored(t, e.topic, k); size != len("body "+k) {
					t.Fatalf("%s stored with %d body bytes", k, size)
				}
			}
		})
	}
}

func TestGrpcFifoProducer(t *testing.T) {
	e := begin(t)
	e.createTopic(4)
	ferrocketAdmin(t, "update-topic", "-t", e.topic, "-c", "GoCompatCluster", "-r", "4", "-w", "4", "-a", "+message.type=FIFO")
	p := grpcProducer(t, e.topic, false)
	sent := map[string][]string{}
	for i := 0; i < 4; i++ {
		for _, g := range []string{"order-1", "order-2", "order-3"} {
			key := fmt.Sprintf("%s-%d-%s", g, i, runID)
			m := goMessage(e.topic, key, fmt.Sprintf("%s step %d", g, i))
			m.SetMessageGroup(g)
			if _, err := p.Send(context.Background(), m); err != nil {
				t.Fatalf("Send %s: %v", key, err)
			}
			sent[g] = append(sent[g], key)
		}
	}
	for g, keys := range sent {
		queues := map[int]bool{}
		for _, k := range keys {
			q, _ := stored(t, e.topic, k)
			queues[q] = true
		}
		if len(queues) != 1 {
			t.Fatalf("message group %s spread over queues %v", g, queues)
		}
	}
}

// receiveBodies receives until every body of want came (acking each when ack); the messages.
// MESSAGE_NOT_FOUND (a long poll that found nothing) is an empty answer, not an error.
func receiveBodies(t *testing.T, c rmq.SimpleConsumer, want []string, invisible time.Duration, ack bool) []*rmq.MessageView {
	t.Helper()
	var got []*rmq.MessageView
	seen := map[string]bool{}
	missing := func() []string {
		var out []string
		for _, w := range want {
			if !seen[w] {
				out = append(out, w)
			}
		}
		return out
	}
	deadline := time.Now().Add(60 * time.Second)
	for len(missing()) > 0 && time.Now().Before(deadline) {
		ms, err := c.Receive(context.Background(), 16, invisible)
		if rpc, ok := rmq.AsErrRpcStatus(err); ok && rpc.GetCode() == int32(v2.Code_MESSAGE_NOT_FOUND) {
			continue
		} else if err != nil {
			t.Fatalf("Receive: %v", err)
		}
		for _, m := range ms {
			got = append(got, m)
			seen[string(m.GetBody())] = true
			if ack {
				if err := c.Ack(context.Background(), m); err != nil {
					t.Fatalf("Ack: %v", err)
				}
			}
		}
	}
	if m := missing(); len(m) > 0 {
		t.Fatalf("never received %v (got %d messages)", m, len(got))
	}
	return got
}

func TestGrpcSimpleConsumer(t *testing.T) {
	for _, tls := range []bool{false, true} {
		name := map[bool]string{false: "plaintext", true: "tls"}[tls]
		t.Run(name, func(t *testing.T) {
			e := begin(t)
			e.topic = strings.ReplaceAll(e.topic, "/", "_")
			e.group = "GID_" + e.topic
			e.createTopic(4)
			p := grpcProducer(t, e.topic, tls)
			var bodies []string
			for i := 0; i < 5; i++ {
				b := fmt.Sprintf("m-%d-%s-%v", i, runID, tls)
				if _, err := p.Send(context.Background(), goMessage(e.topic, b, b)); err != nil {
					t.Fatalf("Send: %v", err)
				}
				bodies = append(bodies, b)
			}
			c, err := rmq.NewSimpleConsumer(&rmq.Config{Endpoint: "127.0.0.1:" + strconv.Itoa(grpcPort), ConsumerGroup: e.group,
				Credentials: &credentials.SessionCredentials{}},
				rmq.WithSimpleAwaitDuration(5*time.Second),
				rmq.WithSimpleSubscriptionExpressions(map[string]*rmq.FilterExpression{e.topic: rmq.SUB_ALL}))
			if err != nil {
				t.Fatalf("NewSimpleConsumer: %v", err)
			}
			if err := c.Start(); err != nil {
				t.Fatalf("Start: %v", err)
			}
			defer func() { _ = c.GracefulStop() }()
			got := receiveBodies(t, c, bodies, 30*time.Second, true)
			if len(got) != 5 {
				t.Fatalf("each message once: got %d", len(got))
			}
			for _, m := range got {
				if m.GetDeliveryAttempt() != 1 {
					t.Fatalf("delivery attempt %d", m.GetDeliveryAttempt())
				}
			}
			again := "again-" + name + "-" + runID
			if _, err := p.Send(context.Background(), goMessage(e.topic, again, again)); err != nil {
				t.Fatalf("Send: %v", err)
			}
			first := receiveBodies(t, c, []string{again}, 10*time.Second, false)[0]
			back := receiveBodies(t, c, []string{again}, 30*time.Second, true)[0]
			if first.GetDeliveryAttempt() != 1 || back.GetDeliveryAttempt() != 2 || first.GetMessageId() != back.GetMessageId() {
				t.Fatalf("attempts %d then %d, ids %s %s", first.GetDeliveryAttempt(), back.GetDeliveryAttempt(),
					first.GetMessageId(), back.GetMessageId())
			}
		})
	}
}
