package dev.ferrocket.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.rocketmq.client.apis.ClientConfiguration;
import org.apache.rocketmq.client.apis.ClientServiceProvider;
import org.apache.rocketmq.client.apis.consumer.FilterExpression;
import org.apache.rocketmq.client.apis.consumer.FilterExpressionType;
import org.apache.rocketmq.client.apis.consumer.SimpleConsumer;
import org.apache.rocketmq.client.apis.message.Message;
import org.apache.rocketmq.client.apis.message.MessageView;
import org.apache.rocketmq.client.apis.producer.Producer;
import org.apache.rocketmq.client.apis.producer.SendReceipt;
import org.apache.rocketmq.client.apis.producer.Transaction;
import org.apache.rocketmq.client.apis.producer.TransactionResolution;
import org.apache.rocketmq.client.consumer.DefaultMQPullConsumer;
import org.apache.rocketmq.client.consumer.PullResult;
import org.apache.rocketmq.client.consumer.PullStatus;
import org.apache.rocketmq.client.exception.MQBrokerException;
import org.apache.rocketmq.client.impl.MQClientAPIImpl;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;
import org.apache.rocketmq.remoting.protocol.LanguageCode;
import org.apache.rocketmq.remoting.protocol.body.ConsumerConnection;
import org.apache.rocketmq.remoting.protocol.body.ProducerConnection;
import org.apache.rocketmq.remoting.protocol.heartbeat.ConsumeType;
import org.apache.rocketmq.remoting.protocol.heartbeat.MessageModel;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The 5.x gRPC producer (rocketmq-client-java) against ferrocket's grpcListenPort: NORMAL sends
 * over TLS (the SDK's default, trusting any certificate) and plaintext on the same port, FIFO
 * sends (message group, one queue per group, in order), and a DELAY send delivered at its time;
 * a transactional send committed (and one rolled back); every message read back with the remoting
 * pull consumer, with its tag, keys and properties.
 */
class Grpc5ProducerTest {
    private static final ClientServiceProvider PROVIDER = ClientServiceProvider.loadService();
    private static Grpc5Broker broker;
    private static DefaultMQPullConsumer reader;

    @BeforeAll
    static void start() throws Exception {
        // A transaction left open is asked about 3 s after its send, in checks every second.
        broker = Grpc5Broker.start("producer", Map.of("transactionTimeOut", "3000", "transactionCheckInterval", "1000"));
        broker.createTopic("Grpc5Normal", 4, "NORMAL");
        broker.createTopic("Grpc5Fifo", 8, "FIFO");
        broker.createTopic("Grpc5Delay", 2, "DELAY");
        broker.createTopic("Grpc5Txn", 2, "TRANSACTION");
        broker.createTopic("Grpc5TxnCheck", 2, "TRANSACTION");
        reader = new DefaultMQPullConsumer("Grpc5Reader");
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
        return ClientConfiguration.newBuilder()
            .setEndpoints(broker.grpcEndpoint())
            .enableSsl(tls)
            .setRequestTimeout(Duration.ofSeconds(10))
            .build();
    }

    private static Producer producer(boolean tls, String... topics) throws Exception {
        return PROVIDER.newProducerBuilder().setClientConfiguration(config(tls)).setTopics(topics).build();
    }

    /** Every message of {@code topic} by queue id, read from offset 0 with the remoting client. */
    private static Map<Integer, List<MessageExt>> readAll(String topic) throws Exception {
        Map<Integer, List<MessageExt>> byQueue = new HashMap<>();
        for (MessageQueue mq : reader.fetchSubscribeMessageQueues(topic)) {
            long offset = 0;
            while (true) {
                PullResult r = reader.pull(mq, "*", offset, 32, 5000);
                if (r.getPullStatus() != PullStatus.FOUND) {
                    break;
                }
                byQueue.computeIfAbsent(mq.getQueueId(), q -> new ArrayList<>()).addAll(r.getMsgFoundList());
                offset = r.getNextBeginOffset();
            }
        }
        return byQueue;
    }

    private static List<MessageExt> flat(Map<Integer, List<MessageExt>> byQueue) {
        List<MessageExt> all = new ArrayList<>();
        byQueue.values().forEach(all::addAll);
        return all;
    }

    private static String body(MessageExt m) {
        return new String(m.getBody(), StandardCharsets.UTF_8);
    }

    @Test
    void normalSendsOverTlsAndPlaintextOnOnePort() throws Exception {
        List<String> ids = new ArrayList<>();
        for (boolean tls : new boolean[] {true, false}) {
            try (Producer p = producer(tls, "Grpc5Normal")) {
                for (int i = 0; i < 3; i++) {
                    Message m = PROVIDER.newMessageBuilder().setTopic("Grpc5Normal").setTag("TagA")
                        .setKeys("key-" + tls + "-" + i).addProperty("origin", tls ? "tls" : "plain")
                        .setBody(("normal-" + tls + "-" + i).getBytes(StandardCharsets.UTF_8)).build();
                    SendReceipt r = p.send(m);
                    ids.add(r.getMessageId().toString());
                }
            }
        }
        List<MessageExt> got = Wait.until("6 normal messages readable", Duration.ofSeconds(20),
            () -> flat(readAll("Grpc5Normal")), l -> l.size() == 6);
        for (MessageExt m : got) {
            assertEquals("TagA", m.getTags());
            assertTrue(ids.contains(m.getMsgId()), m.getMsgId() + " is a message id the SDK was given");
            assertTrue(body(m).startsWith("normal-" + ("tls".equals(m.getProperty("origin")))), body(m));
            assertTrue(m.getKeys().startsWith("key-"), m.getKeys());
        }
    }

    @Test
    void fifoSendsKeepEachGroupOnOneQueueInOrder() throws Exception {
        try (Producer p = producer(true, "Grpc5Fifo")) {
            for (int i = 0; i < 5; i++) {
                for (String group : new String[] {"order-1", "FIFO_GROUP_7"}) {
                    Message m = PROVIDER.newMessageBuilder().setTopic("Grpc5Fifo").setMessageGroup(group)
                        .setBody((group + ":" + i).getBytes(StandardCharsets.UTF_8)).build();
                    p.send(m);
                }
            }
        }
        Map<Integer, List<MessageExt>> byQueue = Wait.until("10 FIFO messages readable", Duration.ofSeconds(20),
            () -> readAll("Grpc5Fifo"), m -> flat(m).size() == 10);
        // Guava consistentHash(group.hashCode(), 8), as the Java proxy: order-1 -> 3, FIFO_GROUP_7 -> 4.
        Map<String, Integer> expected = Map.of("order-1", 3, "FIFO_GROUP_7", 4);
        for (Map.Entry<String, Integer> e : expected.entrySet()) {
            List<String> bodies = new ArrayList<>();
            for (MessageExt m : byQueue.getOrDefault(e.getValue(), List.of())) {
                assertEquals(e.getKey(), m.getProperty("__SHARDINGKEY"));
                bodies.add(body(m));
            }
            assertEquals(List.of(0, 1, 2, 3, 4).stream().map(i -> e.getKey() + ":" + i).toList(), bodies);
        }
    }

    @Test
    void delayedSendArrivesAtItsTime() throws Exception {
        long due = System.currentTimeMillis() + 3000;
        try (Producer p = producer(false, "Grpc5Delay")) {
            p.send(PROVIDER.newMessageBuilder().setTopic("Grpc5Delay").setDeliveryTimestamp(due)
                .setBody("later".getBytes(StandardCharsets.UTF_8)).build());
        }
        assertTrue(flat(readAll("Grpc5Delay")).isEmpty(), "not readable before its time");
        List<MessageExt> got = Wait.until("the delayed message", Duration.ofSeconds(20),
            () -> flat(readAll("Grpc5Delay")), l -> !l.isEmpty());
        assertEquals("later", body(got.get(0)));
        assertFalse(System.currentTimeMillis() < due - 1000, "not delivered a second or more early");
    }

    @Test
    void transactionalSendIsReadableOnceCommitted() throws Exception {
        try (Producer p = PROVIDER.newProducerBuilder().setClientConfiguration(config(true)).setTopics("Grpc5Txn")
            .setTransactionChecker(view -> TransactionResolution.ROLLBACK).build()) {
            Transaction committed = p.beginTransaction();
            p.send(PROVIDER.newMessageBuilder().setTopic("Grpc5Txn")
                .setBody("committed".getBytes(StandardCharsets.UTF_8)).build(), committed);
            Transaction rolledBack = p.beginTransaction();
            p.send(PROVIDER.newMessageBuilder().setTopic("Grpc5Txn")
                .setBody("rolled back".getBytes(StandardCharsets.UTF_8)).build(), rolledBack);
            assertTrue(flat(readAll("Grpc5Txn")).isEmpty(), "a half message is not readable");
            rolledBack.rollback();
            committed.commit();
        }
        List<MessageExt> got = Wait.until("the committed message", Duration.ofSeconds(20),
            () -> flat(readAll("Grpc5Txn")), l -> !l.isEmpty());
        assertEquals(1, got.size());
        assertEquals("committed", body(got.get(0)));
    }

    /**
     * A transaction its producer neither commits nor rolls back: the broker's check service asks
     * the producer (RecoverOrphanedTransactionCommand on its Telemetry stream), the SDK's
     * TransactionChecker answers COMMIT, and the message becomes readable.
     */
    @Test
    void aTransactionLeftOpenIsCommittedWhenTheBrokerAsksTheChecker() throws Exception {
        AtomicReference<MessageView> asked = new AtomicReference<>();
        try (Producer p = PROVIDER.newProducerBuilder().setClientConfiguration(config(true)).setTopics("Grpc5TxnCheck")
            .setTransactionChecker(view -> {
                asked.compareAndSet(null, view);
                return TransactionResolution.COMMIT;
            }).build()) {
            Transaction open = p.beginTransaction();
            SendReceipt sent = p.send(PROVIDER.newMessageBuilder().setTopic("Grpc5TxnCheck").setKeys("open-key")
                .setBody("left open".getBytes(StandardCharsets.UTF_8)).build(), open);
            List<MessageExt> got = Wait.until("the message the checker committed", Duration.ofSeconds(30),
                () -> flat(readAll("Grpc5TxnCheck")), l -> !l.isEmpty());
            assertEquals(1, got.size());
            assertEquals("left open", body(got.get(0)));
            MessageView view = asked.get();
            assertEquals(sent.getMessageId().toString(), view.getMessageId().toString());
            assertEquals("Grpc5TxnCheck", view.getTopic());
            assertEquals("left open", StandardCharsets.UTF_8.decode(view.getBody()).toString());
            assertTrue(view.getKeys().contains("open-key"), "keys of the checked message: " + view.getKeys());
        }
    }

    /**
     * The SDK's heartbeats put its producer in its topic's producer group and its SimpleConsumer in
     * its group, where mqadmin's producerConnection and consumerConnection (GET_PRODUCER_ and
     * GET_CONSUMER_CONNECTION_LIST over remoting) find them, as with Java's proxy in local mode;
     * a closed consumer leaves its group.
     */
    @Test
    void grpcClientsAreListedInTheBrokersConnectionLists() throws Exception {
        MQClientAPIImpl api = reader.getDefaultMQPullConsumerImpl().getRebalanceImpl().getmQClientFactory()
            .getMQClientAPIImpl();
        String brokerAddr = "127.0.0.1:" + broker.brokerPort;
        String group = "Grpc5ListedGroup";
        try (Producer p = producer(false, "Grpc5Normal")) {
            SimpleConsumer c = PROVIDER.newSimpleConsumerBuilder().setClientConfiguration(config(false))
                .setConsumerGroup(group).setAwaitDuration(Duration.ofSeconds(1))
                .setSubscriptionExpressions(Map.of("Grpc5Normal", new FilterExpression("TagA", FilterExpressionType.TAG)))
                .build();
            ProducerConnection producers = Wait.until("the producer in group Grpc5Normal", Duration.ofSeconds(30),
                () -> api.getProducerConnectionList(brokerAddr, "Grpc5Normal", 3000),
                pc -> pc.getConnectionSet().stream().anyMatch(x -> x.getLanguage() == LanguageCode.JAVA));
            assertFalse(producers.getConnectionSet().isEmpty());
            ConsumerConnection consumers = Wait.until("the consumer in " + group, Duration.ofSeconds(30),
                () -> api.getConsumerConnectionList(brokerAddr, group, 3000), cc -> !cc.getConnectionSet().isEmpty());
            assertEquals(1, consumers.getConnectionSet().size());
            assertEquals(ConsumeType.CONSUME_ACTIVELY, consumers.getConsumeType());
            assertEquals(MessageModel.CLUSTERING, consumers.getMessageModel());
            assertEquals(Set.of("TagA"), consumers.getSubscriptionTable().get("Grpc5Normal").getTagsSet());
            c.close();
            Wait.until("the closed consumer gone from " + group, Duration.ofSeconds(30), () -> {
                try {
                    return api.getConsumerConnectionList(brokerAddr, group, 3000).getConnectionSet().size();
                } catch (MQBrokerException e) {
                    return 0;
                }
            }, n -> n == 0);
        }
    }
}
