package dev.ferrocket.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Collectors;
import org.apache.rocketmq.client.consumer.DefaultMQPullConsumer;
import org.apache.rocketmq.client.exception.MQBrokerException;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Timer messages (5.x {@code setDelayTimeSec} / {@code setDelayTimeMs} / {@code setDeliverTimeMs};
 * with 4.9 the same properties set as user properties): parked on {@code rmq_sys_wheel_timer}
 * (REAL_TOPIC, REAL_QID, TIMER_OUT_MS), stored on their own queue when due, never before, within the
 * precision (1 s), once; across a clean restart and a kill -9 of a SYNC_FLUSH broker, with the timers
 * that came due while it was down delivered right after start. Long timers: the roll window is
 * scaled down to 5 slots, so a 10 s timer takes the path a 3-day timer takes with the default 2-day
 * window (re-entered into the wheel from a nearer slot).
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@ExtendWith(BrokerLogsOnFailure.class)
class TimerMessageTest {
    static final int PERM_RW = 6;
    static final String TIMER_TOPIC = "rmq_sys_wheel_timer";
    /** Precision (1 s: a timer fires at the first second boundary at or after its time) + processing. */
    static final long LATE_MILLIS = 2_000;
    private final Generation gen = Generation.current();
    private final FeatureGenerationApi api = FeatureGenerationApi.current();

    BrokerDeployment env;
    DefaultMQProducer producer;

    @BeforeAll
    void setUp() throws Exception {
        env = BrokerDeployment.start(BrokerDeployment.Mode.STANDALONE, "timers",
            Map.of("flushDiskType", "SYNC_FLUSH", "timerRollWindowSlot", "5"));
        producer = Clients.producer(env.namesrvAddr());
    }

    @AfterAll
    void tearDown() {
        if (producer != null) {
            Clients.shutdownInBackground("timer producer", producer::shutdown);
        }
        if (reader != null) {
            Clients.shutdownInBackground("timer reader", reader::shutdown);
        }
        if (env != null) {
            env.close();
        }
    }

    void report(String format, Object... args) {
        System.out.printf("[compat %s timer] %s%n", gen.tag(), String.format(format, args));
    }

    /**
     * A timer send: its key, when it is due (0: at once; for a relative delay the broker's clock at
     * receipt counts, so it is known between the time before and after the send), and the result.
     */
    record Timed(String key, long due, long dueLatest, int queueId, SendResult result) {
    }

    /** {@code due}: the absolute time asked for, or 0; relative delays compute their own. */
    Timed send(String topic, int queueId, String key, String property, long value, long due) throws Exception {
        Message m = Clients.message(topic, "TagTimer", key, "body-" + key);
        if (property != null) {
            api.setTimer(m, property, value);
        }
        long before = System.currentTimeMillis();
        SendResult r = FeatureClients.ok(producer.send(m, new MessageQueue(topic, env.brokerName(), queueId)),
            "send of " + key);
        long after = System.currentTimeMillis();
        long delay = "TIMER_DELAY_SEC".equals(property) ? value * 1000 : "TIMER_DELAY_MS".equals(property) ? value : -1;
        if (delay > 0) {
            return new Timed(key, before + delay, after + delay, queueId, r);
        }
        return new Timed(key, due, due, queueId, r);
    }

    /** The record a timer send wrote on the timer topic (viewed by its offset id). */
    void checkParked(String topic, Timed t) throws Exception {
        MessageExt s = env.admin().viewMessage(TIMER_TOPIC, t.result().getOffsetMsgId());
        String what = "timer record of " + t.key();
        assertEquals(TIMER_TOPIC, s.getTopic(), "topic of the " + what);
        assertEquals(0, s.getQueueId(), "queue of the " + what);
        assertEquals(topic, s.getProperty("REAL_TOPIC"), "REAL_TOPIC of the " + what);
        assertEquals(Integer.toString(t.queueId()), s.getProperty("REAL_QID"), "REAL_QID of the " + what);
        long slot = Long.parseLong(s.getProperty("TIMER_OUT_MS"));
        assertEquals(0, slot % 1000, "TIMER_OUT_MS of the " + what + " is a second boundary");
        assertTrue(slot < t.dueLatest() && slot + 1000 >= t.due(),
            "slot " + slot + " of the " + what + " due at " + t.due() + ".." + t.dueLatest());
    }

    /** Checks a delivered message against its send; returns how late it was stored. */
    long checkDelivered(String topic, Timed t, MessageExt m) {
        String what = t.key() + " as delivered";
        assertEquals(topic, m.getTopic(), "topic of " + what);
        assertEquals(t.queueId(), m.getQueueId(), "queue of " + what);
        assertEquals(t.result().getMsgId(), m.getMsgId(), "msgId (UNIQ_KEY) of " + what);
        assertEquals("body-" + t.key(), new String(m.getBody(), StandardCharsets.UTF_8), "body of " + what);
        assertEquals("TagTimer", m.getTags(), "tag of " + what);
        assertNull(m.getProperty("REAL_TOPIC"), "REAL_TOPIC of " + what);
        if (t.due() > 0) {
            assertNotNull(m.getProperty("TIMER_DEQUEUE_MS"), "TIMER_DEQUEUE_MS of " + what);
            long early = t.due() - m.getStoreTimestamp();
            assertTrue(early <= 0, what + " was stored " + early + " ms before it was due");
        }
        return m.getStoreTimestamp() - t.dueLatest();
    }

    static Map<String, List<MessageExt>> byKey(List<MessageExt> all) {
        return all.stream().collect(Collectors.groupingBy(MessageExt::getKeys, TreeMap::new, Collectors.toList()));
    }

    List<MessageExt> readUntil(DefaultMQPullConsumer reader, String topic, String what, Duration max, List<String> keys)
        throws Exception {
        return Wait.until(what, max, () -> {
            env.assertAlive();
            return FeatureClients.readTopic(reader, topic);
        }, l -> l.stream().map(MessageExt::getKeys).collect(Collectors.toSet()).containsAll(keys));
    }

    @Test
    void timersOfOneSecondTenSecondsAndAnAbsoluteTimeArriveWhenDueAndOnce() throws Exception {
        String topic = Compat.unique("timer");
        env.createTopic(topic, 4, 4, PERM_RW);
        DefaultMQPullConsumer reader = Clients.pull(env.namesrvAddr(), Compat.unique("timer-reader"));
        try {
            long now = System.currentTimeMillis();
            List<Timed> timers = List.of(
                send(topic, 0, "t-1s", "TIMER_DELAY_SEC", 1, 0),
                send(topic, 1, "t-10s", "TIMER_DELAY_MS", 10_000, 0),
                send(topic, 2, "t-abs", "TIMER_DELIVER_MS", now + 3_500, now + 3_500));
            List<Timed> atOnce = List.of(
                send(topic, 3, "t-zero", "TIMER_DELAY_SEC", 0, 0),
                send(topic, 3, "t-past", "TIMER_DELIVER_MS", now - 60_000, 0),
                send(topic, 3, "t-plain", null, 0, 0));
            for (Timed t : timers) {
                checkParked(topic, t);
            }
            List<MessageExt> first = readUntil(reader, topic, "the messages without a future time",
                Duration.ofSeconds(10), List.of("t-zero", "t-past", "t-plain"));
            assertTrue(first.stream().noneMatch(m -> m.getKeys().equals("t-10s")), "t-10s delivered early");

            List<String> all = new ArrayList<>();
            timers.forEach(t -> all.add(t.key()));
            atOnce.forEach(t -> all.add(t.key()));
            readUntil(reader, topic, "the timers", Duration.ofSeconds(30), all);
            // Settle past one more slot, then read everything again: nothing twice.
            long settle = System.currentTimeMillis() + 1_500;
            Wait.until("one more slot", Duration.ofSeconds(5), () -> System.currentTimeMillis() >= settle);
            Map<String, List<MessageExt>> got = byKey(FeatureClients.readTopic(reader, topic));
            assertEquals(new java.util.TreeSet<>(all), got.keySet(), "keys stored on " + topic);
            for (Timed t : timers) {
                assertEquals(1, got.get(t.key()).size(), "deliveries of " + t.key());
                MessageExt m = got.get(t.key()).get(0);
                long late = checkDelivered(topic, t, m);
                report("%s: stored %+d ms after due (TIMER_ROLL_TIMES=%s)", t.key(), late, m.getProperty("TIMER_ROLL_TIMES"));
                assertTrue(late <= LATE_MILLIS, t.key() + " was stored " + late + " ms after it was due");
            }
            assertNotNull(got.get("t-10s").get(0).getProperty("TIMER_ROLL_TIMES"),
                "a 10 s timer is past the 5 s roll window: it was rolled");
            checkTimerProgressAsJavaToolsReadIt();
            for (Timed t : atOnce) {
                assertEquals(1, got.get(t.key()).size(), "deliveries of " + t.key());
                checkDelivered(topic, t, got.get(t.key()).get(0));
                assertNull(got.get(t.key()).get(0).getProperty("TIMER_OUT_MS"), t.key() + " was not parked");
            }
        } finally {
            Clients.shutdownInBackground("timer reader", reader::shutdown);
        }
    }

    DefaultMQPullConsumer reader;

    DefaultMQPullConsumer reader() throws Exception {
        if (reader == null) {
            reader = Clients.pull(env.namesrvAddr(), Compat.unique("timer-max-reader"));
        }
        return reader;
    }

    /**
     * What a Java slave copies from its master every 3 s (GET_TIMER_CHECK_POINT, 60: the 56 bytes
     * of {@code timercheck}) and what {@code mqadmin brokerStatus} shows (timerReadBehind,
     * timerOffsetBehind), after the timers above were delivered.
     */
    void checkTimerProgressAsJavaToolsReadIt() throws Exception {
        try (BrokerRpc rpc = new BrokerRpc()) {
            var r = rpc.invoke(env.brokerAddr(), 60, Map.of(), null);
            assertEquals(0, r.getCode(), "GET_TIMER_CHECK_POINT: " + r.getRemark());
            assertEquals(56, r.getBody().length, "timercheck bytes");
            java.nio.ByteBuffer b = java.nio.ByteBuffer.wrap(r.getBody());
            long lastReadTimeMs = b.getLong(0);
            long now = System.currentTimeMillis();
            assertTrue(lastReadTimeMs % 1000 == 0 && lastReadTimeMs <= now && lastReadTimeMs > now - 60_000,
                "lastReadTimeMs " + lastReadTimeMs + " at " + now);
            assertTrue(b.getLong(16) >= 3, "lastTimerQueueOffset " + b.getLong(16) + ": three timers were entered");
        }
        var stats = env.admin().fetchBrokerRuntimeStats(env.brokerAddr()).getTable();
        assertTrue(stats.containsKey("timerReadBehind") && stats.containsKey("timerOffsetBehind"), stats.toString());
        assertEquals("0", stats.get("timerOffsetBehind"), "every timer message was entered into the wheel");
    }

    @Test
    void aTimerPastTheMaximumDelayIsRefusedAsIllegal() throws Exception {
        String topic = Compat.unique("timer-max");
        env.createTopic(topic, 1, 1, PERM_RW);
        Message m = Clients.message(topic, "TagTimer", "too-far", "body");
        api.setTimer(m, "TIMER_DELAY_SEC", 259_201);
        MQBrokerException e = assertThrows(MQBrokerException.class,
            () -> producer.send(m, new MessageQueue(topic, env.brokerName(), 0)));
        assertEquals(13, e.getResponseCode(), "MESSAGE_ILLEGAL: " + e.getErrorMessage());
        assertTrue(e.getErrorMessage().contains("max delay 259200000ms"), e.getErrorMessage());
        // A value that is not a number (no client API writes one; set under the API's back).
        Message notANumber = Clients.message(topic, "TagTimer", "nan", "body");
        org.apache.rocketmq.common.message.MessageAccessor.putProperty(notANumber, "TIMER_DELAY_SEC", "soon");
        MQBrokerException nan = assertThrows(MQBrokerException.class,
            () -> producer.send(notANumber, new MessageQueue(topic, env.brokerName(), 0)));
        assertEquals(13, nan.getResponseCode(), "MESSAGE_ILLEGAL: " + nan.getErrorMessage());
        assertEquals(0L, FeatureClients.readTopic(reader(), topic).size(), "nothing refused was stored on " + topic);
        Timed max = send(topic, 0, "max", "TIMER_DELAY_SEC", 259_000, 0);
        assertEquals(SendStatus.SEND_OK, max.result().getSendStatus(), "a delay within the maximum");
        checkParked(topic, max);
    }

    @Test
    @Tag("fault")
    void timersSurviveACleanRestartAndAKill9AndThoseDueMeanwhileComeAtStart() throws Exception {
        String topic = Compat.unique("timer-restart");
        env.createTopic(topic, 2, 2, PERM_RW);
        long now = System.currentTimeMillis();
        Timed early = send(topic, 0, "r-early", "TIMER_DELIVER_MS", now + 3_000, now + 3_000);
        Timed later = send(topic, 1, "r-later", "TIMER_DELIVER_MS", now + 16_000, now + 16_000);
        Timed pending = send(topic, 1, "r-pending", "TIMER_DELAY_SEC", 600, 0);

        assertEquals(0, env.stopBroker(), "exit code of the broker after SIGTERM");
        Wait.until("r-early to come due while the broker is down", Duration.ofSeconds(10),
            () -> System.currentTimeMillis() >= early.due() + 500);
        env.startBroker();
        long restartedAt = System.currentTimeMillis();
        DefaultMQPullConsumer reader = Clients.pull(env.namesrvAddr(), Compat.unique("timer-restart-reader"));
        try {
            List<MessageExt> got = readUntil(reader, topic, "r-early after the restart", Duration.ofSeconds(20),
                List.of("r-early"));
            MessageExt e = got.stream().filter(m -> m.getKeys().equals("r-early")).findFirst().orElseThrow();
            checkDelivered(topic, early, e);
            report("r-early: due while down, stored %d ms after the broker served again", e.getStoreTimestamp() - restartedAt);
            assertTrue(e.getStoreTimestamp() - restartedAt <= LATE_MILLIS,
                "r-early was stored " + (e.getStoreTimestamp() - restartedAt) + " ms after the restart");

            // Past the next checkpoint of the timer service, then kill -9 before r-later is due.
            long killAt = e.getStoreTimestamp() + 2_500;
            Wait.until("the checkpoint after r-early", Duration.ofSeconds(10), () -> System.currentTimeMillis() >= killAt);
            assertTrue(System.currentTimeMillis() < later.due() - 1_000,
                "too late to kill the broker before r-later is due");
            env.killBroker();
            Wait.until("r-later to come due while the broker is down", Duration.ofSeconds(20),
                () -> System.currentTimeMillis() >= later.due() + 500);
            env.startBroker();
            long againAt = System.currentTimeMillis();
            got = readUntil(reader, topic, "r-later after the kill -9", Duration.ofSeconds(20), List.of("r-later"));
            MessageExt l = got.stream().filter(m -> m.getKeys().equals("r-later")).findFirst().orElseThrow();
            checkDelivered(topic, later, l);
            assertTrue(l.getStoreTimestamp() - againAt <= LATE_MILLIS,
                "r-later was stored " + (l.getStoreTimestamp() - againAt) + " ms after the restart");

            long settle = System.currentTimeMillis() + 1_500;
            Wait.until("one more slot", Duration.ofSeconds(5), () -> System.currentTimeMillis() >= settle);
            Map<String, List<MessageExt>> all = byKey(FeatureClients.readTopic(reader, topic));
            assertEquals(List.of("r-early", "r-later"), new ArrayList<>(all.keySet()),
                "stored on " + topic + " (r-pending is due in 10 minutes)");
            assertEquals(1, all.get("r-early").size(), "deliveries of r-early");
            assertEquals(1, all.get("r-later").size(), "deliveries of r-later");
            checkParked(topic, pending);
        } finally {
            Clients.shutdownInBackground("timer restart reader", reader::shutdown);
        }
    }

    @Test
    void aBrokerWithTheWheelDisabledRefusesTimerMessages() throws Exception {
        try (BrokerDeployment off = BrokerDeployment.start(BrokerDeployment.Mode.STANDALONE, "timers-off",
            Map.of("timerWheelEnable", "false"))) {
            String topic = Compat.unique("timer-off");
            off.createTopic(topic, 1, 1, PERM_RW);
            DefaultMQProducer p = Clients.producer(off.namesrvAddr());
            try {
                Message m = Clients.message(topic, "TagTimer", "off", "body");
                api.setTimer(m, "TIMER_DELAY_SEC", 5);
                MQBrokerException e = assertThrows(MQBrokerException.class,
                    () -> p.send(m, new MessageQueue(topic, off.brokerName(), 0)));
                assertEquals(1, e.getResponseCode(), "SYSTEM_ERROR: " + e.getErrorMessage());
                assertTrue(e.getErrorMessage().contains("timerWheelEnable is false"), e.getErrorMessage());
                Message plain = Clients.message(topic, "TagTimer", "plain", "body");
                FeatureClients.ok(p.send(plain, new MessageQueue(topic, off.brokerName(), 0)), "a plain send");
            } finally {
                Clients.shutdownInBackground("timer-off producer", p::shutdown);
            }
        }
    }
}
