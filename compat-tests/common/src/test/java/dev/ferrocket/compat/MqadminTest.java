package dev.ferrocket.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Collectors;
import org.apache.rocketmq.client.consumer.DefaultMQPullConsumer;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.PullResult;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.exception.MQBrokerException;
import org.apache.rocketmq.client.exception.MQClientException;
import org.apache.rocketmq.client.impl.MQClientManager;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.common.MQVersion;
import org.apache.rocketmq.common.MixAll;
import org.apache.rocketmq.common.TopicConfig;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;
import org.apache.rocketmq.tools.admin.DefaultMQAdminExt;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The mqadmin commands through the {@code DefaultMQAdminExt} methods they call: updateTopic,
 * deleteTopic, topicList, topicRoute, topicStatus, clusterList, brokerStatus, getBrokerConfig,
 * updateBrokerConfig, updateSubGroup, deleteSubGroup, consumerProgress, consumerConnection,
 * producerConnection, resetOffsetByTime (online consumer: the broker tells it; offline: the tool
 * falls back to committing offsets itself) and cloneGroupOffset. Every answer is checked against what
 * the test did (queue counts, offsets, timestamps, client ids), and where a command changes
 * behaviour (perm, consume enable, offsets) the clients' behaviour is checked too.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@ExtendWith(BrokerLogsOnFailure.class)
class MqadminTest {
    static final int PERM_RW = 6;
    static final int PERM_READ = 4;
    static final int CONSUMER_NOT_ONLINE = 206;
    static final int NO_PERMISSION = 16;
    static final Duration CONSUME_TIMEOUT = Duration.ofSeconds(60);
    private final Generation gen = Generation.current();
    private final BrokerGenerationApi bgen = BrokerGenerationApi.current();
    private final FeatureGenerationApi fgen = FeatureGenerationApi.current();
    private BrokerDeployment env;
    private DefaultMQAdminExt admin;
    private DefaultMQProducer producer;
    private DefaultMQPullConsumer reader;
    private BrokerRpc rpc;

    private DeploymentClients deployment;

    @BeforeAll
    void setUp() throws Exception {
        deployment = DeploymentClients.start(BrokerDeployment.Mode.STANDALONE, "mqadmin");
        env = deployment.env;
        admin = deployment.admin;
        producer = deployment.producer;
        reader = deployment.reader;
        rpc = deployment.rpc;
    }

    @AfterAll
    void tearDown() {
        if (deployment != null) {
            deployment.close();
        }
    }

    void report(String format, Object... args) {
        System.out.printf("[compat %s mqadmin] %s%n", gen.tag(), String.format(format, args));
    }

    static int codeOf(Throwable e) {
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (t instanceof MQBrokerException b) {
                return b.getResponseCode();
            }
            if (t instanceof MQClientException c && c.getResponseCode() != -1) {
                return c.getResponseCode();
            }
        }
        return -1;
    }

    MessageQueue mq(String topic, int q) {
        return new MessageQueue(topic, env.brokerName(), q);
    }

    /** Sends {@code counts[q]} messages to queue q, interleaved, each in its own millisecond; returns them by queue. */
    Map<Integer, List<SendResult>> fill(String topic, int... counts) throws Exception {
        Map<Integer, List<SendResult>> out = new TreeMap<>();
        int max = java.util.Arrays.stream(counts).max().orElse(0);
        for (int i = 0; i < max; i++) {
            for (int q = 0; q < counts.length; q++) {
                if (i < counts[q]) {
                    out.computeIfAbsent(q, k -> new ArrayList<>()).add(send(topic, q, "q" + q + "-" + i, i % 2 == 0 ? "TagA" : "TagB"));
                }
            }
        }
        return out;
    }

    SendResult send(String topic, int q, String key, String tags) throws Exception {
        waitForNextMillisecond();
        return FeatureClients.ok(producer.send(Clients.message(topic, tags, key, "body-" + key), mq(topic, q)),
            "send of " + key + " to queue " + q);
    }

    static void waitForNextMillisecond() {
        long now = System.currentTimeMillis();
        while (System.currentTimeMillis() <= now + 1) {
            Thread.onSpinWait();
        }
    }

    /**
     * Store timestamps of queue q of {@code topic}, by queue offset, once it holds {@code count}
     * messages (the broker acknowledges a send before its ConsumeQueue entry is written).
     */
    List<Long> storeTimes(String topic, int q, int count) {
        return Wait.until(count + " messages readable from queue " + q + " of " + topic, Duration.ofSeconds(10), () -> {
            env.assertAlive();
            return FeatureClients.readQueue(reader, mq(topic, q)).stream().map(MessageExt::getStoreTimestamp).toList();
        }, l -> l.size() >= count);
    }

    /** A started push consumer recording how often each key was delivered. */
    DefaultMQPushConsumer consume(String group, String label, String topic, String sub, Map<String, AtomicInteger> counts)
        throws Exception {
        MessageListenerConcurrently l = (msgs, context) -> {
            msgs.forEach(m -> counts.computeIfAbsent(m.getKeys(), k -> new AtomicInteger()).incrementAndGet());
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        };
        DefaultMQPushConsumer c = Clients.push(env.namesrvAddr(), group, label, topic, sub, l);
        c.start();
        long started = System.nanoTime();
        Wait.until("consumer " + label + " to hold the queues of " + topic + " and " + MixAll.getRetryTopic(group),
            Duration.ofSeconds(40), () -> {
                env.assertAlive();
                boolean held = !Clients.allocated(c, topic).isEmpty()
                    && !Clients.allocated(c, MixAll.getRetryTopic(group)).isEmpty();
                if (!held) {
                    FeatureClients.rebalanceNow(c); // see RetryAndDlqTest: the retry route comes after the first heartbeat
                }
                return held;
            });
        FeatureClients.heartbeat(c);
        report("consumer %s of %s holds its queues %d ms after start", label, group, (System.nanoTime() - started) / 1_000_000);
        return c;
    }

    void awaitConsumed(String what, Map<String, AtomicInteger> counts, Set<String> keys, int times) {
        Wait.until(what + ": each of " + keys.size() + " messages delivered " + times + " time(s)", CONSUME_TIMEOUT, () -> {
            env.assertAlive();
            return keys.stream().filter(k -> counts.getOrDefault(k, new AtomicInteger()).get() < times)
                .collect(Collectors.toCollection(TreeSet::new));
        }, Set::isEmpty);
    }

    Map<Integer, Long> awaitCommitted(String group, String topic, Map<Integer, Long> want) {
        return awaitCommitted(group, topic, want, null);
    }

    /** Waits until the broker has {@code want} as the group's offsets; nudges {@code c} (if any) to commit. */
    Map<Integer, Long> awaitCommitted(String group, String topic, Map<Integer, Long> want, DefaultMQPushConsumer c) {
        return Wait.until("the broker to store offsets " + want + " of " + group + " on " + topic, Duration.ofSeconds(30),
            () -> {
                env.assertAlive();
                if (c != null) {
                    FeatureClients.persistOffsets(c);
                }
                return rpc.committedOffsets(env.brokerAddr(), group, topic, want.size());
            }, want::equals);
    }

    static Set<String> keysOf(Map<Integer, List<SendResult>> sent, String topic, Map<String, SendResult> byKeyOut) {
        Set<String> keys = new TreeSet<>();
        sent.forEach((q, rs) -> {
            for (int i = 0; i < rs.size(); i++) {
                keys.add("q" + q + "-" + i);
                if (byKeyOut != null) {
                    byKeyOut.put("q" + q + "-" + i, rs.get(i));
                }
            }
        });
        return keys;
    }

    // ------------------------------------------------------------------ topics

    @Test
    void updateTopicTopicListTopicRouteAndDeleteTopic() throws Exception {
        String topic = Compat.unique("adm-topic");
        // updateTopic -b <broker>: read 3, write 5 (a swap would show)
        admin.createAndUpdateTopicConfig(env.brokerAddr(), new TopicConfig(topic, 3, 5, PERM_RW));
        Generation.Route route = env.awaitRoute(topic, 3, 5, PERM_RW);
        Generation.BrokerView broker = route.brokerOf(env.brokerName());
        assertNotNull(broker, "BrokerData of " + env.brokerName() + " in the route of " + topic + ": " + route);
        assertEquals(BrokerDeployment.CLUSTER, broker.cluster(), "cluster in the route of " + topic);
        assertEquals(Map.of(0L, env.brokerAddr()), broker.brokerAddrs(), "broker addresses in the route of " + topic);
        var config = admin.getAllTopicConfig(env.brokerAddr(), 5_000).getTopicConfigTable().get(topic);
        assertNotNull(config, "topic config of " + topic + " on the broker (GET_ALL_TOPIC_CONFIG)");
        assertEquals(List.of(3, 5, PERM_RW), List.of(config.getReadQueueNums(), config.getWriteQueueNums(), config.getPerm()),
            "read/write queues and perm of " + topic + " on the broker");
        assertTrue(NamesrvQueries.allTopics(admin).contains(topic), "topicList contains " + topic);

        // updateTopic again: the broker and the route take the new values
        admin.createAndUpdateTopicConfig(env.brokerAddr(), new TopicConfig(topic, 6, 6, PERM_READ));
        env.awaitRoute(topic, 6, 6, PERM_READ);
        config = admin.getAllTopicConfig(env.brokerAddr(), 5_000).getTopicConfigTable().get(topic);
        assertEquals(List.of(6, 6, PERM_READ), List.of(config.getReadQueueNums(), config.getWriteQueueNums(), config.getPerm()),
            "read/write queues and perm of " + topic + " on the broker after the update");

        // updateTopic -c <cluster>: every master of the cluster
        String viaCluster = Compat.unique("adm-cluster");
        bgen.createTopic(admin, BrokerDeployment.CLUSTER, viaCluster, 2);
        env.awaitRoute(viaCluster, 2, 2, PERM_RW);
        Set<String> topics = NamesrvQueries.allTopics(admin);
        assertTrue(topics.containsAll(List.of(topic, viaCluster)), "topicList " + topics);

        // deleteTopic -c <cluster>: in every master, then in the NameServer
        admin.deleteTopicInBroker(Set.of(env.brokerAddr()), topic);
        gen.deleteTopicInNameServer(admin, env.namesrvAddr(), BrokerDeployment.CLUSTER, topic);
        assertNull(NamesrvQueries.routeOrNull(admin, topic), "route of " + topic + " after deleteTopic");
        assertFalse(NamesrvQueries.allTopics(admin).contains(topic), "topicList after deleteTopic contains " + topic);
        assertFalse(admin.getAllTopicConfig(env.brokerAddr(), 5_000).getTopicConfigTable().containsKey(topic),
            "the broker still has the config of " + topic + " after deleteTopicInBroker");
        assertTrue(NamesrvQueries.allTopics(admin).contains(viaCluster), "topicList after deleting another topic");
    }

    @Test
    void topicStatusShowsMinMaxAndLastUpdatePerQueue() throws Exception {
        String topic = Compat.unique("adm-status");
        env.createTopic(topic, 3, 3, PERM_RW);
        fill(topic, 5, 3, 0);
        List<List<Long>> times = List.of(storeTimes(topic, 0, 5), storeTimes(topic, 1, 3), storeTimes(topic, 2, 0));
        assertEquals(List.of(5, 3, 0), times.stream().map(List::size).toList(), "messages read back per queue");
        Map<Integer, List<Long>> want = new TreeMap<>();
        for (int q = 0; q < 3; q++) {
            List<Long> t = times.get(q);
            want.put(q, List.of(0L, (long) t.size(), t.isEmpty() ? 0L : t.get(t.size() - 1)));
        }

        // GET_TOPIC_STATS_INFO as the broker answers it (what topicStatus -c reads per broker)
        var api = MQClientManager.getInstance().getOrCreateMQClientInstance(admin).getMQClientAPIImpl();
        var perBroker = api.getTopicStatsInfo(env.brokerAddr(), topic, 5_000).getOffsetTable();
        Map<Integer, List<Long>> got = new TreeMap<>();
        perBroker.forEach((mq, o) -> got.put(mq.getQueueId(), List.of(o.getMinOffset(), o.getMaxOffset(),
            o.getLastUpdateTimestamp())));
        assertEquals(want, got, "GET_TOPIC_STATS_INFO per queue: [min offset, max offset, last update = store time of "
            + "the last message]");
        perBroker.keySet().forEach(mq -> assertEquals(env.brokerName(), mq.getBrokerName(), "broker name of " + mq));

        // topicStatus -t <topic> (no cluster): examineTopicStats(topic)
        var stats = admin.examineTopicStats(topic).getOffsetTable();
        Map<Integer, List<Long>> viaAdmin = new TreeMap<>();
        stats.forEach((mq, o) -> viaAdmin.put(mq.getQueueId(), List.of(o.getMinOffset(), o.getMaxOffset(),
            o.getLastUpdateTimestamp())));
        assertEquals(want, viaAdmin, "topicStatus (examineTopicStats) per queue: [min, max, last update]");
    }

    @Test
    void clusterListAndBrokerStatus() throws Exception {
        String topic = Compat.unique("adm-brokerstatus");
        env.createTopic(topic, 2, 2, PERM_RW);
        Map<Integer, List<SendResult>> sent = fill(topic, 4, 4);
        storeTimes(topic, 0, 4);
        storeTimes(topic, 1, 4); // 8 messages pulled

        // clusterList: cluster -> brokers, broker -> addresses; and brokerStatus of each
        Generation.Cluster cluster = NamesrvQueries.cluster(admin);
        assertEquals(Set.of(env.brokerName()), cluster.clusters().get(BrokerDeployment.CLUSTER), "clusterList " + cluster);
        assertEquals(Map.of(0L, env.brokerAddr()), cluster.brokers().get(env.brokerName()).brokerAddrs(),
            "addresses of " + env.brokerName());
        long lastEnd = 0;
        for (List<SendResult> rs : sent.values()) {
            for (SendResult r : rs) {
                MessageExt m = admin.viewMessage(topic, r.getOffsetMsgId());
                lastEnd = Math.max(lastEnd, m.getCommitLogOffset() + m.getStoreSize());
            }
        }
        Map<String, String> status = new TreeMap<>(admin.fetchBrokerRuntimeStats(env.brokerAddr()).getTable());
        report("brokerStatus: %s", status);
        assertTrue(status.getOrDefault("brokerVersionDesc", "").startsWith("V"), "brokerVersionDesc " + status);
        assertTrue(Integer.parseInt(status.getOrDefault("brokerVersion", "0")) > 0, "brokerVersion " + status);
        assertEquals(Long.toString(lastEnd), status.get("commitLogMaxOffset"),
            "commitLogMaxOffset: the end of the last message written (" + topic + ")");
        assertEquals("0", status.get("commitLogMinOffset"), "commitLogMinOffset of a young CommitLog");
        // 8 messages put by this test and pulled back: the broker counts puts and gets since it started
        // (BrokerStats: store put count; BROKER_GET_NUMS), which clusterList shows as #InTotalToday/#OutTotalToday
        assertTrue(Long.parseLong(status.getOrDefault("msgPutTotalTodayNow", "-1")) >= 8,
            "msgPutTotalTodayNow (messages put since the broker started) after 8 sends: " + status.get("msgPutTotalTodayNow"));
        assertTrue(Long.parseLong(status.getOrDefault("msgGetTotalTodayNow", "-1")) >= 8,
            "msgGetTotalTodayNow (messages pulled since the broker started) after 8 were pulled: "
                + status.get("msgGetTotalTodayNow"));
    }

    // ------------------------------------------------------------------ broker config

    @Test
    void getBrokerConfigShowsTheBrokerConf() throws Exception {
        Properties p = admin.getBrokerConfig(env.brokerAddr());
        Map<String, String> want = new LinkedHashMap<>();
        want.put("brokerClusterName", BrokerDeployment.CLUSTER);
        want.put("brokerName", env.brokerName());
        want.put("brokerId", "0");
        want.put("brokerIP1", "127.0.0.1");
        want.put("listenPort", env.brokerAddr().substring(env.brokerAddr().indexOf(':') + 1));
        want.put("flushDiskType", "ASYNC_FLUSH");
        want.put("defaultTopicQueueNums", "8");
        want.put("autoCreateTopicEnable", "true");
        want.put("autoCreateSubscriptionGroup", "true");
        want.put("brokerPermission", "6");
        want.put("mappedFileSizeCommitLog", Integer.toString(16 * 1024 * 1024));
        want.put("messageDelayLevel", "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h");
        Map<String, String> have = new LinkedHashMap<>();
        want.keySet().forEach(k -> have.put(k, p.getProperty(k)));
        assertEquals(want, have, "getBrokerConfig");
        assertEquals(env.dir().resolve("store").toAbsolutePath().normalize(),
            Path.of(p.getProperty("storePathRootDir", "")).toAbsolutePath().normalize(), "storePathRootDir");

    }

    @Test
    void updateBrokerConfigBrokerPermissionChangesThePermInTheRoutes() throws Exception {
        String topic = Compat.unique("adm-perm");
        env.createTopic(topic, 2, 2, PERM_RW);
        try {
            // brokerPermission: the broker registers its topics with that perm at once
            Properties readOnly = new Properties();
            readOnly.setProperty("brokerPermission", "4");
            admin.updateBrokerConfig(env.brokerAddr(), readOnly);
            assertEquals("4", admin.getBrokerConfig(env.brokerAddr()).getProperty("brokerPermission"),
                "brokerPermission after updateBrokerConfig");
            env.awaitRoute(topic, 2, 2, PERM_READ);
        } finally {
            Properties rw = new Properties();
            rw.setProperty("brokerPermission", "6");
            admin.updateBrokerConfig(env.brokerAddr(), rw);
        }
        assertEquals("6", admin.getBrokerConfig(env.brokerAddr()).getProperty("brokerPermission"),
            "brokerPermission after setting it back");
        env.awaitRoute(topic, 2, 2, PERM_RW);

    }

    @Test
    void updateBrokerConfigAutoCreateTopicEnableFalseRefusesUnknownTopics() throws Exception {
        // autoCreateTopicEnable=false: a send to an unknown topic is refused and creates nothing
        String unknown = Compat.unique("adm-noauto");
        try {
            Properties noAuto = new Properties();
            noAuto.setProperty("autoCreateTopicEnable", "false");
            admin.updateBrokerConfig(env.brokerAddr(), noAuto);
            assertEquals("false", admin.getBrokerConfig(env.brokerAddr()).getProperty("autoCreateTopicEnable"),
                "autoCreateTopicEnable after updateBrokerConfig");
            DefaultMQProducer p2 = Clients.producer(env.namesrvAddr());
            try {
                p2.setRetryTimesWhenSendFailed(0);
                Exception e = assertThrows(Exception.class,
                    () -> p2.send(Clients.message(unknown, "TagA", "k", "must not create the topic")),
                    "send to an unknown topic with autoCreateTopicEnable=false");
                report("send to an unknown topic with autoCreateTopicEnable=false: %s (code %d)", e, codeOf(e));
            } finally {
                Clients.shutdownInBackground("producer", p2::shutdown);
            }
            assertNull(NamesrvQueries.routeOrNull(admin, unknown), "route of " + unknown + " after the refused send");
            assertFalse(admin.getAllTopicConfig(env.brokerAddr(), 5_000).getTopicConfigTable().containsKey(unknown),
                "the broker created " + unknown + " although autoCreateTopicEnable=false");
        } finally {
            Properties auto = new Properties();
            auto.setProperty("autoCreateTopicEnable", "true");
            admin.updateBrokerConfig(env.brokerAddr(), auto);
        }
        assertEquals("true", admin.getBrokerConfig(env.brokerAddr()).getProperty("autoCreateTopicEnable"),
            "autoCreateTopicEnable after setting it back");
    }

    // ------------------------------------------------------------------ subscription groups

    @Test
    void updateSubGroupAndDeleteSubGroup() throws Exception {
        String group = Compat.unique("adm-group");
        fgen.updateSubGroup(admin, env.brokerAddr(), new FeatureGenerationApi.SubGroup(group, true, false, false, 2, 3, 0,
            1, false));
        var c = admin.getAllSubscriptionGroup(env.brokerAddr(), 5_000).getSubscriptionGroupTable().get(group);
        assertNotNull(c, "subscription group " + group + " after updateSubGroup");
        assertEquals(List.of(group, true, false, false, 2, 3, 0L, 1L, false),
            List.of(c.getGroupName(), c.isConsumeEnable(), c.isConsumeFromMinEnable(), c.isConsumeBroadcastEnable(),
                c.getRetryQueueNums(), c.getRetryMaxTimes(), c.getBrokerId(), c.getWhichBrokerWhenConsumeSlowly(),
                c.isNotifyConsumerIdsChangedEnable()),
            "[groupName, consumeEnable, consumeFromMinEnable, consumeBroadcastEnable, retryQueueNums, retryMaxTimes, "
                + "brokerId, whichBrokerWhenConsumeSlowly, notifyConsumerIdsChangedEnable] of " + group);

        // consumeEnable=false: the broker refuses the group's pulls
        String topic = Compat.unique("adm-subgroup");
        env.createTopic(topic, 1, 1, PERM_RW);
        send(topic, 0, "sg-0", "TagA");
        fgen.updateSubGroup(admin, env.brokerAddr(), new FeatureGenerationApi.SubGroup(group, false, false, false, 2, 7, 0,
            1, false));
        c = admin.getAllSubscriptionGroup(env.brokerAddr(), 5_000).getSubscriptionGroupTable().get(group);
        assertEquals(List.of(false, 7), List.of(c.isConsumeEnable(), c.getRetryMaxTimes()),
            "[consumeEnable, retryMaxTimes] of " + group + " after the update");
        DefaultMQPullConsumer pc = Clients.pull(env.namesrvAddr(), group);
        try {
            MQBrokerException refused = assertThrows(MQBrokerException.class, () -> pc.pull(mq(topic, 0), "*", 0, 32),
                "pull by " + group + " with consumeEnable=false");
            assertEquals(NO_PERMISSION, refused.getResponseCode(), "pull with consumeEnable=false: " + refused);

            // deleteSubGroup: gone from the broker's table
            admin.deleteSubscriptionGroup(env.brokerAddr(), group);
            assertFalse(admin.getAllSubscriptionGroup(env.brokerAddr(), 5_000).getSubscriptionGroupTable()
                .containsKey(group), "subscription group " + group + " after deleteSubGroup");
            // and with autoCreateSubscriptionGroup=true the group may consume again (default config)
            PullResult again = pc.pull(mq(topic, 0), "*", 0, 32);
            assertEquals(List.of("sg-0"), again.getMsgFoundList() == null ? List.of()
                : again.getMsgFoundList().stream().map(MessageExt::getKeys).toList(),
                "pull by " + group + " after deleteSubGroup: " + again);
        } finally {
            Clients.shutdownInBackground("pull " + group, pc::shutdown);
        }
    }

    // ------------------------------------------------------------------ consumers and producers

    @Test
    void consumerConnectionProducerConnectionAndConsumerProgress() throws Exception {
        String topic = Compat.unique("adm-progress");
        env.createTopic(topic, 2, 2, PERM_RW);
        Map<Integer, List<SendResult>> sent = fill(topic, 10, 10);
        String group = Compat.unique("cg-progress");
        Map<String, AtomicInteger> counts = new ConcurrentHashMap<>();
        DefaultMQPushConsumer c = consume(group, "progress", topic, "TagA || TagB", counts);
        String clientId = FeatureClients.clientId(c);
        try {
            awaitConsumed("progress", counts, keysOf(sent, topic, null), 1);
            awaitCommitted(group, topic, Map.of(0, 10L, 1, 10L), c);

            // consumerConnection
            var conn = Wait.until("the consumer connection of " + group, Duration.ofSeconds(10),
                () -> admin.examineConsumerConnectionInfo(group), x -> x.getConnectionSet().size() == 1);
            var connection = conn.getConnectionSet().iterator().next();
            assertEquals(clientId, connection.getClientId(), "client id in consumerConnection");
            assertEquals("JAVA", connection.getLanguage().name(), "language in consumerConnection");
            assertEquals(MQVersion.CURRENT_VERSION, connection.getVersion(), "version in consumerConnection");
            assertTrue(connection.getClientAddr().startsWith("127.0.0.1:"), "client address " + connection.getClientAddr());
            assertEquals("CONSUME_PASSIVELY", conn.getConsumeType().name(), "consumeType of a push consumer");
            assertEquals("CLUSTERING", conn.getMessageModel().name(), "messageModel");
            assertEquals("CONSUME_FROM_FIRST_OFFSET", conn.getConsumeFromWhere().name(), "consumeFromWhere");
            assertEquals(Set.of(topic, MixAll.getRetryTopic(group)), new TreeSet<>(conn.getSubscriptionTable().keySet()),
                "subscriptions in consumerConnection");
            var sub = conn.getSubscriptionTable().get(topic);
            assertEquals("TagA || TagB", sub.getSubString(), "subscription expression of " + topic);
            assertEquals(Set.of("TagA", "TagB"), new TreeSet<>(sub.getTagsSet()), "tags of the subscription of " + topic);

            // producerConnection (the producer heartbeats to the brokers it sent to every 30 s: do it now)
            FeatureClients.heartbeat(producer);
            var pconn = admin.examineProducerConnectionInfo(producer.getProducerGroup(), topic);
            Set<String> producerIds = new TreeSet<>();
            pconn.getConnectionSet().forEach(x -> {
                producerIds.add(x.getClientId());
                assertEquals("JAVA", x.getLanguage().name(), "language in producerConnection");
                assertEquals(MQVersion.CURRENT_VERSION, x.getVersion(), "version in producerConnection");
            });
            assertEquals(Set.of(FeatureClients.clientId(producer)), producerIds,
                "client ids in producerConnection of " + producer.getProducerGroup());

            // who consumes the topic
            assertTrue(admin.queryTopicConsumeByWho(topic).getGroupList().contains(group),
                "queryTopicConsumeByWho(" + topic + ") lists " + group);
        } finally {
            c.shutdown(); // persists the offsets, unregisters
        }

        // consumerConnection of a group with no client online
        Exception offline = assertThrows(Exception.class, () -> admin.examineConsumerConnectionInfo(group),
            "consumerConnection of " + group + " after its only consumer shut down");
        assertEquals(CONSUMER_NOT_ONLINE, codeOf(offline), "consumerConnection of an offline group: " + offline);

        // consumerProgress: 3 + 1 messages behind
        send(topic, 0, "q0-10", "TagA");
        send(topic, 0, "q0-11", "TagB");
        send(topic, 0, "q0-12", "TagA");
        send(topic, 1, "q1-10", "TagA");
        List<Long> t0 = storeTimes(topic, 0, 13);
        List<Long> t1 = storeTimes(topic, 1, 11);
        Map<Integer, List<Long>> want = new TreeMap<>(Map.of(0, List.of(13L, 10L, t0.get(9)), 1, List.of(11L, 10L, t1.get(9))));
        String columns = " per queue: [broker offset, consumer offset, last timestamp = store time of the last consumed message]";
        // GET_CONSUME_STATS as the broker answers it
        var api = MQClientManager.getInstance().getOrCreateMQClientInstance(admin).getMQClientAPIImpl();
        var brokerStats = api.getConsumeStats(env.brokerAddr(), group, 5_000);
        Map<Integer, List<Long>> fromBroker = new TreeMap<>();
        brokerStats.getOffsetTable().forEach((mq, o) -> {
            if (mq.getTopic().equals(topic)) {
                fromBroker.put(mq.getQueueId(), List.of(o.getBrokerOffset(), o.getConsumerOffset(), o.getLastTimestamp()));
            }
        });
        assertEquals(want, fromBroker, "GET_CONSUME_STATS of " + group + " on " + topic + columns);
        assertEquals(4, brokerStats.computeTotalDiff(), "total diff of " + group + " (all its topics): "
            + brokerStats.getOffsetTable());

        // mqadmin consumerProgress -g: examineConsumeStats(group)
        var stats = admin.examineConsumeStats(group);
        Map<Integer, List<Long>> progress = new TreeMap<>();
        stats.getOffsetTable().forEach((mq, o) -> {
            if (mq.getTopic().equals(topic)) {
                progress.put(mq.getQueueId(), List.of(o.getBrokerOffset(), o.getConsumerOffset(), o.getLastTimestamp()));
            }
        });
        assertEquals(want, progress, "consumerProgress (examineConsumeStats) of " + group + " on " + topic + columns);
        assertEquals(4, stats.computeTotalDiff(), "consumerProgress total diff of " + group + ": " + stats.getOffsetTable());
    }

    @Test
    void getConsumerStatusAndConsumeMessageReachEachOnlineConsumer() throws Exception {
        String topic = Compat.unique("adm-status");
        env.createTopic(topic, 2, 2, PERM_RW);
        Map<Integer, List<SendResult>> sent = fill(topic, 6, 4);
        String group = Compat.unique("cg-status");
        Map<String, AtomicInteger> counts = new ConcurrentHashMap<>();
        Map<String, AtomicInteger> counts2 = new ConcurrentHashMap<>();
        DefaultMQPushConsumer c = consume(group, "status", topic, "*", counts);
        DefaultMQPushConsumer c2 = null;
        try {
            awaitConsumed("status", counts, keysOf(sent, topic, null), 1);
            String clientId = FeatureClients.clientId(c);
            // mqadmin getConsumerStatus: INVOKE_BROKER_TO_GET_CONSUMER_STATUS; the broker asks each
            // online consumer (GET_CONSUMER_STATUS_FROM_CLIENT) and answers with their offsets by client id
            Map<String, Map<Integer, Long>> one = Wait.until("getConsumerStatus of " + group + " to show " + clientId
                    + " at offsets {0=6, 1=4}", Duration.ofSeconds(10),
                () -> byQueue(admin.getConsumeStatus(topic, group, ""), topic),
                m -> Map.of(clientId, Map.of(0, 6L, 1, 4L)).equals(m));
            assertEquals(Map.of(clientId, Map.of(0, 6L, 1, 4L)), one, "getConsumerStatus of one consumer");

            // mqadmin consumeMessage: CONSUME_MESSAGE_DIRECTLY; the broker hands the stored message to
            // that consumer, whose listener consumes it again, and relays its result
            var direct = admin.consumeMessageDirectly(group, clientId, topic, sent.get(0).get(0).getOffsetMsgId());
            assertEquals("CR_SUCCESS", direct.getConsumeResult().name(), "consumeMessage of q0-0: " + direct);
            assertEquals(2, counts.get("q0-0").get(), "q0-0 consumed again, directly");

            // a second consumer: both answer, each with the queues it holds; asking one by id gets only it
            // (not consume(): the retry topic's one queue goes to one of the two consumers only)
            c2 = Clients.push(env.namesrvAddr(), group, "status2", topic, "*", (msgs, context) -> {
                msgs.forEach(m -> counts2.computeIfAbsent(m.getKeys(), k -> new AtomicInteger()).incrementAndGet());
                return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
            });
            c2.start();
            String clientId2 = FeatureClients.clientId(c2);
            DefaultMQPushConsumer first = c;
            DefaultMQPushConsumer second = c2;
            Map<String, Map<Integer, Long>> both = Wait.until("getConsumerStatus of " + group + " to list both consumers",
                Duration.ofSeconds(40), () -> {
                    FeatureClients.rebalanceNow(first);
                    FeatureClients.rebalanceNow(second);
                    return byQueue(admin.getConsumeStatus(topic, group, ""), topic);
                }, m -> m.keySet().equals(Set.of(clientId, clientId2)) && m.get(clientId2).size() == 1
                    && m.get(clientId).size() == 1 && Map.of(0, 6L, 1, 4L).equals(merged(m)));
            assertEquals(Map.of(0, 6L, 1, 4L), merged(both), "offsets of both consumers together: " + both);
            assertEquals(Set.of(clientId2), byQueue(admin.getConsumeStatus(topic, group, clientId2), topic).keySet(),
                "getConsumerStatus asked for " + clientId2 + " only");
        } finally {
            if (c2 != null) {
                c2.shutdown();
            }
            c.shutdown();
        }
    }

    static Map<Integer, Long> merged(Map<String, Map<Integer, Long>> byClient) {
        Map<Integer, Long> out = new TreeMap<>();
        byClient.values().forEach(out::putAll);
        return out;
    }

    /** Client id → (queue id of {@code topic} → offset) from getConsumeStatus's answer. */
    static Map<String, Map<Integer, Long>> byQueue(Map<String, Map<MessageQueue, Long>> status, String topic) {
        Map<String, Map<Integer, Long>> out = new TreeMap<>();
        status.forEach((client, offsets) -> {
            Map<Integer, Long> q = new TreeMap<>();
            offsets.forEach((mq, o) -> {
                if (mq.getTopic().equals(topic)) {
                    q.put(mq.getQueueId(), o);
                }
            });
            out.put(client, q);
        });
        return out;
    }

    @Test
    void resetOffsetByTimeOnlineAndOffline() throws Exception {
        String topic = Compat.unique("adm-reset");
        env.createTopic(topic, 2, 2, PERM_RW);
        // q1: 0..4, then q0: 0..4, a pause, then q0-5 and right after it q1-5, then 6..9 of both.
        // Resetting to the store time of q0-5 gives 5 on both queues whichever way the store searches
        // (5.x: first message at or after the time; 4.9: the nearest one).
        Map<String, SendResult> byKey = new LinkedHashMap<>();
        for (int i = 0; i < 5; i++) {
            byKey.put("q1-" + i, send(topic, 1, "q1-" + i, "TagA"));
        }
        for (int i = 0; i < 5; i++) {
            byKey.put("q0-" + i, send(topic, 0, "q0-" + i, "TagA"));
        }
        long pauseUntil = System.currentTimeMillis() + 400;
        Wait.until("a 400 ms pause between the two halves", Duration.ofSeconds(2),
            () -> System.currentTimeMillis() >= pauseUntil);
        byKey.put("q0-5", send(topic, 0, "q0-5", "TagA"));
        byKey.put("q1-5", send(topic, 1, "q1-5", "TagA"));
        for (int i = 6; i < 10; i++) {
            byKey.put("q0-" + i, send(topic, 0, "q0-" + i, "TagA"));
            byKey.put("q1-" + i, send(topic, 1, "q1-" + i, "TagA"));
        }
        long ts = storeTimes(topic, 0, 10).get(5);
        storeTimes(topic, 1, 10);
        Set<String> all = byKey.keySet();
        Set<String> fromFive = all.stream().filter(k -> Integer.parseInt(k.substring(3)) >= 5)
            .collect(Collectors.toCollection(TreeSet::new));

        // online: the broker computes the offsets and tells the consumer (RESET_CONSUMER_CLIENT_OFFSET)
        String online = Compat.unique("cg-reset-online");
        Map<String, AtomicInteger> counts = new ConcurrentHashMap<>();
        DefaultMQPushConsumer c = consume(online, "reset", topic, "*", counts);
        try {
            awaitConsumed("before the reset", counts, all, 1);
            awaitCommitted(online, topic, Map.of(0, 10L, 1, 10L), c);
            Map<MessageQueue, Long> reset = admin.resetOffsetByTimestamp(topic, online, ts, true);
            Map<Integer, Long> resetByQueue = new TreeMap<>();
            reset.forEach((mq, o) -> resetByQueue.put(mq.getQueueId(), o));
            assertEquals(Map.of(0, 5L, 1, 5L), resetByQueue, "offsets resetOffsetByTime(" + ts
                + " = store time of q0-5) answered for the online group " + online + ": " + reset);
            // the client drops its queues, waits 10 s, commits the new offsets; its next rebalance pulls from there
            long resetAt = System.nanoTime();
            awaitCommitted(online, topic, Map.of(0, 5L, 1, 5L));
            report("resetOffsetByTime: the online consumer committed the reset offsets after %d ms",
                (System.nanoTime() - resetAt) / 1_000_000);
            Wait.until("the consumer of " + online + " to consume q*-5..9 again", CONSUME_TIMEOUT, () -> {
                env.assertAlive();
                FeatureClients.rebalanceNow(c);
                return fromFive.stream().filter(k -> counts.get(k).get() < 2).collect(Collectors.toCollection(TreeSet::new));
            }, Set::isEmpty);
            report("resetOffsetByTime: q*-5..9 consumed again %d ms after the reset", (System.nanoTime() - resetAt) / 1_000_000);
            Wait.until("the consumer to finish what it pulled", Duration.ofSeconds(10),
                () -> Clients.pending(c, topic), n -> n == 0);
            Map<String, Integer> before5 = new TreeMap<>();
            all.stream().filter(k -> !fromFive.contains(k)).forEach(k -> before5.put(k, counts.get(k).get()));
            assertTrue(before5.values().stream().allMatch(n -> n == 1),
                "messages before the reset point delivered again: " + before5);
        } finally {
            c.shutdown();
        }

        // offline: a 4.9 broker answers CONSUMER_NOT_ONLINE and mqadmin commits the searched offsets
        // itself; a 5.x broker (ferrocket too) resets them on the server side
        String offline = Compat.unique("cg-reset-offline");
        Map<String, AtomicInteger> counts2 = new ConcurrentHashMap<>();
        DefaultMQPushConsumer c2 = consume(offline, "reset-offline", topic, "*", counts2);
        try {
            awaitConsumed("offline group before it went offline", counts2, all, 1);
        } finally {
            c2.shutdown(); // commits its offsets, unregisters
        }
        awaitCommitted(offline, topic, Map.of(0, 10L, 1, 10L));
        // A broker that resets through the clients (4.9; 5.x with useServerSideResetOffset=false)
        // answers CONSUMER_NOT_ONLINE; a 5.x broker resetting on the server side (its default, and
        // ferrocket's) answers the offsets.
        try {
            Map<MessageQueue, Long> r = admin.resetOffsetByTimestamp(topic, offline, ts, true);
            Map<Integer, Long> byQueue = new TreeMap<>();
            r.forEach((mq, o) -> byQueue.put(mq.getQueueId(), o));
            assertEquals(Map.of(0, 5L, 1, 5L), byQueue, "resetOffsetByTimestamp of the offline group answered " + r);
            report("resetOffsetByTimestamp of an offline group: answered %s (server-side reset)", r);
        } catch (MQClientException | MQBrokerException notOnline) {
            assertEquals(CONSUMER_NOT_ONLINE, codeOf(notOnline), "resetOffsetByTimestamp of an offline group: " + notOnline);
        }
        // mqadmin resetOffsetByTime: on CONSUMER_NOT_ONLINE it searches the offsets and commits them itself
        admin.resetOffsetNew(offline, topic, ts);
        assertEquals(Map.of(0, 5L, 1, 5L), rpc.committedOffsets(env.brokerAddr(), offline, topic, 2),
            "offsets of the offline group " + offline + " after resetOffsetByTime (fallback: UPDATE_CONSUMER_OFFSET)");
    }

    @Test
    void cloneGroupOffsetCopiesTheCommittedOffsets() throws Exception {
        String topic = Compat.unique("adm-clone");
        env.createTopic(topic, 2, 2, PERM_RW);
        Map<Integer, List<SendResult>> sent = fill(topic, 6, 4);
        String src = Compat.unique("cg-clone-src");
        String dest = Compat.unique("cg-clone-dest");
        Map<String, AtomicInteger> counts = new ConcurrentHashMap<>();
        DefaultMQPushConsumer c = consume(src, "clone-src", topic, "*", counts);
        try {
            awaitConsumed("source group", counts, keysOf(sent, topic, null), 1);
        } finally {
            c.shutdown(); // commits its offsets, unregisters
        }
        awaitCommitted(src, topic, Map.of(0, 6L, 1, 4L));
        Map<Integer, Long> none = new HashMap<>();
        none.put(0, null);
        none.put(1, null);
        assertEquals(none, rpc.committedOffsets(env.brokerAddr(), dest, topic, 2), "offsets of " + dest + " before the clone");
        admin.cloneGroupOffset(src, dest, topic, true);
        assertEquals(Map.of(0, 6L, 1, 4L), rpc.committedOffsets(env.brokerAddr(), dest, topic, 2),
            "offsets of " + dest + " after cloneGroupOffset from " + src);

        // a consumer of the destination group starts at the cloned offsets: only new messages
        SendResult n0 = send(topic, 0, "new-0", "TagA");
        SendResult n1 = send(topic, 1, "new-1", "TagA");
        Map<String, AtomicInteger> destCounts = new ConcurrentHashMap<>();
        DefaultMQPushConsumer d = consume(dest, "clone-dest", topic, "*", destCounts);
        try {
            awaitConsumed("destination group", destCounts, Set.of("new-0", "new-1"), 1);
            Wait.until("the destination consumer to finish what it pulled", Duration.ofSeconds(10),
                () -> Clients.pending(d, topic), n -> n == 0);
        } finally {
            Clients.shutdownInBackground("consumer " + dest, d::shutdown);
        }
        Map<String, Integer> got = new TreeMap<>();
        destCounts.forEach((k, v) -> got.put(k, v.get()));
        assertEquals(Map.of("new-0", 1, "new-1", 1), got, "messages the destination group consumed (queue offsets "
            + n0.getQueueOffset() + ", " + n1.getQueueOffset() + ")");
    }
}
