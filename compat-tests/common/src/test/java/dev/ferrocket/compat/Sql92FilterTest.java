package dev.ferrocket.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.IntPredicate;
import java.util.stream.Collectors;
import java.util.stream.IntStream;

import org.apache.rocketmq.client.consumer.DefaultMQPullConsumer;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.MessageSelector;
import org.apache.rocketmq.client.consumer.PullResult;
import org.apache.rocketmq.client.consumer.PullStatus;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.exception.MQBrokerException;
import org.apache.rocketmq.client.exception.MQClientException;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * SQL92 selectors ({@code MessageSelector.bySql}) against a ferrocket broker with
 * {@code enablePropertyFilter=true}: every operator and literal type over a corpus of messages with
 * user properties and tags, read with the pull consumer (the subscription travels in each pull) and
 * with a push consumer (the subscription comes from its heartbeat; its pulls are held and woken by
 * arrivals); a selector that does not parse; and the default broker, which refuses SQL92.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@ExtendWith(BrokerLogsOnFailure.class)
class Sql92FilterTest {
    static final int QUEUES = 2;
    static final int COUNT = 40;
    static final int PERM_RW = 6;
    static final int SUBSCRIPTION_PARSE_FAILED = 23;
    static final int SYSTEM_ERROR = 1;

    BrokerDeployment env;
    DefaultMQProducer producer;
    DefaultMQPullConsumer puller;
    String topic;

    @BeforeAll
    void setUp() throws Exception {
        env = BrokerDeployment.start(BrokerDeployment.Mode.STANDALONE, "sql92", Map.of("enablePropertyFilter", "true"));
        producer = Clients.producer(env.namesrvAddr());
        puller = Clients.pull(env.namesrvAddr(), Compat.unique("cg-sql-pull"));
        topic = Compat.unique("sql");
        env.createTopic(topic, QUEUES, QUEUES, PERM_RW);
        for (int i = 0; i < COUNT; i++) {
            assertEquals(SendStatus.SEND_OK, producer.send(corpusMessage(topic, i),
                new MessageQueue(topic, env.brokerName(), i % QUEUES)).getSendStatus());
        }
        assertEquals(COUNT / QUEUES, puller.maxOffset(new MessageQueue(topic, env.brokerName(), 0)));
        Clients.heartbeat(puller, env.brokerName());
    }

    @AfterAll
    void tearDown() {
        List<Runnable> stops = new ArrayList<>();
        if (producer != null) {
            stops.add(producer::shutdown);
        }
        if (puller != null) {
            stops.add(puller::shutdown);
        }
        Clients.shutdownAll(stops, 10_000);
        if (env != null) {
            env.close();
        }
    }

    static String tagOf(int i) {
        return switch (i % 4) {
            case 0 -> "TagA";
            case 1 -> "TagB";
            case 2 -> "TagC";
            default -> null;
        };
    }

    /** Message i: a = i, s = "s" + i % 5, d = i / 4.0, flag = even, opt only for multiples of 3. */
    static Message corpusMessage(String topic, int i) {
        Message m = new Message(topic, tagOf(i), "k" + i, ("body-" + i).getBytes(StandardCharsets.UTF_8));
        m.putUserProperty("a", Integer.toString(i));
        m.putUserProperty("s", "s" + (i % 5));
        m.putUserProperty("d", Double.toString(i / 4.0));
        m.putUserProperty("flag", Boolean.toString(i % 2 == 0));
        if (i % 3 == 0) {
            m.putUserProperty("opt", "o" + i);
        }
        return m;
    }

    /** Keys of every message of {@code topic} that {@code selector} lets through, read with pulls. */
    Set<String> pullAll(String selector) throws Exception {
        Set<String> keys = new TreeSet<>();
        for (int q = 0; q < QUEUES; q++) {
            MessageQueue mq = new MessageQueue(topic, env.brokerName(), q);
            long max = puller.maxOffset(mq);
            long offset = 0;
            while (offset < max) {
                PullResult r = puller.pull(mq, MessageSelector.bySql(selector), offset, 32);
                if (r.getPullStatus() == PullStatus.FOUND) {
                    for (MessageExt m : r.getMsgFoundList()) {
                        keys.add(m.getKeys());
                    }
                } else {
                    assertEquals(PullStatus.NO_MATCHED_MSG, r.getPullStatus(), selector + " at " + mq + "@" + offset);
                }
                assertTrue(r.getNextBeginOffset() > offset, selector + ": no progress at " + mq + "@" + offset);
                offset = r.getNextBeginOffset();
            }
        }
        return keys;
    }

    /** A push consumer (clustering, from the first offset) with a SQL92 selector, not yet started. */
    static DefaultMQPushConsumer sqlPush(String namesrv, String label, String topic, String selector,
                                         java.util.function.Consumer<MessageExt> onMessage) throws Exception {
        DefaultMQPushConsumer c = new DefaultMQPushConsumer(Compat.unique("cg-" + label));
        c.setNamesrvAddr(namesrv);
        c.setInstanceName(Compat.unique("push-" + label));
        c.setConsumeFromWhere(org.apache.rocketmq.common.consumer.ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        c.subscribe(topic, MessageSelector.bySql(selector));
        c.registerMessageListener((org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently)
            (msgs, ctx) -> {
                msgs.forEach(onMessage);
                return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
            });
        return c;
    }

    static Set<String> keysWhere(IntPredicate p) {
        return IntStream.range(0, COUNT).filter(p).mapToObj(i -> "k" + i).collect(Collectors.toCollection(TreeSet::new));
    }

    @Test
    void everyOperatorAndTypeSelectsExactlyTheMatchingMessages() throws Exception {
        Map<String, IntPredicate> cases = new java.util.LinkedHashMap<>();
        cases.put("a > 30", i -> i > 30);
        cases.put("a >= 30 AND a <= 32", i -> i >= 30 && i <= 32);
        cases.put("a < 3 OR a = 39", i -> i < 3 || i == 39);
        cases.put("a <> 7 AND a < 10", i -> i < 10 && i != 7);
        cases.put("a BETWEEN 10 AND 12", i -> i >= 10 && i <= 12);
        cases.put("a NOT BETWEEN 2 AND 37", i -> i < 2 || i > 37);
        cases.put("a > 3000000000", i -> false);
        cases.put("a > -1 AND a < +2", i -> i < 2);
        cases.put("s = 's1'", i -> i % 5 == 1);
        cases.put("s IN ('s1', 's3')", i -> i % 5 == 1 || i % 5 == 3);
        cases.put("s NOT IN ('s1', 's3')", i -> i % 5 != 1 && i % 5 != 3);
        cases.put("s CONTAINS '2'", i -> i % 5 == 2);
        cases.put("s STARTSWITH 's' AND s ENDSWITH '4'", i -> i % 5 == 4);
        cases.put("d > 9.5", i -> i / 4.0 > 9.5);
        cases.put("d <= 0.5E0", i -> i / 4.0 <= 0.5);
        cases.put("flag = TRUE", i -> i % 2 == 0);
        cases.put("flag = FALSE", i -> i % 2 == 1);
        cases.put("opt IS NULL", i -> i % 3 != 0);
        cases.put("opt IS NOT NULL", i -> i % 3 == 0);
        cases.put("opt = 'o3' OR opt = 'o6'", i -> i == 3 || i == 6);
        cases.put("opt NOT CONTAINS '3'", i -> i % 3 == 0 && !("o" + i).contains("3"));
        cases.put("TAGS = 'TagA'", i -> i % 4 == 0);
        cases.put("TAGS IS NULL", i -> i % 4 == 3);
        cases.put("NOT (a < 38)", i -> i >= 38);
        cases.put("(a < 5 OR a > 35) AND TAGS IN ('TagA', 'TagB')", i -> (i < 5 || i > 35) && i % 4 <= 1);
        cases.put("missing > 1", i -> false);
        cases.put("missing IS NULL AND a = 5", i -> i == 5);
        // A string that is not a number compared with a number: an evaluation error, no match.
        cases.put("s > 1", i -> false);
        cases.put("TRUE", i -> true);
        for (Map.Entry<String, IntPredicate> c : cases.entrySet()) {
            assertEquals(keysWhere(c.getValue()), pullAll(c.getKey()), "selector: " + c.getKey());
        }
    }

    @Test
    void aSelectorThatDoesNotParseIsRefusedWithItsPosition() throws Exception {
        MessageQueue mq = new MessageQueue(topic, env.brokerName(), 0);
        MQBrokerException e = assertThrows(MQBrokerException.class,
            () -> puller.pull(mq, MessageSelector.bySql("a > 1 AND\n  b ! 2"), 0, 32));
        assertEquals(SUBSCRIPTION_PARSE_FAILED, e.getResponseCode(), e.toString());
        assertTrue(e.getErrorMessage().contains("line 2, column 5"), e.getErrorMessage());

        DefaultMQPushConsumer bad = sqlPush(env.namesrvAddr(), "sql-bad", topic, "a = NULL", m -> { });
        try {
            MQClientException ce = assertThrows(MQClientException.class, bad::start);
            assertEquals(SUBSCRIPTION_PARSE_FAILED, ce.getResponseCode(), ce.toString());
            assertTrue(ce.getMessage().contains("cannot be compared"), ce.getMessage());
        } finally {
            bad.shutdown();
        }
    }

    @Test
    void pushConsumerGetsOnlyMatchingMessagesIncludingOnesArrivingWhileItsPullIsHeld() throws Exception {
        String live = Compat.unique("sql-push");
        env.createTopic(live, QUEUES, QUEUES, PERM_RW);
        Map<String, Integer> got = new ConcurrentHashMap<>();
        DefaultMQPushConsumer c = sqlPush(env.namesrvAddr(), "sql-push", live, "a >= 20 AND TAGS IN ('TagA', 'TagB')",
            m -> got.merge(m.getKeys(), 1, Integer::sum));
        try {
            c.start();
            Wait.until("the SQL92 push consumer to hold both queues of " + live, Duration.ofSeconds(40),
                () -> Clients.allocated(c, live).size(), n -> n == QUEUES);
            // Half before its first pulls are held, half after: the second half wakes held pulls.
            for (int i = 0; i < COUNT; i++) {
                assertEquals(SendStatus.SEND_OK, producer.send(corpusMessage(live, i),
                    new MessageQueue(live, env.brokerName(), i % QUEUES)).getSendStatus());
                if (i == COUNT / 2) {
                    Wait.until("the push consumer to receive k20", Duration.ofSeconds(30),
                        () -> got.containsKey("k20"), b -> b);
                }
            }
            // Fences: a matching message last in each queue; once both arrived, everything before
            // them was offered.
            for (int q = 0; q < QUEUES; q++) {
                Message fence = corpusMessage(live, 36 + q);
                fence.setKeys("fence-" + q);
                assertEquals(SendStatus.SEND_OK,
                    producer.send(fence, new MessageQueue(live, env.brokerName(), q)).getSendStatus());
            }
            Wait.until("both fences", Duration.ofSeconds(60),
                () -> got.containsKey("fence-0") && got.containsKey("fence-1"), b -> b);
            Set<String> want = keysWhere(i -> i >= 20 && i % 4 <= 1);
            want.add("fence-0");
            want.add("fence-1");
            assertEquals(want, new TreeSet<>(got.keySet()));
            got.forEach((k, n) -> assertEquals(1, n, "deliveries of " + k));
        } finally {
            Clients.shutdownAll(List.of(c::shutdown), 15_000);
        }
    }

    @Test
    void theDefaultBrokerRefusesSql92AsJavaDoes() throws Exception {
        BrokerDeployment off = BrokerDeployment.start(BrokerDeployment.Mode.STANDALONE, "sql92-off", Map.of());
        DefaultMQPullConsumer p = null;
        try {
            String t = Compat.unique("sql-off");
            off.createTopic(t, 1, 1, PERM_RW);
            DefaultMQPushConsumer c = sqlPush(off.namesrvAddr(), "sql-off", t, "a > 1", m -> { });
            try {
                MQClientException e = assertThrows(MQClientException.class, c::start);
                assertEquals(SYSTEM_ERROR, e.getResponseCode(), e.toString());
                assertTrue(e.getMessage().contains("does not support consumer to filter message by SQL92"),
                    e.getMessage());
            } finally {
                c.shutdown();
            }
            p = Clients.pull(off.namesrvAddr(), Compat.unique("cg-sql-off-pull"));
            DefaultMQPullConsumer pull = p;
            assertEquals(0, pull.maxOffset(new MessageQueue(t, off.brokerName(), 0)));
            Clients.heartbeat(pull, off.brokerName());
            MQBrokerException e = assertThrows(MQBrokerException.class,
                () -> pull.pull(new MessageQueue(t, off.brokerName(), 0), MessageSelector.bySql("a > 1"), 0, 32));
            assertEquals(SYSTEM_ERROR, e.getResponseCode(), e.toString());
        } finally {
            if (p != null) {
                p.shutdown();
            }
            off.close();
        }
    }
}
