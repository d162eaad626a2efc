// Package sasl runs franz-go's own SASL mechanisms (pkg/sasl/plain, pkg/sasl/scram) against a
// ferrocket broker with aclEnable=true, started by ../run.sh (KGO_SASL_SEEDS; skipped without it):
// for PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512 on SASL_PLAINTEXT and, once the Kafka port speaks TLS
// (tls.server.mode=permissive), SASL_SSL, a good account produces and consumes in its group, a
// wrong password fails with SASL_AUTHENTICATION_FAILED, an account without permission on the topic
// gets TOPIC_AUTHORIZATION_FAILED. The accounts are the ones run.sh writes to plain_acl.yml.
package sasl

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

const (
	topic       = "franz-sasl"
	group       = "franz-sasl-g"
	user        = "franzUser01"
	secret      = "franzSecret01"
	other       = "franzOther01"
	otherSecret = "otherSecret01"
	admin       = "franzAdmin01"
	adminSecret = "adminSecret01"
)

// createTopic creates the topic with the admin account (a non-admin may not).
func createTopic(t *testing.T, seed string) {
	c := client(t, seed, false, mechanism("SCRAM-SHA-512", admin, adminSecret))
	defer c.Close()
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, 1, 1
	req.Topics = append(req.Topics, rt)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, c)
	if err != nil {
		t.Fatalf("create topic: %v", err)
	}
	if err := kerr.ErrorForCode(resp.Topics[0].ErrorCode); err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		t.Fatalf("create topic: %v", err)
	}
}

func mechanism(name, u, p string) sasl.Mechanism {
	switch name {
	case "PLAIN":
		return plain.Auth{User: u, Pass: p}.AsMechanism()
	case "SCRAM-SHA-256":
		return scram.Auth{User: u, Pass: p}.AsSha256Mechanism()
	default:
		return scram.Auth{User: u, Pass: p}.AsSha512Mechanism()
	}
}

func speaksTLS(seed string) bool {
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", seed, &tls.Config{InsecureSkipVerify: true})
	if err != nil {
		return false
	}
	conn.Close()
	return true
}

func client(t *testing.T, seed string, useTLS bool, mech sasl.Mechanism, extra ...kgo.Opt) *kgo.Client {
	opts := []kgo.Opt{kgo.SeedBrokers(seed), kgo.SASL(mech), kgo.RequestRetries(2), kgo.RecordDeliveryTimeout(20 * time.Second)}
	if useTLS {
		opts = append(opts, kgo.DialTLSConfig(&tls.Config{InsecureSkipVerify: true}))
	}
	c, err := kgo.NewClient(append(opts, extra...)...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestSasl(t *testing.T) {
	seed := os.Getenv("KGO_SASL_SEEDS")
	if seed == "" {
		t.Skip("KGO_SASL_SEEDS is not set: run through compat-tests/franz-go/run.sh")
	}
	createTopic(t, seed)
	for _, useTLS := range []bool{false, true} {
		for _, mech := range []string{"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"} {
			proto := map[bool]string{false: "SASL_PLAINTEXT", true: "SASL_SSL"}[useTLS]
			t.Run(proto+"/"+mech, func(t *testing.T) {
				if useTLS && !speaksTLS(seed) {
					t.Skip("the broker's Kafka port does not speak TLS yet (tls.server.mode=permissive): SASL_SSL skipped")
				}
				ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
				defer cancel()
				value := fmt.Sprintf("%s-%s-%d", proto, mech, time.Now().UnixNano())
				p := client(t, seed, useTLS, mechanism(mech, user, secret))
				if err := p.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(value)}).FirstErr(); err != nil {
					t.Fatalf("good account produce: %v", err)
				}
				p.Close()

				c := client(t, seed, useTLS, mechanism(mech, user, secret), kgo.ConsumerGroup(group),
					kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit())
				seen := false
				for !seen && ctx.Err() == nil {
					fs := c.PollFetches(ctx)
					for _, e := range fs.Errors() {
						if !errors.Is(e.Err, context.DeadlineExceeded) {
							t.Fatalf("consume: %v", e.Err)
						}
					}
					fs.EachRecord(func(r *kgo.Record) { seen = seen || string(r.Value) == value })
				}
				if err := c.CommitUncommittedOffsets(ctx); err != nil {
					t.Fatalf("commit: %v", err)
				}
				c.Close()
				if !seen {
					t.Fatal("the consumer did not read what the producer wrote")
				}

				bad := client(t, seed, useTLS, mechanism(mech, user, "wrongPassword"))
				err := bad.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("x")}).FirstErr()
				bad.Close()
				if !errors.Is(err, kerr.SaslAuthenticationFailed) {
					t.Fatalf("a wrong password: want SASL_AUTHENTICATION_FAILED, got %v", err)
				}

				o := client(t, seed, useTLS, mechanism(mech, other, otherSecret))
				err = o.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("x")}).FirstErr()
				o.Close()
				if !errors.Is(err, kerr.TopicAuthorizationFailed) {
					t.Fatalf("no permission: want TOPIC_AUTHORIZATION_FAILED, got %v", err)
				}
				t.Logf("%s %s: good account ok, wrong password and missing permission reported", proto, mech)
			})
		}
	}
}
