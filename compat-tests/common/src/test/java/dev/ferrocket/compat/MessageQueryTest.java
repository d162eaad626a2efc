package dev.ferrocket.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;
import org.apache.rocketmq.client.consumer.DefaultMQPullConsumer;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.consumer.PullResult;
import org.apache.rocketmq.client.consumer.rebalance.AllocateMessageQueueAveragely;
import org.apache.rocketmq.client.consumer.PullStatus;
import org.apache.rocketmq.client.exception.MQClientException;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.trace.TraceView;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageClientExt;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;
import org.apache.rocketmq.tools.admin.DefaultMQAdminExt;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Message queries the way mqadmin makes them through {@code DefaultMQAdminExt}: queryMsgByKey
 * (QUERY_MESSAGE by key, maxNum, time range), queryMsgById (VIEW_MESSAGE_BY_ID of an offset msgId),
 * queryMsgByUniqueKey (QUERY_MESSAGE with the unique-key flag, the client msgId) and queryMsgByOffset
 * (a pull of one message at a queue offset). Twelve messages over four queues, each with its own key
 * and a shared one; every answer is compared field by field with what was sent and what SendResult said.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@ExtendWith(BrokerLogsOnFailure.class)
class MessageQueryTest {
    static final int PERM_RW = 6;
    static final int COUNT = 12;
    private final FeatureGenerationApi fgen = FeatureGenerationApi.current();
    private BrokerDeployment env;
    private DefaultMQAdminExt admin;
    private DefaultMQProducer producer;
    private DefaultMQPullConsumer puller;
    private String topic;
    private String otherTopic;
    private String shared;
    private final Map<String, SendResult> results = new LinkedHashMap<>();
    private long sentFrom;
    private long sentUntil;

    @BeforeAll
    void setUp() throws Exception {
        env = BrokerDeployment.start(BrokerDeployment.Mode.STANDALONE, "query", Map.of());
        admin = env.admin();
        producer = Clients.producer(env.namesrvAddr());
        puller = Clients.pull(env.namesrvAddr(), Compat.unique("query-by-offset"));
        topic = Compat.unique("query");
        otherTopic = Compat.unique("query-other");
        env.createTopic(topic, 4, 4, PERM_RW);
        env.createTopic(otherTopic, 1, 1, PERM_RW);
        shared = Compat.unique("shared");
        sentFrom = System.currentTimeMillis();
        for (int i = 0; i < COUNT; i++) {
            String own = ownKey(i);
            Message m = new Message(topic, "TagQ" + (i % 3), "body-" + own, ("body-" + own).getBytes(StandardCharsets.UTF_8));
            m.setKeys(List.of(own, shared));
            m.putUserProperty("index", Integer.toString(i));
            results.put(own, FeatureClients.ok(producer.send(m, new MessageQueue(topic, env.brokerName(), i % 4)),
                "send of " + own));
        }
        // the same shared key in another topic: a query on the first topic must not return it
        Message other = new Message(otherTopic, "TagX", shared, "body-other".getBytes(StandardCharsets.UTF_8));
        results.put("other", FeatureClients.ok(producer.send(other), "send to " + otherTopic));
        sentUntil = System.currentTimeMillis();
        // the index is written after the message: wait until the last one is found
        Wait.until("QUERY_MESSAGE by key to find " + ownKey(COUNT - 1), Duration.ofSeconds(10),
            () -> fgen.queryMsgByKey(admin, BrokerDeployment.CLUSTER, topic, ownKey(COUNT - 1), 64, 0, Long.MAX_VALUE),
            l -> !l.isEmpty());
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
        Clients.awaitBackgroundShutdowns(10_000);
    }

    String ownKey(int i) {
        return topic + "-key-" + i;
    }

    /** Every field of a found message against what was sent and what its SendResult said. */
    void assertIsSent(String what, int i, MessageExt m) {
        String own = ownKey(i);
        SendResult r = results.get(own);
        assertEquals(topic, m.getTopic(), "topic of " + what);
        assertEquals("body-" + own, new String(m.getBody(), StandardCharsets.UTF_8), "body of " + what);
        assertEquals("TagQ" + (i % 3), m.getTags(), "tags of " + what);
        assertEquals(own + " " + shared, m.getKeys(), "keys of " + what);
        assertEquals(Integer.toString(i), m.getUserProperty("index"), "user property 'index' of " + what);
        assertEquals(r.getMessageQueue().getQueueId(), m.getQueueId(), "queue of " + what);
        assertEquals(r.getQueueOffset(), m.getQueueOffset(), "queue offset of " + what);
        assertEquals(r.getMsgId(), m.getMsgId(), "msgId (UNIQ_KEY) of " + what);
        assertTrue(m instanceof MessageClientExt, what + " is not decoded as a client message: " + m.getClass());
        assertEquals(r.getOffsetMsgId(), ((MessageClientExt) m).getOffsetMsgId(), "offsetMsgId of " + what);
        assertEquals(env.brokerAddr(), m.getStoreHost().toString().replaceFirst("^.*/", ""), "store host of " + what);
        assertTrue(m.getStoreTimestamp() >= sentFrom - 1_000 && m.getStoreTimestamp() <= sentUntil + 1_000,
            "store timestamp " + m.getStoreTimestamp() + " of " + what + " outside the sending window [" + sentFrom
                + ", " + sentUntil + "]");
    }

    static int indexOf(MessageExt m) {
        return Integer.parseInt(m.getUserProperty("index"));
    }

    @Test
    void queryMsgByKeyFindsTheMessagesOfAKeyWithinMaxNumAndTheTimeRange() throws Exception {
        for (int i = 0; i < COUNT; i++) {
            List<MessageExt> found = fgen.queryMsgByKey(admin, BrokerDeployment.CLUSTER, topic, ownKey(i), 64, 0,
                Long.MAX_VALUE);
            assertEquals(1, found.size(), "messages found by key " + ownKey(i) + ": " + found);
            assertIsSent("message found by key " + ownKey(i), i, found.get(0));
        }

        List<MessageExt> all = fgen.queryMsgByKey(admin, BrokerDeployment.CLUSTER, topic, shared, 64, 0, Long.MAX_VALUE);
        assertEquals(COUNT, all.size(), "messages found by the shared key (maxNum 64): " + all);
        Set<Integer> indexes = all.stream().map(MessageQueryTest::indexOf).collect(Collectors.toCollection(TreeSet::new));
        assertEquals(COUNT, indexes.size(), "distinct messages found by the shared key: " + indexes);
        for (MessageExt m : all) {
            assertIsSent("message " + indexOf(m) + " found by the shared key", indexOf(m), m);
        }

        // maxNum caps what the broker returns
        List<MessageExt> five = fgen.queryMsgByKey(admin, BrokerDeployment.CLUSTER, topic, shared, 5, 0, Long.MAX_VALUE);
        assertEquals(5, five.size(), "messages found by the shared key with maxNum 5: " + five);
        assertEquals(5, five.stream().map(MessageQueryTest::indexOf).distinct().count(), "distinct messages among them");

        // the time range: well before and well after the sends (the index keeps seconds)
        assertThrows(MQClientException.class, () -> fgen.queryMsgByKey(admin, BrokerDeployment.CLUSTER, topic, shared, 64,
            0, sentFrom - 10_000), "query by the shared key for a range ending 10 s before the first send");
        assertThrows(MQClientException.class, () -> fgen.queryMsgByKey(admin, BrokerDeployment.CLUSTER, topic, shared, 64,
            sentUntil + 10_000, Long.MAX_VALUE), "query by the shared key for a range starting 10 s after the last send");
        List<MessageExt> inRange = fgen.queryMsgByKey(admin, BrokerDeployment.CLUSTER, topic, shared, 64,
            sentFrom - 10_000, sentUntil + 10_000);
        assertEquals(COUNT, inRange.size(), "messages found by the shared key in a range around the sends");

        // the other topic has its own message with that key, and only that one
        List<MessageExt> other = fgen.queryMsgByKey(admin, BrokerDeployment.CLUSTER, otherTopic, shared, 64, 0,
            Long.MAX_VALUE);
        assertEquals(List.of("body-other"), other.stream().map(m -> new String(m.getBody(), StandardCharsets.UTF_8)).toList(),
            "messages found by the shared key in " + otherTopic);
        assertEquals(results.get("other").getMsgId(), other.get(0).getMsgId(), "msgId found in " + otherTopic);

        assertThrows(MQClientException.class, () -> fgen.queryMsgByKey(admin, BrokerDeployment.CLUSTER, topic,
            Compat.unique("no-such-key"), 64, 0, Long.MAX_VALUE), "query by a key no message has");
    }

    @Test
    void queryMsgByIdUniqueKeyAndOffsetReturnTheSentMessage() throws Exception {
        for (int i = 0; i < COUNT; i++) {
            SendResult r = results.get(ownKey(i));
            assertNotEquals(r.getMsgId(), r.getOffsetMsgId(), "msgId and offsetMsgId of " + ownKey(i));

            // queryMsgById: the offset msgId (store host + CommitLog offset)
            MessageExt byId = fgen.queryMsgById(admin, BrokerDeployment.CLUSTER, topic, r.getOffsetMsgId());
            assertIsSent("message viewed by its offsetMsgId " + r.getOffsetMsgId(), i, byId);

            // queryMsgByUniqueKey: the client msgId
            List<MessageExt> byUniq = fgen.queryMsgByUniqueKey(admin, BrokerDeployment.CLUSTER, topic, r.getMsgId());
            assertEquals(1, byUniq.size(), "messages found by unique key " + r.getMsgId() + ": " + byUniq);
            assertIsSent("message found by its unique key " + r.getMsgId(), i, byUniq.get(0));

            // queryMsgByOffset: pull one message at (broker, queue, offset)
            PullResult p = puller.pull(r.getMessageQueue(), "*", r.getQueueOffset(), 1);
            assertEquals(PullStatus.FOUND, p.getPullStatus(), "pull of " + r.getMessageQueue() + " at offset "
                + r.getQueueOffset() + ": " + p);
            assertEquals(1, p.getMsgFoundList().size(), "messages pulled with maxNums 1");
            assertIsSent("message pulled at offset " + r.getQueueOffset() + " of queue " + r.getMessageQueue().getQueueId(),
                i, p.getMsgFoundList().get(0));
            assertEquals(r.getQueueOffset() + 1, p.getNextBeginOffset(), "nextBeginOffset of a pull of one message");
        }
        assertThrows(MQClientException.class, () -> fgen.queryMsgByUniqueKey(admin, BrokerDeployment.CLUSTER, topic,
            "0A0B0C0D0E0F00000000000000000000"), "query by a unique key no message has");
        // queue 0 holds messages 0, 4 and 8: offset 3 is its end
        PullResult end = puller.pull(new MessageQueue(topic, env.brokerName(), 0), "*", 3, 1);
        assertEquals(PullStatus.NO_NEW_MSG, end.getPullStatus(), "pull at the end of queue 0: " + end);
    }

    /**
     * Message tracing: a producer and a push consumer with {@code enableMsgTrace} write their traces
     * to RMQ_SYS_TRACE_TOPIC, and what mqadmin queryMsgTraceById does (a query of that topic by the
     * msgId, decoded with {@code TraceView}) shows the send (Pub) and both consume records (SubBefore,
     * SubAfter) of every message. The consumer's trace hook drops a message without MSG_REGION, which
     * the broker adds to every stored message, with TRACE_ON and CLUSTER, as the Java broker does.
     */
    @Test
    void tracedSendsAndConsumesAreFoundByQueryMsgTraceById() throws Exception {
        final String traceTopic = "RMQ_SYS_TRACE_TOPIC";
        final int count = 10;
        String traced = Compat.unique("traced");
        env.createTopic(traced, 2, 2, PERM_RW);
        DefaultMQProducer tracing = new DefaultMQProducer(Compat.unique("pg-trace"), null, true, null);
        tracing.setNamesrvAddr(env.namesrvAddr());
        tracing.setInstanceName(Compat.unique("trace-producer"));
        tracing.start();
        Map<String, MessageExt> received = new java.util.concurrent.ConcurrentHashMap<>();
        DefaultMQPushConsumer consumer = new DefaultMQPushConsumer(Compat.unique("cg-trace"), null,
            new AllocateMessageQueueAveragely(), true, null);
        List<Runnable> stops = new ArrayList<>(List.of(tracing::shutdown, consumer::shutdown));
        try {
            List<String> ids = new ArrayList<>();
            for (int i = 0; i < count; i++) {
                Message m = new Message(traced, "TagT", "trace-" + i, ("traced-" + i).getBytes(StandardCharsets.UTF_8));
                ids.add(FeatureClients.ok(tracing.send(m), "traced send " + i).getMsgId());
            }
            consumer.setNamesrvAddr(env.namesrvAddr());
            consumer.setInstanceName(Compat.unique("trace-consumer"));
            consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
            consumer.subscribe(traced, "*");
            consumer.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
                msgs.forEach(m -> received.put(m.getMsgId(), m));
                return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
            });
            consumer.start();
            Wait.until("the traced consumer to receive " + count + " messages", Duration.ofSeconds(30),
                () -> received.keySet().containsAll(ids));
            for (MessageExt m : received.values()) {
                assertEquals("DefaultRegion", m.getProperty("MSG_REGION"), "MSG_REGION of a consumed message " + m);
                assertEquals("true", m.getProperty("TRACE_ON"), "TRACE_ON of a consumed message " + m);
                assertEquals(BrokerDeployment.CLUSTER, m.getProperty("CLUSTER"), "CLUSTER of a consumed message " + m);
            }
            for (String id : ids) {
                Set<String> want = Set.of("Pub", "SubBefore", "SubAfter");
                Wait.until("queryMsgTraceById " + id + " to show " + want, Duration.ofSeconds(30), () -> {
                    Set<String> types = new TreeSet<>();
                    for (MessageExt t : traces(traceTopic, id)) {
                        for (TraceView v : TraceView.decodeFromTraceTransData(id, t)) {
                            if (v.getMsgType().equals("Pub")) { // 4.9's SubBefore record carries no topic
                                assertEquals(traced, v.getTopic(), "topic of the Pub trace of " + id);
                            }
                            assertEquals("success", v.getStatus(), "status of trace " + v.getMsgType() + " of " + id);
                            types.add(v.getMsgType());
                        }
                    }
                    return types.containsAll(want);
                });
            }
        } finally {
            Clients.shutdownAll(stops, 10_000);
        }
    }

    /** The trace topic's messages with key {@code msgId}; none yet is an empty list, not an error. */
    private List<MessageExt> traces(String traceTopic, String msgId) throws Exception {
        try {
            return fgen.queryMsgByKey(admin, BrokerDeployment.CLUSTER, traceTopic, msgId, 64, 0, Long.MAX_VALUE);
        } catch (MQClientException notYet) {
            return List.of();
        }
    }
}
