package dev.ferrocket.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.rocketmq.client.consumer.DefaultMQPullConsumer;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.PullResult;
import org.apache.rocketmq.client.consumer.PullStatus;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.exception.MQClientException;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;
import org.apache.rocketmq.tools.admin.DefaultMQAdminExt;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The official Java broker registers with ferrocket's NameServer; the official producer, push
 * consumer and admin client then work through ferrocket's routes.
 *
 * <p>One NameServer and one broker for the whole class. The tests run in a fixed order: the
 * permission test changes every topic of the broker, and the last test stops the broker.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
@ExtendWith(DumpLogsOnFailure.class)
class NamesrvWithJavaBrokerTest {
    private static final String CLUSTER = "CompatCluster";
    private static final String BROKER = "compat-broker-a";
    private static final String TBW102 = "TBW102";
    private static final int PERM_READ = 4;
    private static final int PERM_WRITE = 2;
    private static final int PERM_INHERIT = 1;
    private static final int MESSAGES = 1_000;

    private FerrocketWithJavaBroker env;
    private DefaultMQAdminExt admin;
    private Generation gen;
    /** Created in setUp with different read and write queue numbers, so swapped fields show. */
    private String routeTopic;

    @BeforeAll
    void setUp() throws Exception {
        env = FerrocketWithJavaBroker.start("with-java-broker", CLUSTER, BROKER);
        admin = env.admin;
        gen = env.generation;
        routeTopic = Compat.unique("route");
        env.createTopicAndAwaitRoute(routeTopic, 3, 5, PERM_READ | PERM_WRITE);
    }

    @AfterAll
    void tearDown() {
        if (env != null) {
            env.close();
        }
    }

    private String ns() {
        return env.namesrv.addr();
    }

    @Test
    @Order(1)
    void clusterListShowsTheJavaBrokerAtItsLoopbackAddress() throws Exception {
        Generation.Cluster cluster = NamesrvQueries.cluster(admin);

        assertEquals(Map.of(CLUSTER, Set.of(BROKER)), cluster.clusters(), "clusterAddrTable");
        assertEquals(Set.of(BROKER), cluster.brokers().keySet(), "brokerAddrTable keys");
        Generation.BrokerView broker = cluster.brokers().get(BROKER);
        assertEquals(CLUSTER, broker.cluster(), "BrokerData.cluster");
        assertEquals(BROKER, broker.brokerName(), "BrokerData.brokerName");
        assertTrue(env.broker.addr().startsWith("127.0.0.1:"), "broker address " + env.broker.addr());
        assertEquals(Map.of(0L, env.broker.addr()), broker.brokerAddrs(), "BrokerData.brokerAddrs");
    }

    @Test
    @Order(1)
    void topicListEqualsTheTopicsTheBrokerRegistered() throws Exception {
        Set<String> brokerTopics = new TreeSet<>(env.broker.controller().getTopicConfigManager()
            .getTopicConfigTable().keySet());
        assertTrue(brokerTopics.contains(TBW102), "the Java broker with autoCreateTopicEnable has TBW102");

        Set<String> listed = Wait.until("GET_ALL_TOPIC_LIST_FROM_NAMESERVER to equal the broker's topic table "
                + brokerTopics, Duration.ofSeconds(10), () -> NamesrvQueries.allTopics(admin),
            topics -> topics.equals(brokerTopics));
        assertTrue(listed.contains(routeTopic) && listed.contains(TBW102), "topic list " + listed);
    }

    @Test
    @Order(2)
    void producerAndPushConsumerExchange1000Messages() throws Exception {
        String topic = Compat.unique("orders");
        env.createTopicAndAwaitRoute(topic, 4, 4, PERM_READ | PERM_WRITE);

        Map<String, String> sent = new TreeMap<>();
        Set<MessageQueue> queuesUsed = new TreeSet<>();
        DefaultMQProducer producer = new DefaultMQProducer(Compat.unique("pg"));
        producer.setNamesrvAddr(ns());
        producer.setInstanceName(Compat.unique("producer"));
        producer.start();
        try {
            for (int i = 0; i < MESSAGES; i++) {
                String key = String.format("key-%04d", i);
                String body = "body-" + i + "-" + topic;
                SendResult result = producer.send(new Message(topic, "TagA", key, body.getBytes(StandardCharsets.UTF_8)));
                assertEquals(SendStatus.SEND_OK, result.getSendStatus(), "send of " + key + ": " + result);
                assertEquals(BROKER, result.getMessageQueue().getBrokerName(), "broker of " + key);
                queuesUsed.add(result.getMessageQueue());
                sent.put(key, body);
            }
        } finally {
            producer.shutdown();
        }
        assertEquals(4, queuesUsed.size(), "the producer spreads sends over the 4 write queues of the route: "
            + queuesUsed);

        Map<String, List<String>> received = new ConcurrentHashMap<>();
        AtomicInteger deliveries = new AtomicInteger();
        DefaultMQPushConsumer consumer = new DefaultMQPushConsumer(Compat.unique("cg"));
        consumer.setNamesrvAddr(ns());
        consumer.setInstanceName(Compat.unique("consumer"));
        // MessageModel moved packages between generations; CLUSTERING is the default.
        assertEquals("CLUSTERING", consumer.getMessageModel().name());
        consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        consumer.subscribe(topic, "*");
        consumer.registerMessageListener((MessageListenerConcurrently) (msgs, context) -> {
            for (MessageExt m : msgs) {
                deliveries.incrementAndGet();
                received.computeIfAbsent(m.getKeys(), k -> new CopyOnWriteArrayList<>())
                    .add(new String(m.getBody(), StandardCharsets.UTF_8));
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        consumer.start();
        try {
            Wait.until("the push consumer to receive all " + MESSAGES + " distinct keys", Duration.ofSeconds(90),
                received::size, n -> n >= MESSAGES);
        } finally {
            consumer.shutdown();
        }

        assertEquals(sent.keySet(), new TreeSet<>(received.keySet()), "keys received");
        List<String> wrongBodies = new ArrayList<>();
        sent.forEach((key, body) -> received.get(key).stream()
            .filter(b -> !b.equals(body)).forEach(b -> wrongBodies.add(key + " -> " + b)));
        assertEquals(List.of(), wrongBodies, "bodies that differ from what was sent");
        int duplicates = deliveries.get() - MESSAGES;
        System.out.printf("[compat %s] %d messages sent and received over %d queues, %d duplicate deliveries%n",
            gen.tag(), MESSAGES, queuesUsed.size(), duplicates);
    }

    @Test
    @Order(3)
    void topicRouteHasTheQueueDataAndBrokerDataTheBrokerRegistered() throws Exception {
        Generation.Route route = NamesrvQueries.route(admin, routeTopic);
        assertEquals(List.of(new Generation.QueueView(BROKER, 3, 5, PERM_READ | PERM_WRITE, 0)), route.queues(),
            "QueueData of " + routeTopic);
        assertEquals(List.of(new Generation.BrokerView(CLUSTER, BROKER, Map.of(0L, env.broker.addr()))),
            route.brokers(), "BrokerData of " + routeTopic);

        Generation.Route tbw = NamesrvQueries.route(admin, TBW102);
        int defaultQueues = env.broker.controller().getBrokerConfig().getDefaultTopicQueueNums();
        assertEquals(new Generation.QueueView(BROKER, defaultQueues, defaultQueues,
            PERM_INHERIT | PERM_READ | PERM_WRITE, 0), tbw.queueOf(BROKER), "QueueData of TBW102");

        MQClientException missing = assertThrows(MQClientException.class,
            () -> NamesrvQueries.route(admin, Compat.unique("never-created")));
        assertEquals(NamesrvQueries.TOPIC_NOT_EXIST, missing.getResponseCode(), "route of an unknown topic: " + missing);
    }

    @Test
    @Order(3)
    void topicsByClusterListsTheClusterTopics() throws Exception {
        Set<String> byCluster = Wait.until("GET_TOPICS_BY_CLUSTER to equal GET_ALL_TOPIC_LIST (one broker, one cluster)",
            Duration.ofSeconds(10), () -> List.of(NamesrvQueries.topicsByCluster(admin, CLUSTER),
                NamesrvQueries.allTopics(admin)), pair -> pair.get(0).equals(pair.get(1))).get(0);
        assertTrue(byCluster.contains(routeTopic) && byCluster.contains(TBW102), "topics of " + CLUSTER + ": " + byCluster);
        assertEquals(Set.of(), NamesrvQueries.topicsByCluster(admin, "NoSuchCluster"), "topics of an unknown cluster");
    }

    @Test
    @Order(3)
    void kvConfigPutGetListDelete() throws Exception {
        String namespace = Compat.unique("ns");
        admin.createAndUpdateKvConfig(namespace, "k1", "v1");
        admin.createAndUpdateKvConfig(namespace, "k2", "broker-a:4;broker-b:8");
        assertEquals("v1", admin.getKVConfig(namespace, "k1"));
        assertEquals(Map.of("k1", "v1", "k2", "broker-a:4;broker-b:8"), NamesrvQueries.kvList(admin, namespace));

        admin.createAndUpdateKvConfig(namespace, "k1", "v1-updated");
        assertEquals("v1-updated", admin.getKVConfig(namespace, "k1"), "value after PUT_KV_CONFIG of an existing key");

        admin.deleteKvConfig(namespace, "k1");
        MQClientException gone = assertThrows(MQClientException.class, () -> admin.getKVConfig(namespace, "k1"));
        assertEquals(NamesrvQueries.QUERY_NOT_FOUND, gone.getResponseCode(), "GET_KV_CONFIG after delete: " + gone);
        assertEquals(Map.of("k2", "broker-a:4;broker-b:8"), NamesrvQueries.kvList(admin, namespace));

        MQClientException noNamespace = assertThrows(MQClientException.class,
            () -> NamesrvQueries.kvList(admin, Compat.unique("empty-ns")));
        assertEquals(NamesrvQueries.QUERY_NOT_FOUND, noNamespace.getResponseCode(),
            "GET_KVLIST_BY_NAMESPACE of an unknown namespace: " + noNamespace);
    }

    @Test
    @Order(3)
    void nameServerConfigCanBeReadAndUpdated() throws Exception {
        Properties before = admin.getNameServerConfig(List.of(ns())).get(ns());
        assertNotNull(before, "GET_NAMESRV_CONFIG answer for " + ns());
        assertEquals("false", before.getProperty("orderMessageEnable"), "orderMessageEnable (default) in " + before);
        assertEquals(Integer.toString(env.namesrv.port()), before.getProperty("listenPort"), "listenPort in " + before);

        // orderMessageEnable makes the route carry the ORDER_TOPIC_CONFIG kv entry as orderTopicConf.
        admin.createAndUpdateKvConfig("ORDER_TOPIC_CONFIG", routeTopic, BROKER + ":3");
        try {
            Properties update = new Properties();
            update.setProperty("orderMessageEnable", "true");
            admin.updateNameServerConfig(update, List.of(ns()));
            Properties after = admin.getNameServerConfig(List.of(ns())).get(ns());
            assertEquals("true", after.getProperty("orderMessageEnable"), "orderMessageEnable after UPDATE_NAMESRV_CONFIG");
            assertEquals(BROKER + ":3", admin.examineTopicRouteInfo(routeTopic).getOrderTopicConf(),
                "orderTopicConf of " + routeTopic + " with orderMessageEnable=true");
        } finally {
            Properties restore = new Properties();
            restore.setProperty("orderMessageEnable", "false");
            admin.updateNameServerConfig(restore, List.of(ns()));
            admin.deleteKvConfig("ORDER_TOPIC_CONFIG", routeTopic);
        }
        assertEquals("false", admin.getNameServerConfig(List.of(ns())).get(ns()).getProperty("orderMessageEnable"));
        assertNull(admin.examineTopicRouteInfo(routeTopic).getOrderTopicConf(), "orderTopicConf with orderMessageEnable=false");
    }

    @Test
    @Order(3)
    void systemTopicListAnswers() throws Exception {
        Set<String> system = NamesrvQueries.systemTopics(admin);
        assertNotNull(system);
        System.out.printf("[compat %s] system topic list: %s%n", gen.tag(), system);
    }

    @Test
    @Order(3)
    void systemTopicListNamesClusterAndBrokerLikeTheJavaNameServer() throws Exception {
        // The Java NameServer answers GET_SYSTEM_TOPIC_LIST_FROM_NS with every cluster name and broker
        // name, plus the address of one broker, which the client then asks for its own list (305).
        Set<String> system = NamesrvQueries.systemTopics(admin);
        assertTrue(system.contains(CLUSTER) && system.contains(BROKER), "system topic list " + system);
    }

    /**
     * The properties a broker adds to a message on the way in (MSG_REGION, TRACE_ON, CLUSTER, ...):
     * the same message, sent by the same client to the Java broker and to ferrocket and pulled back,
     * carries the same property names, with the same values but for the cluster's name.
     */
    @Test
    @Order(3)
    void storedMessagesCarryThePropertiesTheJavaBrokerAdds() throws Exception {
        String topic = Compat.unique("props");
        env.createTopicAndAwaitRoute(topic, 1, 1, PERM_READ | PERM_WRITE);
        Map<String, String> java = sendAndPullBack(env.namesrv.addr(), topic, BROKER);
        Map<String, String> ferro;
        try (BrokerDeployment d = BrokerDeployment.start(BrokerDeployment.Mode.STANDALONE, "props", Map.of())) {
            d.createTopic(topic, 1, 1, PERM_READ | PERM_WRITE);
            d.awaitRoute(topic, 1, 1, PERM_READ | PERM_WRITE);
            ferro = sendAndPullBack(d.namesrvAddr(), topic, d.brokerName());
        }
        System.out.printf("[compat %s] properties of a pulled message: Java broker %s, ferrocket %s%n", gen.tag(), java, ferro);
        assertEquals(CLUSTER, java.get("CLUSTER"), "CLUSTER from the Java broker");
        assertEquals(BrokerDeployment.CLUSTER, ferro.get("CLUSTER"), "CLUSTER from ferrocket");
        if (gen.tag().equals("v4")) {
            // The 4.9 broker adds neither MSG_REGION nor TRACE_ON and drops WAIT; ferrocket is a 5.x broker.
            assertTrue(ferro.keySet().containsAll(java.keySet()), "property names of the 4.9 broker " + java.keySet()
                + " missing from ferrocket's " + ferro.keySet());
            assertEquals("DefaultRegion", ferro.get("MSG_REGION"), "MSG_REGION from ferrocket");
            assertEquals("true", ferro.get("TRACE_ON"), "TRACE_ON from ferrocket");
            return;
        }
        assertEquals(new TreeSet<>(java.keySet()), new TreeSet<>(ferro.keySet()), "property names, Java broker vs ferrocket");
        for (String name : List.of("MSG_REGION", "TRACE_ON", "TAGS", "KEYS", "WAIT", "user", "MIN_OFFSET", "MAX_OFFSET")) {
            assertEquals(java.get(name), ferro.get(name), name + ", Java broker vs ferrocket");
        }
    }

    /** Sends one message with a user property to queue 0 and pulls it back; its properties. */
    private static Map<String, String> sendAndPullBack(String namesrv, String topic, String broker) throws Exception {
        DefaultMQProducer p = Clients.producer(namesrv);
        DefaultMQPullConsumer c = Clients.pull(namesrv, Compat.unique("props-pull"));
        try {
            Message m = new Message(topic, "TagP", "key-p", "body".getBytes(StandardCharsets.UTF_8));
            m.putUserProperty("user", "u");
            MessageQueue mq = new MessageQueue(topic, broker, 0);
            assertEquals(SendStatus.SEND_OK, p.send(m, mq).getSendStatus(), "send to " + broker);
            PullResult r = c.pull(mq, "*", 0, 1);
            assertEquals(PullStatus.FOUND, r.getPullStatus(), "pull from " + broker + ": " + r);
            return new TreeMap<>(r.getMsgFoundList().get(0).getProperties());
        } finally {
            Clients.shutdownAll(List.of(p::shutdown, c::shutdown), 10_000);
        }
    }

    @Test
    @Order(4)
    void deleteTopicInNameServerRemovesItsRoute() throws Exception {
        String topic = Compat.unique("doomed");
        env.createTopicAndAwaitRoute(topic, 2, 2, PERM_READ | PERM_WRITE);

        gen.deleteTopicInNameServer(admin, ns(), CLUSTER, topic);

        assertNull(NamesrvQueries.routeOrNull(admin, topic), "route of " + topic + " after DELETE_TOPIC_IN_NAMESRV");
        assertFalse(NamesrvQueries.allTopics(admin).contains(topic), "topic list still has " + topic);
        assertNotNull(NamesrvQueries.routeOrNull(admin, routeTopic), "other topics keep their route");
    }

    @Test
    @Order(5)
    void wipeAndAddWritePermOfBroker() throws Exception {
        Set<String> hosted = new TreeSet<>();
        for (String topic : NamesrvQueries.allTopics(admin)) {
            Generation.Route route = NamesrvQueries.routeOrNull(admin, topic);
            if (route != null && route.queueOf(BROKER) != null) {
                hosted.add(topic);
            }
        }
        assertTrue(hosted.contains(routeTopic) && hosted.contains(TBW102),
            "topics with a queue on " + BROKER + ": " + hosted);

        int wiped = admin.wipeWritePermOfBroker(ns(), BROKER);
        int routePermWiped;
        int tbwPermWiped;
        int added;
        try {
            routePermWiped = permOn(routeTopic);
            tbwPermWiped = permOn(TBW102);
        } finally {
            added = admin.addWritePermOfBroker(ns(), BROKER);
        }
        assertEquals(hosted.size(), wiped, "wipeTopicCount: every topic with QueueData on " + BROKER + " " + hosted);
        assertEquals(PERM_READ, routePermWiped, "perm of " + routeTopic + " after wipe");
        assertEquals(PERM_READ | PERM_INHERIT, tbwPermWiped, "perm of TBW102 after wipe");
        assertEquals(hosted.size(), added, "addTopicCount: every topic with QueueData on " + BROKER + " " + hosted);
        // The Java NameServer sets perm to READ|WRITE (6) on add, dropping INHERIT.
        assertEquals(PERM_READ | PERM_WRITE, permOn(routeTopic), "perm of " + routeTopic + " after add");
        int tbwPerm = permOn(TBW102);
        assertTrue((tbwPerm & PERM_WRITE) != 0 && (tbwPerm & PERM_READ) != 0, "TBW102 perm after add: " + tbwPerm);
    }

    /** The perm of the QueueData of our broker in the route of {@code topic}. */
    private int permOn(String topic) throws Exception {
        Generation.QueueView queue = NamesrvQueries.route(admin, topic).queueOf(BROKER);
        assertNotNull(queue, "no QueueData of " + BROKER + " in the route of " + topic);
        return queue.perm();
    }

    @Test
    @Order(9)
    void stoppedBrokerLeavesClusterInfoAndRoutesAtOnce() throws Exception {
        String topic = Compat.unique("short-lived");
        env.createTopicAndAwaitRoute(topic, 4, 4, PERM_READ | PERM_WRITE);

        // BrokerController.shutdown() sends UNREGISTER_BROKER (104) and later closes its NameServer
        // connection: a 5.x broker unregisters first and closes ~10 s later; a 4.9 broker stops its
        // store (~5 s) before unregistering. Measure from the moment 104 leaves the broker.
        CompletableFuture<Void> shutdown = CompletableFuture.runAsync(env.broker::close);
        long unregistered = Wait.until("the Java broker to send UNREGISTER_BROKER (104) during shutdown",
            Duration.ofSeconds(30), () -> env.broker.calls().firstSentNanos(104), t -> t != null);
        Wait.until("ferrocket to drop " + BROKER + " from cluster info and from the routes of " + topic
                + " and TBW102 after UNREGISTER_BROKER", Duration.ofSeconds(3),
            () -> {
                env.namesrv.assertAlive();
                Generation.Cluster cluster = NamesrvQueries.cluster(admin);
                return !cluster.brokers().containsKey(BROKER)
                    && !cluster.clusters().getOrDefault(CLUSTER, Set.of()).contains(BROKER)
                    && NamesrvQueries.routeOrNull(admin, topic) == null
                    && NamesrvQueries.routeOrNull(admin, TBW102) == null;
            });
        long ms = Duration.ofNanos(System.nanoTime() - unregistered).toMillis();
        System.out.printf("[compat %s] broker gone from ferrocket %d ms after it sent UNREGISTER_BROKER (shutdown %s)%n",
            gen.tag(), ms, shutdown.isDone() ? "had finished" : "still running, connection still open");
        shutdown.get(60, TimeUnit.SECONDS);
    }
}
