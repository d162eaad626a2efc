package dev.ferrocket.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.stream.Collectors;
import org.apache.rocketmq.client.consumer.DefaultMQPullConsumer;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageConst;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;
import org.apache.rocketmq.tools.admin.DefaultMQAdminExt;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Delay levels: {@code Message.setDelayTimeLevel(n)} parks a message in SCHEDULE_TOPIC_XXXX (queue
 * n-1, REAL_TOPIC/REAL_QID/DELAY properties) until its store time + the level's delay, then the broker
 * stores it in its real topic and queue. Checked with a custom {@code messageDelayLevel} table (levels
 * 1..3 and a level beyond the table, which the Java store clamps to the highest) and with the default
 * table across a clean broker restart.
 */
@ExtendWith(BrokerLogsOnFailure.class)
class DelayLevelTest {
    static final int PERM_RW = 6;
    static final String SCHEDULE_TOPIC = "SCHEDULE_TOPIC_XXXX";
    /** How late a delayed message may become visible / be received after it is due. */
    static final long LATE_MILLIS = 1_000;
    private final Generation gen = Generation.current();

    void report(String format, Object... args) {
        System.out.printf("[compat %s delay] %s%n", gen.tag(), String.format(format, args));
    }

    /** A delayed send: the level asked for, the level the store uses (clamped), its delay, the result. */
    record Delayed(String key, int level, int effectiveLevel, long delayMillis, SendResult result) {
    }

    /** One receipt by the push consumer, with the wall-clock time of the listener call. */
    record Received(MessageExt message, long atMillis) {
    }

    /** The SCHEDULE_TOPIC_XXXX record a delayed send wrote; returns when it is due. */
    static long checkScheduledRecord(DefaultMQAdminExt admin, String topic, Delayed d) throws Exception {
        MessageExt s = admin.viewMessage(SCHEDULE_TOPIC, d.result().getOffsetMsgId());
        String what = "record of " + d.key() + " (level " + d.level() + ") viewed by its offsetMsgId "
            + d.result().getOffsetMsgId();
        assertEquals(SCHEDULE_TOPIC, s.getTopic(), "topic of the " + what);
        assertEquals(d.effectiveLevel() - 1, s.getQueueId(), "queue of the " + what + " (level - 1)");
        assertEquals(topic, s.getProperty(MessageConst.PROPERTY_REAL_TOPIC), "REAL_TOPIC of the " + what);
        assertEquals(Integer.toString(d.result().getMessageQueue().getQueueId()),
            s.getProperty(MessageConst.PROPERTY_REAL_QUEUE_ID), "REAL_QID of the " + what);
        assertEquals(Integer.toString(d.effectiveLevel()), s.getProperty(MessageConst.PROPERTY_DELAY_TIME_LEVEL),
            "DELAY of the " + what);
        assertEquals(d.key(), s.getKeys(), "KEYS of the " + what);
        return s.getStoreTimestamp() + d.delayMillis();
    }

    /** The message as delivered to its real topic: same id, queue, body and keys, no DELAY property. */
    static void checkDelivered(String topic, Delayed d, MessageExt m) {
        String what = d.key() + " (level " + d.level() + ") as delivered";
        assertEquals(topic, m.getTopic(), "topic of " + what);
        assertEquals(d.result().getMessageQueue().getQueueId(), m.getQueueId(),
            "queue of " + what + " (the queue the producer chose, REAL_QID)");
        assertEquals(d.result().getMsgId(), m.getMsgId(), "msgId (UNIQ_KEY) of " + what);
        assertEquals("body-" + d.key(), new String(m.getBody(), StandardCharsets.UTF_8), "body of " + what);
        assertNull(m.getProperty(MessageConst.PROPERTY_DELAY_TIME_LEVEL), "DELAY property of " + what);
    }

    static Delayed sendDelayed(DefaultMQProducer p, String topic, int queueId, String key, int level,
                               int effectiveLevel, long delayMillis) throws Exception {
        Message m = Clients.message(topic, "TagD", key, "body-" + key);
        if (level > 0) {
            m.setDelayTimeLevel(level);
        }
        SendResult r = FeatureClients.ok(p.send(m, new MessageQueue(topic, BrokerDeployment.BROKER_NAME, queueId)),
            "send of " + key);
        return new Delayed(key, level, effectiveLevel, delayMillis, r);
    }

    @Test
    void customDelayLevelsDeliverNoEarlierThanDueAndWithinASecond() throws Exception {
        try (BrokerDeployment env = BrokerDeployment.start(BrokerDeployment.Mode.STANDALONE, "delay-custom",
            Map.of("messageDelayLevel", "1s 2s 3s"))) {
            DefaultMQAdminExt admin = env.admin();
            String topic = Compat.unique("delay");
            env.createTopic(topic, 4, 4, PERM_RW);
            DefaultMQProducer producer = Clients.producer(env.namesrvAddr());
            Map<String, List<Received>> received = new ConcurrentHashMap<>();
            DefaultMQPushConsumer c = Clients.push(env.namesrvAddr(), Compat.unique("cg-delay"), "delay", topic, "*",
                (msgs, context) -> {
                    long now = System.currentTimeMillis();
                    msgs.forEach(m -> received.computeIfAbsent(m.getKeys(), k -> new CopyOnWriteArrayList<>())
                        .add(new Received(m, now)));
                    return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
                });
            try {
                c.start();
                Wait.until("the consumer to hold the 4 queues of " + topic, Duration.ofSeconds(40), () -> {
                    env.assertAlive();
                    return Clients.allocated(c, topic).size();
                }, n -> n == 4);
                FeatureClients.heartbeat(c);

                // level -> delay in the table "1s 2s 3s"; level 5 is beyond it: the store clamps it to 3
                List<Delayed> sent = new ArrayList<>();
                int i = 0;
                for (int[] lv : new int[][] {{1, 1, 1000}, {2, 2, 2000}, {3, 3, 3000}, {5, 3, 3000}}) {
                    for (int n = 0; n < 2; n++, i++) {
                        sent.add(sendDelayed(producer, topic, i % 4, "delay-L" + lv[0] + "-" + n, lv[0], lv[1], lv[2]));
                    }
                }
                long plainSentAt = System.currentTimeMillis();
                Delayed plain = sendDelayed(producer, topic, 0, "delay-none", 0, 0, 0);

                Map<String, Long> due = new LinkedHashMap<>();
                for (Delayed d : sent) {
                    due.put(d.key(), checkScheduledRecord(admin, topic, d));
                }
                Set<String> keys = sent.stream().map(Delayed::key).collect(Collectors.toCollection(TreeSet::new));
                keys.add(plain.key());
                Wait.until("all " + keys.size() + " messages to be delivered", Duration.ofSeconds(20), () -> {
                    env.assertAlive();
                    Set<String> missing = new TreeSet<>(keys);
                    missing.removeAll(received.keySet());
                    return missing;
                }, Set::isEmpty);
                Wait.until("the consumer to finish what it pulled", Duration.ofSeconds(10),
                    () -> Clients.pending(c, topic), n -> n == 0);

                Received first = received.get(plain.key()).get(0);
                assertTrue(first.message().getStoreTimestamp() - plainSentAt < LATE_MILLIS,
                    "a message without delay was stored " + (first.message().getStoreTimestamp() - plainSentAt)
                        + " ms after it was sent");
                for (Delayed d : sent) {
                    List<Received> got = received.get(d.key());
                    assertEquals(1, got.size(), "deliveries of " + d.key());
                    MessageExt m = got.get(0).message();
                    checkDelivered(topic, d, m);
                    long dueAt = due.get(d.key());
                    long storedLate = m.getStoreTimestamp() - dueAt;
                    long receivedLate = got.get(0).atMillis() - dueAt;
                    report("%s (level %d -> %d s): stored in its topic %+d ms, received %+d ms after due", d.key(),
                        d.level(), d.delayMillis() / 1000, storedLate, receivedLate);
                    assertTrue(storedLate >= 0, d.key() + " (level " + d.level() + ", " + d.delayMillis()
                        + " ms) was stored in " + topic + " " + (-storedLate) + " ms before it was due");
                    assertTrue(storedLate <= LATE_MILLIS, d.key() + " (level " + d.level() + ", " + d.delayMillis()
                        + " ms) was stored in " + topic + " " + storedLate + " ms after it was due");
                    assertTrue(receivedLate >= 0, d.key() + " was received " + (-receivedLate) + " ms before it was due");
                    assertTrue(receivedLate <= LATE_MILLIS, d.key() + " (level " + d.level() + ", " + d.delayMillis()
                        + " ms) was received " + receivedLate + " ms after it was due");
                }
            } finally {
                Clients.shutdownInBackground("delay consumer", c::shutdown);
                Clients.shutdownInBackground("delay producer", producer::shutdown);
            }
        }
    }

    @Test
    void defaultDelayLevelsSurviveACleanBrokerRestartAndDeliverOnce() throws Exception {
        try (BrokerDeployment env = BrokerDeployment.start(BrokerDeployment.Mode.STANDALONE, "delay-restart", Map.of())) {
            DefaultMQAdminExt admin = env.admin();
            String topic = Compat.unique("delay-restart");
            env.createTopic(topic, 2, 2, PERM_RW);
            DefaultMQProducer producer = Clients.producer(env.namesrvAddr());
            DefaultMQPullConsumer reader = Clients.pull(env.namesrvAddr(), Compat.unique("reader"));
            DefaultMQPullConsumer reader2 = null;
            try {
                // default table "1s 5s 10s ...": levels 1, 2, 3
                List<Delayed> sent = List.of(
                    sendDelayed(producer, topic, 0, "restart-L1", 1, 1, 1_000),
                    sendDelayed(producer, topic, 1, "restart-L2", 2, 2, 5_000),
                    sendDelayed(producer, topic, 0, "restart-L3", 3, 3, 10_000));
                Map<String, Long> due = new LinkedHashMap<>();
                for (Delayed d : sent) {
                    due.put(d.key(), checkScheduledRecord(admin, topic, d));
                }
                Map<String, Delayed> byKey = sent.stream().collect(Collectors.toMap(Delayed::key, d -> d));

                List<MessageExt> beforeStop = Wait.until("restart-L1 (1 s) to be delivered to " + topic,
                    Duration.ofSeconds(10), () -> {
                        env.assertAlive();
                        return FeatureClients.readTopic(reader, topic);
                    }, l -> l.stream().anyMatch(m -> "restart-L1".equals(m.getKeys())));
                long stoppingAt = System.currentTimeMillis();
                assertEquals(List.of("restart-L1"), beforeStop.stream().map(MessageExt::getKeys).toList(),
                    "messages in " + topic + " " + (stoppingAt - due.get("restart-L1")) + " ms after restart-L1 was due");
                MessageExt l1 = beforeStop.get(0);
                checkDelivered(topic, byKey.get("restart-L1"), l1);
                long l1Late = l1.getStoreTimestamp() - due.get("restart-L1");
                assertTrue(l1Late >= 0 && l1Late <= LATE_MILLIS, "restart-L1 (1 s) stored " + l1Late
                    + " ms after it was due");
                assertTrue(stoppingAt < due.get("restart-L2") - 1_000,
                    "the broker would be stopped too late to test anything: restart-L2 is due in "
                        + (due.get("restart-L2") - stoppingAt) + " ms");

                int exit = env.stopBroker();
                assertEquals(0, exit, "exit code of the broker after SIGTERM");
                env.startBroker();
                long restartedAt = System.currentTimeMillis();
                report("broker stopped %d ms before restart-L2 was due, serving again %d ms before", due.get("restart-L2")
                    - stoppingAt, due.get("restart-L2") - restartedAt);

                reader2 = Clients.pull(env.namesrvAddr(), Compat.unique("reader-after"));
                DefaultMQPullConsumer r2 = reader2;
                List<MessageExt> all = Wait.until("restart-L2 (5 s) and restart-L3 (10 s) to be delivered after the restart",
                    Duration.ofMillis(Math.max(0, due.get("restart-L3") - System.currentTimeMillis()) + 10_000), () -> {
                        env.assertAlive();
                        return FeatureClients.readTopic(r2, topic);
                    }, l -> l.stream().map(MessageExt::getKeys).collect(Collectors.toSet())
                        .containsAll(List.of("restart-L2", "restart-L3")));
                for (MessageExt m : all) {
                    Delayed d = byKey.get(m.getKeys());
                    if (d == null || d.level() == 1) {
                        continue;
                    }
                    checkDelivered(topic, d, m);
                    long dueAt = due.get(d.key());
                    long late = m.getStoreTimestamp() - Math.max(dueAt, restartedAt);
                    report("%s (level %d, %d s): stored in its topic %+d ms after due", d.key(), d.level(),
                        d.delayMillis() / 1000, m.getStoreTimestamp() - dueAt);
                    assertTrue(m.getStoreTimestamp() >= dueAt, d.key() + " was stored " + (dueAt - m.getStoreTimestamp())
                        + " ms before it was due");
                    assertTrue(late <= LATE_MILLIS, d.key() + " was stored " + late + " ms after it was due (or after the"
                        + " restart, if that was later)");
                }

                // nothing is delivered twice: wait past the last due time and read the whole topic again
                long settle = due.get("restart-L3") + 2_000;
                Wait.until("2 s past the last due time", Duration.ofSeconds(15),
                    () -> System.currentTimeMillis() >= settle);
                List<Deliveries.Delivery> stored = new ArrayList<>();
                Deliveries d = new Deliveries();
                d.add("reader", FeatureClients.readTopic(r2, topic));
                stored.addAll(d.all());
                List<Deliveries.Sent> expected = sent.stream()
                    .map(s -> new Deliveries.Sent(topic, s.key(), "TagD", "body-" + s.key())).toList();
                assertEquals(0, Deliveries.assertExactly("delayed messages in " + topic + " after the restart",
                    expected, stored), "delayed messages delivered to " + topic + " more than once");
            } finally {
                Clients.shutdownInBackground("delay producer", producer::shutdown);
                Clients.shutdownInBackground("reader", reader::shutdown);
                if (reader2 != null) {
                    Clients.shutdownInBackground("reader2", reader2::shutdown);
                }
            }
        }
    }
}
