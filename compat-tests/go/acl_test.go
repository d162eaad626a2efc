package gocompat

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
)

// TestACLCredentials: against a second ferrocket with aclEnable=true, a producer and a push
// consumer with WithCredentials (the Go client's own signature) send and receive; an unsigned
// producer and one with a wrong secret are refused with the broker's AclException remark, and
// nothing they sent is delivered.
func TestACLCredentials(t *testing.T) {
	e := begin(t)
	dir := t.TempDir()
	home := filepath.Join(dir, "home")
	if err := os.MkdirAll(filepath.Join(home, "conf"), 0o755); err != nil {
		t.Fatal(err)
	}
	acl := fmt.Sprintf("accounts:\n  - accessKey: GoUser01\n    secretKey: GoSecret01\n    defaultTopicPerm: DENY\n"+
		"    defaultGroupPerm: SUB\n    topicPerms:\n      - %s=PUB|SUB\n      - TBW102=PUB\n", e.topic)
	if err := os.WriteFile(filepath.Join(home, "conf", "plain_acl.yml"), []byte(acl), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := startFerrocket(os.Getenv("FERROCKET_BIN"), dir, [2]string{"aclEnable", "true"}, [2]string{"rocketmqHome", home})
	if err != nil {
		t.Fatalf("ACL ferrocket did not start: %v", err)
	}
	t.Cleanup(func() {
		if err := f.stop(); err != nil {
			t.Errorf("ACL ferrocket: %v", err)
		}
		if errs, err := f.errorLines(); err != nil || len(errs) > 0 {
			t.Errorf("ERROR lines in %s: %v %v", f.log, errs, err)
		}
	})
	resolver := primitive.NewPassthroughResolver([]string{f.namesrvAddr()})
	creds := primitive.Credentials{AccessKey: "GoUser01", SecretKey: "GoSecret01"}

	signed := e.newProducer(producer.WithNsResolver(resolver), producer.WithCredentials(creds))
	msgs, want := newMessages(e.topic, "acl", 6, nil)
	for _, m := range msgs {
		ctx, cancel := context.WithTimeout(context.Background(), sendTimeout)
		res, err := signed.SendSync(ctx, m)
		cancel()
		if err != nil || res.Status != primitive.SendOK {
			t.Fatalf("signed send: %v %v", res, err)
		}
	}
	refused := func(label string, p producerClient, why string) {
		ctx, cancel := context.WithTimeout(context.Background(), sendTimeout)
		defer cancel()
		_, err := p.SendSync(ctx, primitive.NewMessage(e.topic, []byte("refused "+label)))
		if err == nil || !strings.Contains(err.Error(), why) {
			t.Fatalf("%s send: want an error saying %q, got %v", label, why, err)
		}
	}
	refused("unsigned", e.newProducer(producer.WithNsResolver(resolver)), "No accessKey is configured")
	wrong := primitive.Credentials{AccessKey: "GoUser01", SecretKey: "wrongSecret"}
	refused("wrong secret", e.newProducer(producer.WithNsResolver(resolver), producer.WithCredentials(wrong)),
		"Check signature failed for accessKey=GoUser01")

	logged, err := os.ReadFile(f.log)
	if err != nil || strings.Count(string(logged), "request refused by ACL") < 2 {
		t.Errorf("the ACL broker should log each refusal as a warn line (%v):\n%s", err, f.logTail(0, 20))
	}

	rec := &recorder{}
	e.startPushConsumer(rec, consumer.MessageSelector{Type: consumer.TAG, Expression: "*"},
		consumer.WithNsResolver(resolver), consumer.WithCredentials(creds))
	rec.awaitAll(t, want, consumeTimeout)
	assertExactlyOnce(t, want, rec.snapshot())
}
