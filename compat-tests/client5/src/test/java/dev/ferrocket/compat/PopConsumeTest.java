package dev.ferrocket.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;
import org.apache.rocketmq.common.message.MessageRequestMode;
import org.apache.rocketmq.remoting.protocol.subscription.SubscriptionGroupConfig;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * POP consumption by the 5.3.1 remoting client: a push consumer with clientRebalance=false asks
 * the broker for its queues (QUERY_ASSIGNMENT 400) after mqadmin's setConsumeMode
 * (SET_MESSAGE_REQUEST_MODE 401) put the group in POP mode, then pops (200050), acks (200051)
 * and, for a RECONSUME_LATER, changes the invisible time (200053); the broker redelivers that
 * message through the POP retry topic with reconsumeTimes 1, under the original topic.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@ExtendWith(BrokerLogsOnFailure.class)
class PopConsumeTest {
    private DeploymentClients d;

    @BeforeAll
    void setUp() throws Exception {
        d = DeploymentClients.start(BrokerDeployment.Mode.STANDALONE, "pop");
    }

    @AfterAll
    void tearDown() {
        if (d != null) {
            d.close();
        }
    }

    @Test
    void aPopConsumerGetsEveryMessageOnceAndARetryComesBackOnce() throws Exception {
        String topic = Compat.unique("pop");
        d.env.createTopic(topic, 2, 2, 6);
        String group = Compat.unique("cg-pop");
        SubscriptionGroupConfig g = new SubscriptionGroupConfig();
        g.setGroupName(group);
        d.admin.createAndUpdateSubscriptionGroupConfig(d.env.brokerAddr(), g);
        d.admin.setMessageRequestMode(d.env.brokerAddr(), topic, group, MessageRequestMode.POP, 0, 5_000);
        for (int i = 0; i < 6; i++) {
            d.producer.send(Clients.message(topic, "TagA", "k" + i, "b" + i));
        }

        Map<String, List<Integer>> deliveries = new ConcurrentHashMap<>();
        List<String> topics = new CopyOnWriteArrayList<>();
        Map<String, List<String>> handles = new ConcurrentHashMap<>();
        DefaultMQPushConsumer c = Clients.push(d.env.namesrvAddr(), group, "pop", topic, "*", (msgs, ctx) -> {
            for (MessageExt m : msgs) {
                String body = new String(m.getBody(), StandardCharsets.UTF_8);
                deliveries.computeIfAbsent(body, k -> new CopyOnWriteArrayList<>()).add(m.getReconsumeTimes());
                topics.add(m.getTopic());
                // The receipt handle (ExtraInfoUtil); only a popped message has one.
                handles.computeIfAbsent(body, k -> new CopyOnWriteArrayList<>()).add(String.valueOf(m.getProperty("POP_CK")));
                if (body.equals("b3") && m.getReconsumeTimes() == 0) {
                    return ConsumeConcurrentlyStatus.RECONSUME_LATER;
                }
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        c.setClientRebalance(false);
        // Acked messages would come back after 5 s; the retry comes after the client's 10 s.
        c.setPopInvisibleTime(5_000);
        c.start();
        try {
            Wait.until("b3 redelivered", Duration.ofSeconds(60), () -> deliveries.getOrDefault("b3", List.of()),
                l -> l.size() >= 2);
            for (int i = 0; i < 6; i++) {
                List<Integer> times = deliveries.get("b" + i);
                List<Integer> expected = i == 3 ? List.of(0, 1) : List.of(0);
                assertEquals(expected, times, "reconsumeTimes of each delivery of b" + i + ": " + deliveries);
            }
            assertEquals(List.of(topic), topics.stream().distinct().toList(), "every message under the topic asked");
            // Popped, not pulled: every delivery has a handle; the retry's names the retry topic ("1").
            for (var e : handles.entrySet()) {
                for (String h : e.getValue()) {
                    assertEquals(8, h.split(" ").length, "handle of " + e.getKey() + ": " + h);
                }
            }
            assertEquals(List.of("0", "1"), handles.get("b3").stream().map(h -> h.split(" ")[4]).toList(),
                "retry marks of b3's handles: " + handles.get("b3"));
        } finally {
            c.shutdown();
        }
    }

    @Test
    void aKilledBrokerRedeliversNothingAckedAndLosesNothingUnacked() throws Exception {
        String topic = Compat.unique("popkill");
        d.env.createTopic(topic, 2, 2, 6);
        String group = Compat.unique("cg-popkill");
        SubscriptionGroupConfig g = new SubscriptionGroupConfig();
        g.setGroupName(group);
        d.admin.createAndUpdateSubscriptionGroupConfig(d.env.brokerAddr(), g);
        d.admin.setMessageRequestMode(d.env.brokerAddr(), topic, group, MessageRequestMode.POP, 0, 5_000);
        MessageQueue q0 = new MessageQueue(topic, d.env.brokerName(), 0);
        MessageQueue q1 = new MessageQueue(topic, d.env.brokerName(), 1);
        for (int i = 0; i < 4; i++) {
            d.producer.send(Clients.message(topic, "TagA", "k" + i, "b" + i), q0);
        }
        d.producer.send(Clients.message(topic, "TagA", "late", "late"), q1);

        Map<String, List<Integer>> deliveries = new ConcurrentHashMap<>();
        DefaultMQPushConsumer c = Clients.push(d.env.namesrvAddr(), group, "popkill", topic, "*", (msgs, ctx) -> {
            for (MessageExt m : msgs) {
                String body = new String(m.getBody(), StandardCharsets.UTF_8);
                deliveries.computeIfAbsent(body, k -> new CopyOnWriteArrayList<>()).add(m.getReconsumeTimes());
                if (body.equals("late") && m.getReconsumeTimes() == 0) {
                    return ConsumeConcurrentlyStatus.RECONSUME_LATER;
                }
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        c.setClientRebalance(false);
        c.setPopInvisibleTime(5_000);
        c.start();
        try {
            // b0..b3 acked (queue 0's offset moves over acked messages only), "late" popped once.
            Wait.until("queue 0 of " + topic + " acked to its end", Duration.ofSeconds(40),
                () -> d.rpc.committedOffset(d.env.brokerAddr(), group, topic, 0), o -> o != null && o == 4L);
            Wait.until("late delivered", Duration.ofSeconds(40), () -> deliveries.containsKey("late"), x -> x);
            d.env.killBroker();
            d.env.startBroker();
            // "late" was never acked: it comes back (after its invisible time, so after any acked
            // message would have come back too).
            Wait.until("late redelivered after the kill", Duration.ofSeconds(90),
                () -> deliveries.getOrDefault("late", List.of()), l -> l.size() >= 2);
            for (int i = 0; i < 4; i++) {
                assertEquals(List.of(0), deliveries.get("b" + i), "b" + i + " acked before the kill: " + deliveries);
            }
            assertEquals(List.of(0, 1), deliveries.get("late"), "reconsumeTimes of late's deliveries");
        } finally {
            c.shutdown();
        }
    }
}
