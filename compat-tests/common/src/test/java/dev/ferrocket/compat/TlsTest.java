package dev.ferrocket.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.rocketmq.client.consumer.DefaultMQPullConsumer;
import org.apache.rocketmq.client.consumer.PullResult;
import org.apache.rocketmq.client.consumer.PullStatus;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageQueue;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * TLS with the official client ({@code setUseTLS(true)}; its default {@code tls.test.mode.enable}
 * accepts the server's certificate): a broker with {@code tls.server.mode=enforcing} and a
 * certificate made here with openssl ({@code tls.server.certPath}, {@code tls.server.keyPath}) takes
 * sends and serves pulls over TLS, and refuses a plaintext client. The NameServer stays in the
 * default permissive mode, which serves the TLS clients and the plaintext admin client alike.
 */
@ExtendWith(BrokerLogsOnFailure.class)
class TlsTest {
    static final int COUNT = 3;

    @Test
    void enforcingBrokerServesTlsClientsAndRefusesPlaintext() throws Exception {
        Path dir = TestDirs.fresh("tls-certs");
        Path cert = dir.resolve("cert.pem");
        Path key = dir.resolve("key.pem");
        Process openssl = new ProcessBuilder("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes",
            "-keyout", key.toString(), "-out", cert.toString(), "-days", "2", "-subj", "/CN=localhost")
            .redirectErrorStream(true).redirectOutput(dir.resolve("openssl.log").toFile()).start();
        assertEquals(true, openssl.waitFor(60, TimeUnit.SECONDS), "openssl finished");
        assertEquals(0, openssl.exitValue(), "openssl exit code (see " + dir.resolve("openssl.log") + ")");

        Map<String, String> conf = Map.of("tls.server.mode", "enforcing", "tls.server.certPath", cert.toString(),
            "tls.server.keyPath", key.toString());
        try (BrokerDeployment d = BrokerDeployment.start(BrokerDeployment.Mode.STANDALONE, "tls", conf)) {
            String topic = Compat.unique("tls");
            DefaultMQProducer producer = new DefaultMQProducer(Compat.unique("pg-tls"));
            producer.setNamesrvAddr(d.namesrvAddr());
            producer.setInstanceName(Compat.unique("tls-producer"));
            producer.setUseTLS(true);
            DefaultMQPullConsumer puller = new DefaultMQPullConsumer(Compat.unique("cg-tls"));
            puller.setNamesrvAddr(d.namesrvAddr());
            puller.setInstanceName(Compat.unique("tls-puller"));
            puller.setUseTLS(true);
            DefaultMQProducer plain = new DefaultMQProducer(Compat.unique("pg-plain"));
            plain.setNamesrvAddr(d.namesrvAddr());
            plain.setInstanceName(Compat.unique("plain-producer"));
            plain.setSendMsgTimeout(3_000);
            plain.setRetryTimesWhenSendFailed(0);
            try {
                producer.start();
                puller.start();
                plain.start();
                MessageQueue mq = null;
                for (int i = 0; i < COUNT; i++) {
                    SendResult r = producer.send(new Message(topic, "TagT", ("over tls " + i).getBytes(StandardCharsets.UTF_8)));
                    assertEquals(SendStatus.SEND_OK, r.getSendStatus(), "send over TLS: " + r);
                    mq = r.getMessageQueue();
                }
                long found = 0;
                for (MessageQueue q : puller.fetchSubscribeMessageQueues(topic)) {
                    PullResult p = puller.pull(q, "*", 0, 32);
                    if (p.getPullStatus() == PullStatus.FOUND) {
                        found += p.getMsgFoundList().size();
                    }
                }
                assertEquals(COUNT, found, "messages pulled over TLS from " + topic);

                MessageQueue target = mq;
                Exception refused = assertThrows(Exception.class,
                    () -> plain.send(new Message(topic, "TagT", "plaintext".getBytes(StandardCharsets.UTF_8)), target),
                    "a plaintext send to an enforcing broker");
                System.out.printf("[compat %s] plaintext send to an enforcing broker: %s%n", Generation.current().tag(), refused);
            } finally {
                Clients.shutdownAll(List.of(producer::shutdown, puller::shutdown, plain::shutdown), 10_000);
            }
        }
    }
}
