package dev.ferrocket.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.exception.MQBrokerException;
import org.apache.rocketmq.client.impl.MQClientManager;
import org.apache.rocketmq.common.message.MessageQueue;
import org.apache.rocketmq.remoting.protocol.body.QueueTimeSpan;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * What the 5.x admin API asks about one consumer group, as the RocketMQ dashboard asks it: queryTopicsByConsumer (QUERY_TOPICS_BY_CONSUMER 343),
 * querySubscription (QUERY_SUBSCRIPTION_BY_CONSUMER 345), queryConsumeTimeSpan
 * (QUERY_CONSUME_TIME_SPAN 303), and GET_SUBSCRIPTIONGROUP_CONFIG (352) as the Java proxy in
 * cluster mode asks it. Client 5.x only: 4.9's admin has neither the first two nor 352.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@ExtendWith(BrokerLogsOnFailure.class)
class AdminGroupQueriesTest {
    private final FeatureGenerationApi fgen = FeatureGenerationApi.current();
    private DeploymentClients d;

    @BeforeAll
    void setUp() throws Exception {
        d = DeploymentClients.start(BrokerDeployment.Mode.STANDALONE, "groupq");
    }

    @AfterAll
    void tearDown() {
        if (d != null) {
            d.close();
        }
    }

    @Test
    void aGroupsTopicsSubscriptionTimeSpanAndConfig() throws Exception {
        String topic = Compat.unique("gq");
        d.env.createTopic(topic, 2, 2, 6);
        String group = Compat.unique("cg-gq");
        fgen.updateSubGroup(d.admin, d.env.brokerAddr(),
            new FeatureGenerationApi.SubGroup(group, true, false, false, 1, 5, 0, 1, true));
        long before = System.currentTimeMillis();
        MessageQueue q0 = new MessageQueue(topic, d.env.brokerName(), 0);
        for (int i = 0; i < 3; i++) {
            d.producer.send(Clients.message(topic, "TagA", "k" + i, "b" + i), q0);
        }
        AtomicInteger got = new AtomicInteger();
        DefaultMQPushConsumer c = Clients.push(d.env.namesrvAddr(), group, "gq", topic, "TagA || TagB", (msgs, ctx) -> {
            got.addAndGet(msgs.size());
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        c.start();
        try {
            Wait.until("3 messages consumed by " + group, Duration.ofSeconds(40), got::get, n -> n >= 3);
            FeatureClients.heartbeat(c);
            var sub = d.admin.querySubscription(group, topic);
            assertEquals("TagA || TagB", sub.getSubString(), "querySubscription(" + group + ", " + topic + ")");
            // The consumer commits its offsets every 5 s (persistConsumerOffsetInterval).
            // (The admin merges the brokers' lists into one without their addresses.)
            Wait.until("queryTopicsByConsumer(" + group + ") to list " + topic, Duration.ofSeconds(30),
                () -> d.admin.queryTopicsByConsumer(group), t -> t.getTopicList().contains(topic));

            // Caught up once the committed offset reaches the end: the broker then leaves the delay 0
            // (it is now - the next message's store time while one is left, never 0 in practice).
            // Equal store times cannot tell it: two of the messages may share a millisecond.
            List<QueueTimeSpan> spans = Wait.until("queue 0 of " + topic + " consumed to its end", Duration.ofSeconds(30),
                () -> d.admin.queryConsumeTimeSpan(topic, group),
                s -> s.stream().anyMatch(x -> x.getMessageQueue().getQueueId() == 0 && x.getDelayTime() == 0));
            assertEquals(2, spans.size(), "one time span per write queue: " + spans);
            QueueTimeSpan span = spans.stream().filter(x -> x.getMessageQueue().getQueueId() == 0).findFirst().orElseThrow();
            long now = System.currentTimeMillis();
            assertTrue(before <= span.getMinTimeStamp() && span.getMinTimeStamp() <= span.getMaxTimeStamp()
                && span.getMaxTimeStamp() <= now, "min <= max store times of queue 0: " + span.getMinTimeStampStr()
                + " .. " + span.getMaxTimeStampStr());
            assertEquals(span.getMaxTimeStamp(), span.getConsumeTimeStamp(), "consume time of a caught-up queue");
            assertEquals(d.env.brokerName(), span.getMessageQueue().getBrokerName(), "broker of the span");
        } finally {
            c.shutdown();
        }

        // GET_SUBSCRIPTIONGROUP_CONFIG as the Java proxy (cluster mode) asks it.
        var api = MQClientManager.getInstance().getOrCreateMQClientInstance(d.admin).getMQClientAPIImpl();
        var config = api.getSubscriptionGroupConfig(d.env.brokerAddr(), group, 5_000);
        assertEquals(List.of(group, 5, 1), List.of(config.getGroupName(), config.getRetryMaxTimes(),
            config.getRetryQueueNums()), "[groupName, retryMaxTimes, retryQueueNums] of " + group);
        String nobody = Compat.unique("nobody");
        MQBrokerException none = assertThrows(MQBrokerException.class,
            () -> api.getSubscriptionGroupConfig(d.env.brokerAddr(), nobody, 5_000));
        assertEquals(26, none.getResponseCode(), "SUBSCRIPTION_GROUP_NOT_EXIST: " + none);
        assertNull(d.admin.examineSubscriptionGroupConfig(d.env.brokerAddr(), nobody), "a query creates no group");
    }
}
