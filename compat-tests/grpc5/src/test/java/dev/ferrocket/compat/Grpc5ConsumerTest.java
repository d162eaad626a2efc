package dev.ferrocket.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.rocketmq.client.apis.ClientConfiguration;
import org.apache.rocketmq.client.apis.ClientServiceProvider;
import org.apache.rocketmq.client.apis.consumer.ConsumeResult;
import org.apache.rocketmq.client.apis.consumer.FilterExpression;
import org.apache.rocketmq.client.apis.consumer.FilterExpressionType;
import org.apache.rocketmq.client.apis.consumer.MessageListener;
import org.apache.rocketmq.client.apis.consumer.PushConsumer;
import org.apache.rocketmq.client.apis.consumer.SimpleConsumer;
import org.apache.rocketmq.client.apis.message.Message;
import org.apache.rocketmq.client.apis.message.MessageView;
import org.apache.rocketmq.client.apis.producer.Producer;
import org.apache.rocketmq.client.consumer.DefaultMQPullConsumer;
import org.apache.rocketmq.client.consumer.PullResult;
import org.apache.rocketmq.client.consumer.PullStatus;
import org.apache.rocketmq.client.impl.MQClientAPIImpl;
import org.apache.rocketmq.common.message.MessageClientExt;
import org.apache.rocketmq.common.message.MessageQueue;
import org.apache.rocketmq.remoting.protocol.body.CMResult;
import org.apache.rocketmq.remoting.protocol.body.ConsumeMessageDirectlyResult;
import org.apache.rocketmq.remoting.protocol.body.ConsumerRunningInfo;
import org.apache.rocketmq.remoting.protocol.header.QueryConsumerOffsetRequestHeader;
import org.apache.rocketmq.remoting.protocol.subscription.SubscriptionGroupConfig;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The 5.x gRPC consumers (rocketmq-client-java) against ferrocket's grpcListenPort: a
 * SimpleConsumer receives and acks over TLS and plaintext, a message not acked comes back with
 * deliveryAttempt 2, a PushConsumer consumes everything once, two FIFO PushConsumers of an
 * orderly group keep each message group's order, and a PushConsumer failing past the group's
 * max attempts sends the message to the dead letter queue.
 */
class Grpc5ConsumerTest {
    private static final ClientServiceProvider PROVIDER = ClientServiceProvider.loadService();
    private static Grpc5Broker broker;
    private static DefaultMQPullConsumer reader;

    @BeforeAll
    static void start() throws Exception {
        // A PushConsumer's close waits for its held receive: hold them 3 s, not the default 20 s.
        broker = Grpc5Broker.start("consumer", Map.of("grpcClientConsumerMinLongPollingTimeoutMillis", "1000",
            "grpcClientConsumerMaxLongPollingTimeoutMillis", "3000"));
        broker.createTopic("Grpc5Simple", 2, "NORMAL");
        broker.createTopic("Grpc5Redeliver", 1, "NORMAL");
        broker.createTopic("Grpc5Push", 4, "NORMAL");
        broker.createTopic("Grpc5PushFifo", 4, "FIFO");
        broker.createTopic("Grpc5PushDlq", 1, "NORMAL");
        reader = new DefaultMQPullConsumer("Grpc5ConsumerReader");
        reader.setNamesrvAddr(broker.namesrvAddr());
        reader.start();
    }

    @AfterAll
    static void stop() throws Exception {
        if (reader != null) {
            reader.shutdown();
        }
        if (broker != null) {
            broker.close();
        }
    }

    private static ClientConfiguration config(boolean tls) {
        return ClientConfiguration.newBuilder().setEndpoints(broker.grpcEndpoint()).enableSsl(tls)
            .setRequestTimeout(Duration.ofSeconds(10)).build();
    }

    private static void send(String topic, String messageGroup, String... bodies) throws Exception {
        try (Producer p = PROVIDER.newProducerBuilder().setClientConfiguration(config(true)).setTopics(topic).build()) {
            for (String b : bodies) {
                var builder = PROVIDER.newMessageBuilder().setTopic(topic).setTag("TagA")
                    .setBody(b.getBytes(StandardCharsets.UTF_8));
                if (messageGroup != null) {
                    builder.setMessageGroup(messageGroup);
                }
                p.send(builder.build());
            }
        }
    }

    private static SimpleConsumer simple(boolean tls, String group, String topic) throws Exception {
        return PROVIDER.newSimpleConsumerBuilder().setClientConfiguration(config(tls)).setConsumerGroup(group)
            .setSubscriptionExpressions(Map.of(topic, new FilterExpression("*", FilterExpressionType.TAG)))
            .setAwaitDuration(Duration.ofSeconds(5)).build();
    }

    private static PushConsumer push(String group, String topic, MessageListener listener) throws Exception {
        return PROVIDER.newPushConsumerBuilder().setClientConfiguration(config(true)).setConsumerGroup(group)
            .setSubscriptionExpressions(Map.of(topic, new FilterExpression("*", FilterExpressionType.TAG)))
            .setMessageListener(listener).build();
    }

    private static String body(MessageView m) {
        return StandardCharsets.UTF_8.decode(m.getBody()).toString();
    }

    private static MQClientAPIImpl api() {
        return reader.getDefaultMQPullConsumerImpl().getRebalanceImpl().getmQClientFactory().getMQClientAPIImpl();
    }

    private static String brokerAddr(String topic) throws Exception {
        return api().getTopicRouteInfoFromNameServer(topic, 5000).getBrokerDatas().get(0).getBrokerAddrs().get(0L);
    }

    /** Whether the group's committed offset is the max offset on every queue: every message acked. */
    private static boolean allAcked(String group, String topic, int queues) throws Exception {
        String addr = brokerAddr(topic);
        for (int q = 0; q < queues; q++) {
            QueryConsumerOffsetRequestHeader h = new QueryConsumerOffsetRequestHeader();
            h.setConsumerGroup(group);
            h.setTopic(topic);
            h.setQueueId(q);
            long max = api().getMaxOffset(addr, new MessageQueue(topic, "grpc5-broker", q), 5000);
            long committed;
            try {
                committed = api().queryConsumerOffset(addr, h, 5000);
            } catch (Exception e) {
                return false; // no offset yet
            }
            if (committed != max) {
                return false;
            }
        }
        return true;
    }

    /** A subscription group made over remoting (UPDATE_AND_CREATE_SUBSCRIPTIONGROUP). */
    private static void createGroup(String topic, String group, boolean orderly, int retryMaxTimes) throws Exception {
        MQClientAPIImpl api = api();
        String addr = brokerAddr(topic);
        SubscriptionGroupConfig cfg = new SubscriptionGroupConfig();
        cfg.setGroupName(group);
        cfg.setConsumeMessageOrderly(orderly);
        cfg.setRetryMaxTimes(retryMaxTimes);
        api.createSubscriptionGroup(addr, cfg, 5000);
    }

    @Test
    void simpleConsumerReceivesAndAcksOverTlsAndPlaintext() throws Exception {
        for (boolean tls : new boolean[] {true, false}) {
            String group = "Grpc5SimpleG" + (tls ? "Tls" : "Plain");
            List<String> sent = List.of("s-" + tls + "-0", "s-" + tls + "-1", "s-" + tls + "-2");
            try (SimpleConsumer c = simple(tls, group, "Grpc5Simple")) {
                send("Grpc5Simple", null, sent.toArray(new String[0]));
                List<String> got = new ArrayList<>();
                long deadline = System.currentTimeMillis() + 30_000;
                while (got.size() < 6 && System.currentTimeMillis() < deadline) {
                    for (MessageView m : c.receive(16, Duration.ofSeconds(30))) {
                        assertEquals("TagA", m.getTag().orElse(""));
                        assertEquals(1, m.getDeliveryAttempt());
                        got.add(body(m));
                        c.ack(m);
                    }
                    if (got.containsAll(sent)) {
                        break;
                    }
                }
                assertTrue(got.containsAll(sent), "received " + got + ", sent " + sent);
                // Everything acked: nothing comes back.
                assertTrue(c.receive(16, Duration.ofSeconds(30)).isEmpty());
            }
        }
    }

    @Test
    void aMessageNotAckedComesBackWithDeliveryAttemptTwo() throws Exception {
        try (SimpleConsumer c = simple(true, "Grpc5RedeliverG", "Grpc5Redeliver")) {
            send("Grpc5Redeliver", null, "again");
            MessageView first = Wait.until("the message", Duration.ofSeconds(30),
                () -> c.receive(1, Duration.ofSeconds(10)), l -> !l.isEmpty()).get(0);
            assertEquals(1, first.getDeliveryAttempt());
            MessageView second = Wait.until("the redelivery", Duration.ofSeconds(40),
                () -> c.receive(1, Duration.ofSeconds(30)), l -> !l.isEmpty()).get(0);
            assertEquals("again", body(second));
            assertEquals(2, second.getDeliveryAttempt());
            assertEquals(first.getMessageId(), second.getMessageId());
            c.ack(second);
        }
    }

    @Test
    void pushConsumerConsumesEverythingOnce() throws Exception {
        Map<String, AtomicInteger> seen = new ConcurrentHashMap<>();
        try (PushConsumer c = push("Grpc5PushG", "Grpc5Push", m -> {
            seen.computeIfAbsent(body(m), k -> new AtomicInteger()).incrementAndGet();
            return ConsumeResult.SUCCESS;
        })) {
            String[] bodies = new String[40];
            for (int i = 0; i < bodies.length; i++) {
                bodies[i] = "p-" + i;
            }
            send("Grpc5Push", null, bodies);
            Wait.until("40 messages consumed", Duration.ofSeconds(60), () -> seen.size(), n -> n == 40);
            // Every ack landed (the group's offset is at the end of each queue): nothing comes back.
            Wait.until("every message acked", Duration.ofSeconds(30), () -> {
                try {
                    return allAcked("Grpc5PushG", "Grpc5Push", 4);
                } catch (Exception e) {
                    return false;
                }
            });
            seen.forEach((k, v) -> assertEquals(1, v.get(), k + " consumed once"));

            // mqadmin's requests to a consumer reach the SDK on its Telemetry stream: consumerStatus
            // with jstack (PrintThreadStackTraceCommand) and consumeMessage (VerifyMessageCommand).
            String addr = brokerAddr("Grpc5Push");
            String clientId = api().getConsumerConnectionList(addr, "Grpc5PushG", 5000).getConnectionSet().iterator()
                .next().getClientId();
            ConsumerRunningInfo info = api().getConsumerRunningInfo(addr, "Grpc5PushG", clientId, true, 15000);
            assertTrue(info.getJstack() != null && info.getJstack().contains("Thread"), "the SDK's thread stacks");
            MessageClientExt first = (MessageClientExt) reader.pull(new MessageQueue("Grpc5Push", "grpc5-broker", 0), "*", 0, 1, 5000)
                .getMsgFoundList().get(0);
            ConsumeMessageDirectlyResult direct =
                api().consumeMessageDirectly(addr, "Grpc5PushG", clientId, "Grpc5Push", first.getOffsetMsgId(), 15000);
            assertEquals(CMResult.CR_SUCCESS, direct.getConsumeResult());
            String again = new String(first.getBody(), StandardCharsets.UTF_8);
            assertEquals(2, seen.get(again).get(), again + " consumed again, directly");
        }
    }

    @Test
    void fifoPushConsumersKeepEachMessageGroupInOrder() throws Exception {
        createGroup("Grpc5PushFifo", "Grpc5FifoG", true, 16);
        Map<String, List<Integer>> order = new ConcurrentHashMap<>();
        MessageListener listener = m -> {
            String[] parts = body(m).split(":");
            order.computeIfAbsent(parts[0], k -> Collections.synchronizedList(new ArrayList<>()))
                .add(Integer.parseInt(parts[1]));
            return ConsumeResult.SUCCESS;
        };
        try (PushConsumer a = push("Grpc5FifoG", "Grpc5PushFifo", listener);
             PushConsumer b = push("Grpc5FifoG", "Grpc5PushFifo", listener)) {
            for (String g : new String[] {"ga", "gb", "gc"}) {
                String[] bodies = new String[10];
                for (int i = 0; i < 10; i++) {
                    bodies[i] = g + ":" + i;
                }
                send("Grpc5PushFifo", g, bodies);
            }
            Wait.until("30 FIFO messages consumed", Duration.ofSeconds(60),
                () -> order.values().stream().mapToInt(List::size).sum(), n -> n >= 30);
            for (String g : new String[] {"ga", "gb", "gc"}) {
                assertEquals(List.of(0, 1, 2, 3, 4, 5, 6, 7, 8, 9), order.get(g), g + " in order");
            }
        }
    }

    @Test
    void failuresPastMaxAttemptsGoToTheDeadLetterQueue() throws Exception {
        createGroup("Grpc5PushDlq", "Grpc5DlqG", false, 1);
        AtomicInteger attempts = new AtomicInteger();
        try (PushConsumer c = push("Grpc5DlqG", "Grpc5PushDlq", m -> {
            attempts.incrementAndGet();
            return ConsumeResult.FAILURE;
        })) {
            send("Grpc5PushDlq", null, "doomed");
            PullResult r = Wait.until("the message in %DLQ%Grpc5DlqG", Duration.ofSeconds(60), () -> {
                try {
                    return reader.pull(new MessageQueue("%DLQ%Grpc5DlqG", "grpc5-broker", 0), "*", 0, 1, 3000);
                } catch (Exception e) {
                    return null;
                }
            }, p -> p != null && p.getPullStatus() == PullStatus.FOUND);
            assertEquals("doomed", new String(r.getMsgFoundList().get(0).getBody(), StandardCharsets.UTF_8));
            assertEquals(2, attempts.get(), "delivered maxAttempts (retryMaxTimes + 1) times");
        }
    }
}
