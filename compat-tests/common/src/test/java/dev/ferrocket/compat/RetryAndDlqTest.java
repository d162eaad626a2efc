package dev.ferrocket.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.exception.MQClientException;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.common.MixAll;
import org.apache.rocketmq.common.message.MessageConst;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;
import org.apache.rocketmq.tools.admin.DefaultMQAdminExt;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Retries and the dead-letter queue: a push consumer (clustering, {@code maxReconsumeTimes=2})
 * returning RECONSUME_LATER makes the client send the message back (CONSUMER_SEND_MSG_BACK); the
 * broker stores it in {@code %RETRY%<group>} with delay level 3 + reconsumeTimes and reconsumeTimes + 1,
 * and once reconsumeTimes reached the maximum (or the consumer asked for delay level -1) in
 * {@code %DLQ%<group>}, where the admin tools find it. The broker runs the delay table
 * {@code 1s 2s 3s 2s 1s ...}: level 3 = 3 s, level 4 = 2 s, so the retry intervals are distinguishable.
 */
@ExtendWith(BrokerLogsOnFailure.class)
class RetryAndDlqTest {
    static final int PERM_RW = 6;
    static final String DELAY_TABLE = "1s 2s 3s 2s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s";
    static final long LATE_MILLIS = 1_000;
    static final int MAX_RECONSUME = 2;
    private final Generation gen = Generation.current();
    private final FeatureGenerationApi fgen = FeatureGenerationApi.current();

    void report(String format, Object... args) {
        System.out.printf("[compat %s retry] %s%n", gen.tag(), String.format(format, args));
    }

    /** One listener call for one message. */
    record Attempt(String key, String topic, int reconsumeTimes, String msgId, String body, long atMillis,
                   Map<String, String> properties) {
    }

    @Test
    void reconsumeLaterRetriesWithGrowingReconsumeTimesThenDeadLetters() throws Exception {
        try (BrokerDeployment env = BrokerDeployment.start(BrokerDeployment.Mode.STANDALONE, "retry",
            Map.of("messageDelayLevel", DELAY_TABLE))) {
            DefaultMQAdminExt admin = env.admin();
            String topic = Compat.unique("retry");
            env.createTopic(topic, 2, 2, PERM_RW);
            String group = Compat.unique("cg-retry");
            String retryTopic = MixAll.getRetryTopic(group);
            String dlqTopic = MixAll.getDLQTopic(group);
            DefaultMQProducer producer = Clients.producer(env.namesrvAddr());

            // key -> behaviour: always fails / fails once / asks for no retry (delay level -1) / succeeds
            Map<String, List<Attempt>> attempts = new ConcurrentHashMap<>();
            DefaultMQPushConsumer c = Clients.push(env.namesrvAddr(), group, "retry", topic, "*", (msgs, context) -> {
                long now = System.currentTimeMillis();
                ConsumeConcurrentlyStatus status = ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
                for (MessageExt m : msgs) {
                    attempts.computeIfAbsent(m.getKeys(), k -> new CopyOnWriteArrayList<>()).add(new Attempt(m.getKeys(),
                        m.getTopic(), m.getReconsumeTimes(), m.getMsgId(), new String(m.getBody(), StandardCharsets.UTF_8),
                        now, new TreeMap<>(m.getProperties())));
                    String key = m.getKeys();
                    if (key.startsWith("always")) {
                        status = ConsumeConcurrentlyStatus.RECONSUME_LATER;
                    } else if (key.startsWith("once") && m.getReconsumeTimes() == 0) {
                        status = ConsumeConcurrentlyStatus.RECONSUME_LATER;
                    } else if (key.startsWith("nodelay")) {
                        context.setDelayLevelWhenNextConsume(-1);
                        status = ConsumeConcurrentlyStatus.RECONSUME_LATER;
                    }
                }
                return status;
            });
            c.setMaxReconsumeTimes(MAX_RECONSUME);
            try {
                c.start();
                Wait.until("the consumer to hold the 2 queues of " + topic + " and the queue of " + retryTopic,
                    Duration.ofSeconds(40), () -> {
                        env.assertAlive();
                        List<Integer> held = List.of(Clients.allocated(c, topic).size(), Clients.allocated(c, retryTopic).size());
                        if (!held.equals(List.of(2, 1))) {
                            // the retry topic's route appears after the consumer's first heartbeat; without a
                            // nudge the client picks it up at its next rebalance, 20 s later
                            FeatureClients.rebalanceNow(c);
                        }
                        return held;
                    }, l -> l.equals(List.of(2, 1)));
                FeatureClients.heartbeat(c);

                long begin = System.currentTimeMillis() - 60_000;
                Map<String, SendResult> sent = new LinkedHashMap<>();
                int q = 0;
                for (String key : List.of("always-0", "always-1", "once-0", "nodelay-0", "ok-0")) {
                    SendResult r = producer.send(Clients.message(topic, "TagR", key, "body-" + key),
                        new MessageQueue(topic, env.brokerName(), q++ % 2));
                    sent.put(key, FeatureClients.ok(r, "send of " + key));
                }

                // always-*: 1 + maxReconsumeTimes deliveries (reconsumeTimes 0, 1, 2), then the DLQ
                Wait.until("always-0/1 to be delivered 3 times, once-0 twice, nodelay-0 and ok-0 once",
                    Duration.ofSeconds(30), () -> {
                        env.assertAlive();
                        Map<String, Integer> n = new TreeMap<>();
                        sent.keySet().forEach(k -> n.put(k, attempts.getOrDefault(k, List.of()).size()));
                        return n;
                    }, n -> n.get("always-0") >= 3 && n.get("always-1") >= 3 && n.get("once-0") >= 2
                        && n.get("nodelay-0") >= 1 && n.get("ok-0") >= 1);

                // the DLQ holds always-0, always-1 and nodelay-0: 3 messages in its one queue
                MessageQueue dlq0 = new MessageQueue(dlqTopic, env.brokerName(), 0);
                long dlqMessages = Wait.until("3 messages in " + dlq0, Duration.ofSeconds(15), () -> {
                    env.assertAlive();
                    return admin.maxOffset(dlq0) - admin.minOffset(dlq0);
                }, n -> n >= 3);
                // nothing more arrives: a fourth delivery would come 1 s (level 5) after the third
                long lastAttempt = attempts.values().stream().flatMap(List::stream).mapToLong(Attempt::atMillis).max()
                    .orElseThrow();
                Wait.until("3 s after the last delivery", Duration.ofSeconds(10),
                    () -> System.currentTimeMillis() >= lastAttempt + 3_000);
                Map<String, List<Integer>> reconsumeTimes = new TreeMap<>();
                attempts.forEach((k, l) -> reconsumeTimes.put(k, l.stream().map(Attempt::reconsumeTimes).toList()));
                report("reconsumeTimes per delivery: %s", reconsumeTimes);
                assertEquals(List.of(0, 1, 2), reconsumeTimes.get("always-0"), "reconsumeTimes of the deliveries of always-0");
                assertEquals(List.of(0, 1, 2), reconsumeTimes.get("always-1"), "reconsumeTimes of the deliveries of always-1");
                assertEquals(List.of(0, 1), reconsumeTimes.get("once-0"), "reconsumeTimes of the deliveries of once-0");
                assertEquals(List.of(0), reconsumeTimes.get("nodelay-0"),
                    "reconsumeTimes of the deliveries of nodelay-0 (delay level -1: straight to the DLQ)");
                assertEquals(List.of(0), reconsumeTimes.get("ok-0"), "reconsumeTimes of the deliveries of ok-0");

                for (String key : List.of("always-0", "always-1", "once-0")) {
                    List<Attempt> l = attempts.get(key);
                    for (Attempt a : l) {
                        assertEquals(topic, a.topic(), "topic of delivery " + a.reconsumeTimes() + " of " + key
                            + " (the client restores it from RETRY_TOPIC)");
                        assertEquals(sent.get(key).getMsgId(), a.msgId(), "msgId of delivery " + a.reconsumeTimes() + " of " + key);
                        assertEquals("body-" + key, a.body(), "body of delivery " + a.reconsumeTimes() + " of " + key);
                    }
                    for (int i = 1; i < l.size(); i++) {
                        // delivery i comes from a send-back with delay level 3 + (i - 1): 3 s, then 2 s
                        long delay = i == 1 ? 3_000 : 2_000;
                        long gap = l.get(i).atMillis() - l.get(i - 1).atMillis();
                        report("%s: retry %d came %d ms after the previous delivery (delay level %d = %d ms)", key, i, gap,
                            2 + i, delay);
                        assertTrue(gap >= delay, key + ": retry " + i + " came " + gap + " ms after the previous delivery, "
                            + "before its delay level " + (2 + i) + " (" + delay + " ms)");
                        assertTrue(gap <= delay + LATE_MILLIS, key + ": retry " + i + " came " + gap + " ms after the "
                            + "previous delivery; delay level " + (2 + i) + " is " + delay + " ms");
                        assertEquals(topic, l.get(i).properties().get(MessageConst.PROPERTY_RETRY_TOPIC),
                            "RETRY_TOPIC of retry " + i + " of " + key);
                    }
                }

                // %DLQ%<group>: one queue, route at the NameServer, what the admin tools read
                Generation.Route dlqRoute = NamesrvQueries.route(admin, dlqTopic);
                Generation.QueueView dlqQueues = dlqRoute.queueOf(env.brokerName());
                assertNotNull(dlqQueues, "route of " + dlqTopic + ": " + dlqRoute);
                assertEquals(1, dlqQueues.readQueueNums(), "read queues of " + dlqTopic);
                assertEquals(1, dlqQueues.writeQueueNums(), "write queues of " + dlqTopic);
                // a 5.x broker (ferrocket answers as V5_3_3) creates it READ|WRITE; a 4.9 broker WRITE only
                assertEquals(PERM_RW, dlqQueues.perm(), "perm of " + dlqTopic + " as a 5.x Java broker creates it");
                assertEquals(3, dlqMessages, "messages in " + dlq0);

                long end = System.currentTimeMillis() + 60_000;
                Map<String, Integer> expectReconsume = Map.of("always-0", MAX_RECONSUME + 1, "always-1", MAX_RECONSUME + 1,
                    "nodelay-0", 1);
                // ORIGIN_MESSAGE_ID: the broker sets it on the first send-back to the offset id of the stored
                // original (AbstractSendMessageProcessor: msgExt.getMsgId() of lookMessageByOffset), and keeps it
                Map<String, String> originIds = new TreeMap<>();
                Map<String, String> expectedOriginIds = new TreeMap<>();
                for (String key : List.of("always-0", "always-1", "once-0")) {
                    List<Attempt> l = attempts.get(key);
                    for (int i = 1; i < l.size(); i++) {
                        originIds.put("retry " + i + " of " + key, l.get(i).properties().get(MessageConst.PROPERTY_ORIGIN_MESSAGE_ID));
                        expectedOriginIds.put("retry " + i + " of " + key, sent.get(key).getOffsetMsgId());
                    }
                }
                for (var e : expectReconsume.entrySet()) {
                    String key = e.getKey();
                    List<MessageExt> found = fgen.queryMsgByKey(admin, BrokerDeployment.CLUSTER, dlqTopic, key, 32, begin, end);
                    assertEquals(1, found.size(), "messages found in " + dlqTopic + " by key " + key + ": " + found);
                    MessageExt m = found.get(0);
                    String what = key + " in " + dlqTopic;
                    assertEquals(dlqTopic, m.getTopic(), "topic of " + what);
                    assertEquals("body-" + key, new String(m.getBody(), StandardCharsets.UTF_8), "body of " + what);
                    assertEquals("TagR", m.getTags(), "tags of " + what);
                    assertEquals(e.getValue(), m.getReconsumeTimes(), "reconsumeTimes of " + what);
                    assertEquals(sent.get(key).getMsgId(), m.getMsgId(), "msgId (UNIQ_KEY) of " + what);
                    assertEquals(topic, m.getProperty(MessageConst.PROPERTY_RETRY_TOPIC), "RETRY_TOPIC of " + what);
                    originIds.put(what, m.getProperty(MessageConst.PROPERTY_ORIGIN_MESSAGE_ID));
                    expectedOriginIds.put(what, sent.get(key).getOffsetMsgId());
                    // and by the id the query printed: VIEW_MESSAGE_BY_ID on the DLQ record
                    String offsetId = ((org.apache.rocketmq.common.message.MessageClientExt) m).getOffsetMsgId();
                    MessageExt viewed = admin.viewMessage(dlqTopic, offsetId);
                    assertEquals(dlqTopic, viewed.getTopic(), "topic of " + what + " viewed by " + offsetId);
                    assertEquals("body-" + key, new String(viewed.getBody(), StandardCharsets.UTF_8),
                        "body of " + what + " viewed by " + offsetId);
                }
                for (String key : List.of("once-0", "ok-0")) {
                    assertThrows(MQClientException.class,
                        () -> fgen.queryMsgByKey(admin, BrokerDeployment.CLUSTER, dlqTopic, key, 32, begin, end),
                        key + " was consumed successfully, yet it is in " + dlqTopic);
                }
                assertEquals(expectedOriginIds, originIds, "ORIGIN_MESSAGE_ID of the retried and dead-lettered messages "
                    + "(expected: the offset msgId of the original message)");
            } finally {
                Clients.shutdownInBackground("retry consumer", c::shutdown);
                Clients.shutdownInBackground("retry producer", producer::shutdown);
            }
        }
    }
}
