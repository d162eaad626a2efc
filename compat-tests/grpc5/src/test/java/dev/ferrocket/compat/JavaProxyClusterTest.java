package dev.ferrocket.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.rocketmq.client.apis.ClientConfiguration;
import org.apache.rocketmq.client.apis.ClientServiceProvider;
import org.apache.rocketmq.client.apis.consumer.FilterExpression;
import org.apache.rocketmq.client.apis.consumer.SimpleConsumer;
import org.apache.rocketmq.client.apis.message.MessageView;
import org.apache.rocketmq.client.apis.producer.Producer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The Java proxy 5.3.3 in cluster mode ({@code ProxyStartup -pm cluster}, from Maven Central
 * through benchmarks/java-broker) in front of ferrocket: the proxy turns the 5.x SDK's gRPC into
 * remoting requests to the broker, receives with POP_MESSAGE and acks with ACK_MESSAGE. A
 * producer sends through the proxy; a SimpleConsumer receives and acks every message once (the
 * proxy's receipt handles carry a 9th field, the CommitLog offset); a message received and not
 * acked comes back with delivery attempt 2 once its invisible time passed.
 */
class JavaProxyClusterTest {
    private static final ClientServiceProvider PROVIDER = ClientServiceProvider.loadService();
    private static final String TOPIC = "ProxyClusterTopic";
    private static Grpc5Broker broker;
    private static FerrocketProcess proxy;
    private static int proxyPort;

    @BeforeAll
    static void start() throws Exception {
        broker = Grpc5Broker.start("java-proxy");
        broker.createTopic(TOPIC, 4, "NORMAL");
        Path dir = TestDirs.fresh("java-proxy-5.3.3");
        proxyPort = Ports.free();
        Path json = dir.resolve("rmq-proxy.json");
        Files.writeString(json, "{\"rocketMQClusterName\":\"" + Grpc5Broker.CLUSTER + "\",\"namesrvAddr\":\""
            + broker.namesrvAddr() + "\",\"grpcServerPort\":" + proxyPort + ",\"remotingListenPort\":" + Ports.free() + "}");
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        proxy = new FerrocketProcess("java-proxy", dir, dir.resolve("proxy.out"), List.of(java, "-Xms256m", "-Xmx512m",
            "-Duser.home=" + dir, "-Drocketmq.home.dir=" + dir, "-cp", ReferenceClasspath.of("java-broker"),
            "org.apache.rocketmq.proxy.ProxyStartup", "-pc", json.toString(), "-pm", "cluster"));
        proxy.start();
        proxy.awaitPort(proxyPort, Duration.ofSeconds(120));
    }

    @AfterAll
    static void stop() throws Exception {
        if (proxy != null) {
            proxy.terminate(Duration.ofSeconds(20));
        }
        if (broker != null) {
            broker.close();
        }
    }

    private static ClientConfiguration config() {
        return ClientConfiguration.newBuilder().setEndpoints("127.0.0.1:" + proxyPort).enableSsl(false)
            .setRequestTimeout(Duration.ofSeconds(10)).build();
    }

    private static void send(String... bodies) throws Exception {
        try (Producer p = PROVIDER.newProducerBuilder().setClientConfiguration(config()).setTopics(TOPIC).build()) {
            for (String body : bodies) {
                p.send(PROVIDER.newMessageBuilder().setTopic(TOPIC).setTag("proxy").setKeys(body)
                    .setBody(body.getBytes(StandardCharsets.UTF_8)).build());
            }
        }
    }

    private static String body(MessageView m) {
        return StandardCharsets.UTF_8.decode(m.getBody()).toString();
    }

    /** Receives until {@code want} bodies came (acking them when {@code ack}) or 60 s passed. */
    private static List<MessageView> receive(SimpleConsumer c, Set<String> want, Duration invisible, boolean ack) throws Exception {
        List<MessageView> got = new ArrayList<>();
        Set<String> seen = new HashSet<>();
        long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
        while (!seen.containsAll(want) && System.nanoTime() < deadline) {
            for (MessageView m : c.receive(16, invisible)) {
                got.add(m);
                seen.add(body(m));
                if (ack) {
                    c.ack(m);
                }
            }
        }
        assertTrue(seen.containsAll(want), "received " + seen + ", wanted " + want + "\n" + proxy.logTail(40));
        return got;
    }

    @Test
    void the_java_proxy_sends_receives_acks_and_redelivers_through_ferrocket() throws Exception {
        Set<String> first = Set.of("p-0", "p-1", "p-2", "p-3", "p-4");
        send(first.toArray(String[]::new));
        try (SimpleConsumer c = PROVIDER.newSimpleConsumerBuilder().setClientConfiguration(config())
            .setConsumerGroup("ProxyClusterGroup").setAwaitDuration(Duration.ofSeconds(5))
            .setSubscriptionExpressions(Map.of(TOPIC, new FilterExpression("*"))).build()) {
            List<MessageView> got = receive(c, first, Duration.ofSeconds(30), true);
            assertEquals(5, got.size(), "each message once: " + got);
            assertTrue(got.stream().allMatch(m -> m.getDeliveryAttempt() == 1), got.toString());

            send("again");
            MessageView unacked = receive(c, Set.of("again"), Duration.ofSeconds(10), false).get(0);
            assertEquals(1, unacked.getDeliveryAttempt());
            long received = System.nanoTime();
            MessageView back = receive(c, Set.of("again"), Duration.ofSeconds(30), true).get(0);
            double after = (System.nanoTime() - received) / 1e9;
            assertEquals(2, back.getDeliveryAttempt(), "the unacked message comes back as attempt 2");
            assertEquals(unacked.getMessageId(), back.getMessageId());
            System.out.printf("[compat grpc5 java-proxy] an unacked message (10 s invisible) came back after %.1f s%n", after);
        }
    }
}
