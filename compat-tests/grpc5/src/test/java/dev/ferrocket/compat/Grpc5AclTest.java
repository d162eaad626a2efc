package dev.ferrocket.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.rocketmq.client.apis.ClientConfiguration;
import org.apache.rocketmq.client.apis.ClientServiceProvider;
import org.apache.rocketmq.client.apis.SessionCredentialsProvider;
import org.apache.rocketmq.client.apis.StaticSessionCredentialsProvider;
import org.apache.rocketmq.client.apis.consumer.FilterExpression;
import org.apache.rocketmq.client.apis.consumer.FilterExpressionType;
import org.apache.rocketmq.client.apis.consumer.SimpleConsumer;
import org.apache.rocketmq.client.apis.message.MessageView;
import org.apache.rocketmq.client.apis.producer.Producer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * ACL 1.0 ({@code aclEnable=true}, {@code plain_acl.yml}) on the gRPC port with the 5.x SDK's
 * {@link StaticSessionCredentialsProvider}: a signed producer sends and a signed SimpleConsumer
 * receives and acks; a wrong secret and no credentials are refused at the producer's first
 * QueryRoute, and an account without the topic's PUB at its Settings (the SDK throws). One broker for the class; its topic is in topics.json from the start
 * (ferrocket admin does not sign its requests).
 */
class Grpc5AclTest {
    private static final ClientServiceProvider PROVIDER = ClientServiceProvider.loadService();
    static final String TOPIC = "Grpc5AclTopic";
    static final String GROUP = "Grpc5AclGroup";
    static final String USER = "grpcUser1";
    static final String SECRET = "grpcSecret1";
    static final String READER = "grpcReader1";
    static final String READER_SECRET = "readerSecret1";
    private static Grpc5Broker broker;

    @BeforeAll
    static void start() throws Exception {
        Path home = TestDirs.fresh("grpc5-acl-home");
        Files.createDirectories(home.resolve("conf"));
        Files.writeString(home.resolve("conf").resolve("plain_acl.yml"), "accounts:\n"
            + "  - accessKey: " + USER + "\n"
            + "    secretKey: " + SECRET + "\n"
            + "    defaultTopicPerm: DENY\n"
            + "    defaultGroupPerm: DENY\n"
            + "    topicPerms: ['" + TOPIC + "=PUB|SUB']\n"
            + "    groupPerms: ['" + GROUP + "=SUB']\n"
            + "  - accessKey: " + READER + "\n"
            + "    secretKey: " + READER_SECRET + "\n"
            + "    defaultTopicPerm: DENY\n"
            + "    defaultGroupPerm: DENY\n"
            + "    topicPerms: ['" + TOPIC + "=SUB']\n");
        Path store = TestDirs.fresh("grpc5-acl-store");
        Files.createDirectories(store.resolve("config"));
        Files.writeString(store.resolve("config").resolve("topics.json"), "{\"topicConfigTable\":{\"" + TOPIC
            + "\":{\"topicName\":\"" + TOPIC + "\",\"readQueueNums\":2,\"writeQueueNums\":2,\"perm\":6}}}");
        broker = Grpc5Broker.start("acl", Map.of("aclEnable", "true", "rocketmqHome", home.toString(),
            "storePathRootDir", store.toString()));
    }

    @AfterAll
    static void stop() throws Exception {
        if (broker != null) {
            broker.close();
        }
    }

    private static ClientConfiguration config(String ak, String sk) {
        var b = ClientConfiguration.newBuilder().setEndpoints(broker.grpcEndpoint()).enableSsl(true)
            .setRequestTimeout(Duration.ofSeconds(10));
        if (ak != null) {
            SessionCredentialsProvider creds = new StaticSessionCredentialsProvider(ak, sk);
            b.setCredentialProvider(creds);
        }
        return b.build();
    }

    private static Producer producer(String ak, String sk) throws Exception {
        return PROVIDER.newProducerBuilder().setClientConfiguration(config(ak, sk)).setTopics(TOPIC).build();
    }

    private static void send(Producer p, String body) throws Exception {
        p.send(PROVIDER.newMessageBuilder().setTopic(TOPIC).setTag("TagA")
            .setBody(body.getBytes(StandardCharsets.UTF_8)).build());
    }

    /** Every message and cause in the chain. */
    private static String describe(Throwable t) {
        StringBuilder sb = new StringBuilder();
        for (Throwable c = t; c != null; c = c.getCause()) {
            sb.append(c).append(" | ");
        }
        return sb.toString();
    }

    @Test
    void signedProducerSendsAndSignedSimpleConsumerReceivesAndAcks() throws Exception {
        List<String> sent = List.of("acl-0", "acl-1", "acl-2");
        try (SimpleConsumer c = PROVIDER.newSimpleConsumerBuilder().setClientConfiguration(config(USER, SECRET))
            .setConsumerGroup(GROUP)
            .setSubscriptionExpressions(Map.of(TOPIC, new FilterExpression("*", FilterExpressionType.TAG)))
            .setAwaitDuration(Duration.ofSeconds(5)).build()) {
            try (Producer p = producer(USER, SECRET)) {
                for (String b : sent) {
                    send(p, b);
                }
            }
            List<String> got = new ArrayList<>();
            long deadline = System.currentTimeMillis() + 30_000;
            while (got.size() < sent.size() && System.currentTimeMillis() < deadline) {
                for (MessageView m : c.receive(16, Duration.ofSeconds(30))) {
                    got.add(StandardCharsets.UTF_8.decode(m.getBody()).toString());
                    c.ack(m);
                }
            }
            got.sort(null);
            assertEquals(sent, got);
        }
    }

    @Test
    void wrongSecretNoCredentialsAndNoPermissionAreRefused() throws Exception {
        Exception wrong = assertThrows(Exception.class, () -> producer(USER, "wrongSecret").close());
        assertTrue(describe(wrong).contains("Unauthorized") || describe(wrong).contains("UNAUTHORIZED"),
            describe(wrong));
        Exception none = assertThrows(Exception.class, () -> producer(null, null).close());
        assertTrue(describe(none).toUpperCase().contains("UNAUTHORIZED"), describe(none));
        // The reader may route (SUB) but not publish: its producer's Settings are answered
        // FORBIDDEN, so the SDK never gets its settings and fails to start (as with Java's proxy).
        assertThrows(IllegalStateException.class, () -> producer(READER, READER_SECRET).close());
    }
}
