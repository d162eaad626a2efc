package gocompat

import (
	"testing"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/producer"
)

// TestTLSClients: a producer and a push consumer with WithTls(true) (the Go client skips
// certificate checks) send and receive through the suite's NameServer and broker, which run with
// the default tls.server.mode=permissive and no certificate configured: they serve TLS with a
// self-signed certificate on the same ports as plaintext, as the Java broker's test mode does,
// while every other test in this suite talks plaintext to them.
func TestTLSClients(t *testing.T) {
	e := begin(t)
	// WithTls sets a field of the Go client's process-wide default remoting config (every option
	// set points at remote.DefaultRemotingClientConfig): put it back for the tests that follow.
	t.Cleanup(func() { _, _ = producer.NewDefaultProducer(producer.WithTls(false)) })
	queues := e.createTopic(queueCount)
	p := e.newProducer(producer.WithQueueSelector(producer.NewManualQueueSelector()), producer.WithTls(true))
	msgs, want := newMessages(e.topic, "tls", 12, nil)
	sendToQueues(t, p, queues, msgs, want)

	rec := &recorder{}
	e.startPushConsumer(rec, consumer.MessageSelector{Type: consumer.TAG, Expression: "*"}, consumer.WithTls(true))
	rec.awaitAll(t, want, consumeTimeout)
	assertExactlyOnce(t, want, rec.snapshot())
}
