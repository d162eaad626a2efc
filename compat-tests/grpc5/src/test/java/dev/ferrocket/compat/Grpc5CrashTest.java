package dev.ferrocket.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.rocketmq.client.apis.ClientConfiguration;
import org.apache.rocketmq.client.apis.ClientServiceProvider;
import org.apache.rocketmq.client.apis.consumer.FilterExpression;
import org.apache.rocketmq.client.apis.consumer.FilterExpressionType;
import org.apache.rocketmq.client.apis.consumer.SimpleConsumer;
import org.apache.rocketmq.client.apis.message.MessageView;
import org.apache.rocketmq.client.apis.producer.Producer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * kill -9 in the middle of a 5.x SimpleConsumer's work (rocketmq-client-java over gRPC): after a
 * restart on the same store and ports, no acked message is received again and the one received
 * but not acked comes back as delivery attempt 2 (the POP state is in the CommitLog).
 */
class Grpc5CrashTest {
    private static final ClientServiceProvider PROVIDER = ClientServiceProvider.loadService();
    private static final String TOPIC = "Grpc5Crash";
    private static Grpc5Broker broker;

    @BeforeAll
    static void start() throws Exception {
        broker = Grpc5Broker.start("crash", Map.of("grpcClientConsumerMinLongPollingTimeoutMillis", "1000",
            "grpcClientConsumerMaxLongPollingTimeoutMillis", "3000"));
        broker.createTopic(TOPIC, 1, "NORMAL");
    }

    @AfterAll
    static void stop() throws Exception {
        if (broker != null) {
            broker.close();
        }
    }

    private static String body(MessageView m) {
        return StandardCharsets.UTF_8.decode(m.getBody()).toString();
    }

    @Test
    void aKilledBrokerRedeliversNothingAckedAndLosesNothingUnacked() throws Exception {
        ClientConfiguration config = ClientConfiguration.newBuilder().setEndpoints(broker.grpcEndpoint())
            .enableSsl(false).setRequestTimeout(Duration.ofSeconds(10)).build();
        try (Producer p = PROVIDER.newProducerBuilder().setClientConfiguration(config).setTopics(TOPIC).build()) {
            for (String b : new String[] {"a", "b", "c", "d"}) {
                p.send(PROVIDER.newMessageBuilder().setTopic(TOPIC).setBody(b.getBytes(StandardCharsets.UTF_8)).build());
            }
        }
        List<String> acked = new ArrayList<>();
        String unacked = null;
        try (SimpleConsumer c = PROVIDER.newSimpleConsumerBuilder().setClientConfiguration(config)
            .setConsumerGroup("Grpc5CrashG")
            .setSubscriptionExpressions(Map.of(TOPIC, new FilterExpression("*", FilterExpressionType.TAG)))
            .setAwaitDuration(Duration.ofSeconds(3)).build()) {
            long deadline = System.currentTimeMillis() + 30_000;
            while ((acked.size() < 3 || unacked == null) && System.currentTimeMillis() < deadline) {
                for (MessageView m : c.receive(1, Duration.ofSeconds(10))) {
                    assertEquals(1, m.getDeliveryAttempt());
                    if (acked.size() < 3) {
                        c.ack(m);
                        acked.add(body(m));
                    } else {
                        unacked = body(m);
                    }
                }
            }
            assertTrue(acked.size() == 3 && unacked != null, "acked " + acked + ", unacked " + unacked);

            broker.killAndRestart();

            // The unacked one comes back once its 10 s are up; nothing acked ever does.
            List<String> after = new ArrayList<>();
            MessageView back = null;
            deadline = System.currentTimeMillis() + 60_000;
            while (back == null && System.currentTimeMillis() < deadline) {
                List<MessageView> got;
                try {
                    got = c.receive(4, Duration.ofSeconds(30));
                } catch (Exception reconnecting) {
                    continue;
                }
                for (MessageView m : got) {
                    after.add(body(m));
                    if (body(m).equals(unacked)) {
                        back = m;
                    }
                }
            }
            assertEquals(List.of(unacked), after, "received after the restart");
            assertEquals(2, back.getDeliveryAttempt());
            c.ack(back);
        }
    }
}
