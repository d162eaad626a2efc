package dev.ferrocket.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.stream.Collectors;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeOrderlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerOrderly;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.MessageQueueSelector;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.tools.admin.DefaultMQAdminExt;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Ordered consumption: {@code MessageListenerOrderly} consumers (clustering, which lock their queues
 * on the broker with LOCK_BATCH_MQ) and a producer choosing the queue by order id with a
 * {@code MessageQueueSelector}. Global order (one queue), partitioned order (eight queues split by two
 * consumers) and partitioned order while a second consumer joins and the queues move.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@ExtendWith(BrokerLogsOnFailure.class)
class OrderedConsumptionTest {
    static final int PERM_RW = 6;
    static final Duration CONSUME_TIMEOUT = Duration.ofSeconds(60);
    static final Duration BALANCE_TIMEOUT = Duration.ofSeconds(60);
    /** Picks the queue at {@code orderIndex % queues} of the route's queue list (one broker: the queue id). */
    static final MessageQueueSelector BY_ORDER = (mqs, msg, arg) -> mqs.get((Integer) arg % mqs.size());

    private final Generation gen = Generation.current();
    private BrokerDeployment env;
    private DefaultMQAdminExt admin;
    private DefaultMQProducer producer;

    @BeforeAll
    void setUp() throws Exception {
        env = BrokerDeployment.start(BrokerDeployment.Mode.STANDALONE, "ordered", Map.of());
        admin = env.admin();
        producer = Clients.producer(env.namesrvAddr());
    }

    @AfterAll
    void tearDown() {
        if (producer != null) {
            Clients.shutdownAll(List.of(producer::shutdown), 10_000);
        }
        if (env != null) {
            env.close();
        }
        Clients.awaitBackgroundShutdowns(10_000);
    }

    void report(String format, Object... args) {
        System.out.printf("[compat %s ordered] %s%n", gen.tag(), String.format(format, args));
    }

    // ------------------------------------------------------------------ recording

    /** One message of an order; its key is {@code <orderId>#<seq>}. */
    record OrderMsg(String orderId, int orderIndex, int seq) {
        String key() {
            return orderId + "#" + String.format("%04d", seq);
        }
    }

    /** One call of an orderly listener for one message, numbered in the order the listeners ran. */
    record Seen(int index, String consumer, String orderId, int seq, String key, int queueId, long queueOffset,
                String body) {
    }

    /** Every delivery to the orderly listeners of a test, in the order they happened (all consumers). */
    static final class OrderLog {
        private final List<Seen> seen = new ArrayList<>();

        MessageListenerOrderly listener(String consumer) {
            return (msgs, context) -> {
                for (MessageExt m : msgs) {
                    record(consumer, m);
                }
                return ConsumeOrderlyStatus.SUCCESS;
            };
        }

        private synchronized void record(String consumer, MessageExt m) {
            String key = m.getKeys();
            int hash = key == null ? -1 : key.lastIndexOf('#');
            String orderId = hash < 0 ? "?" : key.substring(0, hash);
            int seq = hash < 0 ? -1 : Integer.parseInt(key.substring(hash + 1));
            seen.add(new Seen(seen.size(), consumer, orderId, seq, key, m.getQueueId(), m.getQueueOffset(),
                new String(m.getBody(), StandardCharsets.UTF_8)));
        }

        synchronized List<Seen> all() {
            return new ArrayList<>(seen);
        }

        synchronized Set<String> keys() {
            return seen.stream().map(Seen::key).collect(Collectors.toSet());
        }

        synchronized long countBy(String consumer) {
            return seen.stream().filter(s -> s.consumer().equals(consumer)).count();
        }
    }

    /**
     * What the order checks found: per order, a delivery of seq k before every seq below k had been
     * delivered (a gap: out of order or lost); per queue, a consumer consuming again after another
     * consumer had taken the queue over (two consumers of one queue at once); messages never
     * delivered; deliveries of a message seen before (duplicates, allowed around a rebalance).
     */
    record OrderCheck(List<String> gaps, List<String> interleavedQueues, Set<String> missing, int duplicates,
                      Map<String, Integer> duplicatesByConsumer) {
        void assertOrdered(String what) {
            StringBuilder problems = new StringBuilder();
            if (!gaps.isEmpty()) {
                problems.append(gaps.size()).append(" deliveries out of order (seq k before all of 0..k-1): ")
                    .append(Deliveries.abbreviate(gaps)).append(". ");
            }
            if (!interleavedQueues.isEmpty()) {
                problems.append("queues consumed by a consumer again after another consumer had taken them over: ")
                    .append(interleavedQueues).append(". ");
            }
            if (!missing.isEmpty()) {
                problems.append(missing.size()).append(" sent messages never delivered: ")
                    .append(Deliveries.abbreviate(missing)).append(". ");
            }
            if (problems.length() > 0) {
                throw new AssertionError(what + ": " + problems);
            }
        }
    }

    static OrderCheck check(List<Seen> log, List<OrderMsg> sent) {
        Set<String> sentKeys = sent.stream().map(OrderMsg::key).collect(Collectors.toSet());
        Map<String, Integer> maxSeen = new HashMap<>();
        Set<String> seenKeys = new HashSet<>();
        List<String> gaps = new ArrayList<>();
        int duplicates = 0;
        Map<String, Integer> dupBy = new TreeMap<>();
        Map<Integer, List<String>> runsByQueue = new TreeMap<>();
        for (Seen s : log) {
            if (!seenKeys.add(s.key())) {
                duplicates++;
                dupBy.merge(s.consumer(), 1, Integer::sum);
            }
            int max = maxSeen.getOrDefault(s.orderId(), -1);
            if (s.seq() > max + 1) {
                gaps.add("#" + s.index() + " " + s.key() + " to " + s.consumer() + " after seq " + max);
            }
            maxSeen.put(s.orderId(), Math.max(max, s.seq()));
            List<String> runs = runsByQueue.computeIfAbsent(s.queueId(), q -> new ArrayList<>());
            if (runs.isEmpty() || !runs.get(runs.size() - 1).equals(s.consumer())) {
                runs.add(s.consumer());
            }
        }
        List<String> interleaved = new ArrayList<>();
        runsByQueue.forEach((q, runs) -> {
            if (new HashSet<>(runs).size() != runs.size()) {
                interleaved.add("queue " + q + " consumed by " + String.join(" -> ", runs));
            }
        });
        Set<String> missing = new TreeSet<>(sentKeys);
        missing.removeAll(seenKeys);
        return new OrderCheck(gaps, interleaved, missing, duplicates, dupBy);
    }

    SendResult sendOrdered(DefaultMQProducer p, String topic, OrderMsg m) throws Exception {
        Message msg = Clients.message(topic, "TagO", m.key(), "body-" + m.key());
        msg.putUserProperty("orderId", m.orderId());
        return FeatureClients.ok(p.send(msg, BY_ORDER, m.orderIndex()), "send of " + m.key());
    }

    void awaitAllSeen(String what, OrderLog log, List<OrderMsg> sent) {
        Wait.until(what + ": all " + sent.size() + " messages delivered", CONSUME_TIMEOUT, () -> {
            env.assertAlive();
            Set<String> have = log.keys();
            return sent.stream().map(OrderMsg::key).filter(k -> !have.contains(k))
                .collect(Collectors.toCollection(TreeSet::new));
        }, Set::isEmpty);
    }

    /**
     * Waits until the broker lists exactly these consumers in {@code group} and each has locked a
     * non-empty share of the queues of {@code topic}, no queue twice, all queues covered; nudges
     * their rebalance meanwhile (an orderly consumer that could not lock a queue retries only at its
     * next rebalance).
     */
    void awaitLockedSplit(String topic, String group, Map<String, DefaultMQPushConsumer> consumers, int queues) {
        Wait.until(consumers.size() + " orderly consumers of " + group + " to lock disjoint shares of the " + queues
                + " queues of " + topic, BALANCE_TIMEOUT,
            () -> {
                env.assertAlive();
                Map<String, Object> state = new TreeMap<>();
                state.put("brokerConsumerIds", Clients.consumerIds(admin, env.brokerAddr(), group).size());
                consumers.forEach((label, c) -> state.put(label, FeatureClients.lockedQueues(c, topic)));
                if (!balanced(state, consumers.keySet(), queues)) {
                    consumers.values().forEach(FeatureClients::rebalanceNow);
                }
                return state;
            },
            state -> balanced(state, consumers.keySet(), queues));
        consumers.values().forEach(FeatureClients::heartbeat);
    }

    private static boolean balanced(Map<String, Object> state, Set<String> labels, int queues) {
        if (!Integer.valueOf(labels.size()).equals(state.get("brokerConsumerIds"))) {
            return false;
        }
        Set<String> union = new HashSet<>();
        int total = 0;
        for (String label : labels) {
            @SuppressWarnings("unchecked")
            Set<String> mine = (Set<String>) state.get(label);
            if (mine.isEmpty()) {
                return false;
            }
            union.addAll(mine);
            total += mine.size();
        }
        return union.size() == queues && total == queues;
    }

    // ------------------------------------------------------------------ tests

    @Test
    void oneQueueIsConsumedInGlobalSendOrder() throws Exception {
        String topic = Compat.unique("order-global");
        env.createTopic(topic, 1, 1, PERM_RW);
        String group = Compat.unique("cg-order-global");
        OrderLog log = new OrderLog();
        DefaultMQPushConsumer c = FeatureClients.orderly(env.namesrvAddr(), group, "solo", topic, "*",
            log.listener("solo"));
        try {
            c.start();
            awaitLockedSplit(topic, group, Map.of("solo", c), 1);

            List<OrderMsg> sent = new ArrayList<>();
            for (int i = 0; i < 200; i++) {
                OrderMsg m = new OrderMsg("global", 0, i);
                SendResult r = sendOrdered(producer, topic, m);
                assertEquals(0, r.getMessageQueue().getQueueId(), "queue of " + m.key());
                assertEquals(i, r.getQueueOffset(), "queue offset of " + m.key());
                sent.add(m);
            }
            awaitAllSeen("global order", log, sent);
            Wait.until("the consumer to finish what it pulled", Duration.ofSeconds(10),
                () -> Clients.pending(c, topic), n -> n == 0);

            List<Seen> seen = log.all();
            assertEquals(sent.stream().map(OrderMsg::key).toList(), seen.stream().map(Seen::key).toList(),
                "keys in the order the orderly listener saw them (one queue: exactly the send order, once each)");
            for (Seen s : seen) {
                assertEquals(s.seq(), s.queueOffset(), "queue offset of " + s.key());
                assertEquals("body-" + s.key(), s.body(), "body of " + s.key());
            }
        } finally {
            Clients.shutdownInBackground("orderly " + group, c::shutdown);
        }
    }

    @Test
    void eachOrderIsConsumedInSendOrderAcrossManyQueues() throws Exception {
        String topic = Compat.unique("order-parts");
        env.createTopic(topic, 8, 8, PERM_RW);
        String group = Compat.unique("cg-order-parts");
        OrderLog log = new OrderLog();
        DefaultMQPushConsumer a = FeatureClients.orderly(env.namesrvAddr(), group, "A", topic, "*", log.listener("A"));
        DefaultMQPushConsumer b = FeatureClients.orderly(env.namesrvAddr(), group, "B", topic, "*", log.listener("B"));
        try {
            a.start();
            b.start();
            Map<String, DefaultMQPushConsumer> both = new LinkedHashMap<>();
            both.put("A", a);
            both.put("B", b);
            awaitLockedSplit(topic, group, both, 8);
            Map<String, Set<String>> locked = new TreeMap<>();
            both.forEach((label, c) -> locked.put(label, FeatureClients.lockedQueues(c, topic)));

            // 16 orders of 25 messages, interleaved: order i goes to queue i % 8
            List<OrderMsg> sent = new ArrayList<>();
            Map<Integer, List<Long>> offsetsByQueue = new TreeMap<>();
            for (int seq = 0; seq < 25; seq++) {
                for (int o = 0; o < 16; o++) {
                    OrderMsg m = new OrderMsg("order-" + o, o, seq);
                    SendResult r = sendOrdered(producer, topic, m);
                    assertEquals(o % 8, r.getMessageQueue().getQueueId(),
                        "queue MessageQueueSelector chose for " + m.key());
                    offsetsByQueue.computeIfAbsent(o % 8, q -> new ArrayList<>()).add(r.getQueueOffset());
                    sent.add(m);
                }
            }
            offsetsByQueue.forEach((q, offsets) -> assertEquals(
                java.util.stream.LongStream.range(0, offsets.size()).boxed().toList(), offsets,
                "queue offsets SendResult reported for queue " + q));
            awaitAllSeen("partitioned order", log, sent);
            Wait.until("both consumers to finish what they pulled", Duration.ofSeconds(10),
                () -> Clients.pending(a, topic) + Clients.pending(b, topic), n -> n == 0);

            List<Seen> seen = log.all();
            OrderCheck result = check(seen, sent);
            result.assertOrdered("two orderly consumers of a stable group");
            assertEquals(0, result.duplicates(), "duplicate deliveries in a stable group: " + result.duplicatesByConsumer());
            Map<String, List<Integer>> seqsByOrder = new TreeMap<>();
            seen.forEach(s -> seqsByOrder.computeIfAbsent(s.orderId(), k -> new ArrayList<>()).add(s.seq()));
            for (int o = 0; o < 16; o++) {
                assertEquals(java.util.stream.IntStream.range(0, 25).boxed().toList(), seqsByOrder.get("order-" + o),
                    "sequence numbers of order-" + o + " as the listeners saw them");
            }
            // each queue went to the consumer that had locked it
            for (Seen s : seen) {
                String q = env.brokerName() + ":" + s.queueId();
                assertTrue(locked.get(s.consumer()).contains(q), s.key() + " (queue " + s.queueId() + ") consumed by "
                    + s.consumer() + ", which had locked " + locked.get(s.consumer()));
            }
            report("partitioned order: locked %s; A consumed %d, B consumed %d", locked, log.countBy("A"),
                log.countBy("B"));
        } finally {
            Clients.shutdownAll(List.of(a::shutdown, b::shutdown), 15_000);
        }
    }

    @Test
    void orderPerOrderIdHoldsWhileASecondConsumerJoins() throws Exception {
        String topic = Compat.unique("order-join");
        env.createTopic(topic, 8, 8, PERM_RW);
        String group = Compat.unique("cg-order-join");
        OrderLog log = new OrderLog();
        DefaultMQPushConsumer a = FeatureClients.orderly(env.namesrvAddr(), group, "A", topic, "*", log.listener("A"));
        DefaultMQPushConsumer b = FeatureClients.orderly(env.namesrvAddr(), group, "B", topic, "*", log.listener("B"));
        List<OrderMsg> acked = new CopyOnWriteArrayList<>();
        List<String> failures = new CopyOnWriteArrayList<>();
        Map<String, Integer> queueOfOrder = new java.util.concurrent.ConcurrentHashMap<>();
        List<String> wrongQueue = new CopyOnWriteArrayList<>();
        int[] sentBeforeJoin = {0};
        try {
            a.start();
            awaitLockedSplit(topic, group, Map.of("A", a), 8);

            java.util.concurrent.atomic.AtomicBoolean stop = new java.util.concurrent.atomic.AtomicBoolean();
            Thread sender = new Thread(() -> {
                for (int seq = 0; !stop.get(); seq++) {
                    for (int o = 0; o < 16; o++) {
                        OrderMsg m = new OrderMsg("order-" + o, o, seq);
                        try {
                            SendResult r = sendOrdered(producer, topic, m);
                            acked.add(m);
                            Integer before = queueOfOrder.putIfAbsent(m.orderId(), r.getMessageQueue().getQueueId());
                            if (before != null && before != r.getMessageQueue().getQueueId()) {
                                wrongQueue.add(m.key() + " went to queue " + r.getMessageQueue().getQueueId()
                                    + ", earlier messages of its order to " + before);
                            }
                        } catch (Throwable e) {
                            failures.add(m.key() + ": " + e);
                            // a gap in an order would make the order check fail for the wrong reason
                            return;
                        }
                        Wait.sleep(3);
                    }
                }
            }, "compat-order-sender");
            sender.setDaemon(true);
            sender.start();
            try {
                Wait.until("150 ordered sends before the second consumer joins", Duration.ofSeconds(30),
                    () -> acked.size(), n -> n >= 150 || !failures.isEmpty());
                sentBeforeJoin[0] = acked.size();
                b.start();
                Map<String, DefaultMQPushConsumer> both = new LinkedHashMap<>();
                both.put("A", a);
                both.put("B", b);
                awaitLockedSplit(topic, group, both, 8);
                Wait.until("B to consume messages of the queues it took over", CONSUME_TIMEOUT,
                    () -> log.countBy("B"), n -> n >= 20);
                int atBalance = acked.size();
                Wait.until("150 more ordered sends after the rebalance", Duration.ofSeconds(30),
                    () -> acked.size() - atBalance, n -> n >= 150 || !failures.isEmpty());
            } finally {
                stop.set(true);
                sender.join(10_000);
            }
            assertEquals(List.of(), failures, "ordered sends that failed");
            assertEquals(List.of(), wrongQueue, "orders whose messages went to different queues");
            List<OrderMsg> sent = new ArrayList<>(acked);
            awaitAllSeen("order while B joins", log, sent);
            Wait.until("both consumers to finish what they pulled", Duration.ofSeconds(10),
                () -> Clients.pending(a, topic) + Clients.pending(b, topic), n -> n == 0);

            OrderCheck result = check(log.all(), sent);
            report("order while a consumer joins: %d sent (%d before B joined); A consumed %d, B consumed %d; "
                    + "%d duplicate deliveries (allowed around a rebalance) %s", sent.size(), sentBeforeJoin[0],
                log.countBy("A"), log.countBy("B"), result.duplicates(), result.duplicatesByConsumer());
            result.assertOrdered("orderly consumers while B joins");
            assertFalse(log.countBy("B") == 0, "B consumed nothing after joining");
        } finally {
            Clients.shutdownAll(List.of(a::shutdown, b::shutdown), 15_000);
        }
    }
}
