package gocompat

// ACL 1.0 (aclEnable=true, plain_acl.yml under rocketmqHome) on the gRPC port with the Go 5.x
// SDK's Config.Credentials, on a ferrocket of the test's own (as compat-tests/grpc5's
// Grpc5AclTest): a signed producer sends and a signed SimpleConsumer receives and acks; a wrong
// secret and no credentials are refused at the producer's first QueryRoute. The topic is in
// topics.json from the start (`ferrocket admin` does not sign its requests).

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	rmq "github.com/apache/rocketmq-clients/golang/v5"
	"github.com/apache/rocketmq-clients/golang/v5/credentials"
)

func TestGrpcACL(t *testing.T) {
	e := begin(t)
	dir := t.TempDir()
	home := filepath.Join(dir, "home")
	acl := fmt.Sprintf("accounts:\n  - accessKey: GoGrpcUser1\n    secretKey: GoGrpcSecret1\n"+
		"    defaultTopicPerm: DENY\n    defaultGroupPerm: DENY\n"+
		"    topicPerms: ['%s=PUB|SUB']\n    groupPerms: ['%s=SUB']\n", e.topic, e.group)
	topics := fmt.Sprintf(`{"topicConfigTable":{"%s":{"topicName":"%s","readQueueNums":2,"writeQueueNums":2,"perm":6}}}`,
		e.topic, e.topic)
	for path, text := range map[string]string{
		filepath.Join(home, "conf", "plain_acl.yml"):         acl,
		filepath.Join(dir, "store", "config", "topics.json"): topics, // the broker's storePathRootDir
	} {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	f := startGrpcBroker(t, dir, [2]string{"aclEnable", "true"}, [2]string{"rocketmqHome", home})
	useSsl(t, true)
	signed := &credentials.SessionCredentials{AccessKey: "GoGrpcUser1", AccessSecret: "GoGrpcSecret1"}

	c := startSimpleConsumer(t, grpcConfig(f.grpcEndpoint(), e.group, signed), e.topic)
	p := startGrpcProducer(t, grpcConfig(f.grpcEndpoint(), "", signed), e.topic)
	var bodies []string
	for i := 0; i < 3; i++ {
		b := fmt.Sprintf("acl-%d-%s", i, runID)
		if _, err := p.Send(context.Background(), goMessage(e.topic, b, b)); err != nil {
			t.Fatalf("signed Send: %v", err)
		}
		bodies = append(bodies, b)
	}
	if got := receiveBodies(t, c, bodies, crashInvisible, true); len(got) != len(bodies) {
		t.Fatalf("each message once: got %d", len(got))
	}

	// Refused at the producer's first QueryRoute with the broker's AclException text.
	for label, refusal := range map[string]struct {
		creds *credentials.SessionCredentials
		why   string
	}{
		"wrong secret": {&credentials.SessionCredentials{AccessKey: "GoGrpcUser1", AccessSecret: "wrongSecret"},
			"Check signature failed for accessKey=GoGrpcUser1"},
		"unsigned": {nil, "No accessKey is configured"},
	} {
		refused, err := rmq.NewProducer(grpcConfig(f.grpcEndpoint(), "", refusal.creds), rmq.WithTopics(e.topic))
		if err != nil {
			t.Fatalf("NewProducer (%s): %v", label, err)
		}
		err = refused.Start() // stops the producer itself when it fails
		if err == nil {
			_ = refused.GracefulStop()
			t.Fatalf("a producer with %s started", label)
		}
		if !strings.Contains(err.Error(), "UNAUTHORIZED") || !strings.Contains(err.Error(), refusal.why) {
			t.Fatalf("a producer with %s: want UNAUTHORIZED, %q; got %v", label, refusal.why, err)
		}
	}
}
