package dev.ferrocket.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.stream.Collectors;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.message.MessageQueue;
import org.apache.rocketmq.tools.admin.DefaultMQAdminExt;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Two master brokers ({@code broker-a}, {@code broker-b}, separate processes) registered with two
 * NameServers: a topic created on the cluster has queues on both brokers in the routes of both
 * NameServers, and the official producer and push consumer use both. Then {@code broker-b}
 * ({@code flushDiskType=SYNC_FLUSH}) is killed with SIGKILL while a producer keeps sending: sends keep
 * succeeding on {@code broker-a}, and once {@code broker-b} is back on the same store every
 * acknowledged message is consumed.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
@ExtendWith(BrokerLogsOnFailure.class)
class MultiMasterTest {
    static final int PERM_RW = 6;
    static final Duration CONSUME_TIMEOUT = Duration.ofSeconds(60);
    static final Duration BALANCE_TIMEOUT = Duration.ofSeconds(40);
    /** Route refresh of the test's clients (default 30 s), so they see a broker leave and come back promptly. */
    static final int POLL_NAMESRV_MILLIS = 1_000;
    static final String A = MultiBrokerCluster.BROKER_A;
    static final String B = MultiBrokerCluster.BROKER_B;
    private final Generation gen = Generation.current();
    private final BrokerGenerationApi bgen = BrokerGenerationApi.current();
    private MultiBrokerCluster cluster;

    @BeforeAll
    void setUp() throws Exception {
        cluster = MultiBrokerCluster.start("multi-master", Map.of(B, Map.of("flushDiskType", "SYNC_FLUSH")));
    }

    @AfterAll
    void tearDown() {
        if (cluster != null) {
            cluster.close();
        }
        Clients.awaitBackgroundShutdowns(10_000);
    }

    void report(String format, Object... args) {
        System.out.printf("[compat %s multi-master] %s%n", gen.tag(), String.format(format, args));
    }

    /** A push consumer on both NameServers with a 1 s route refresh, not yet started. */
    DefaultMQPushConsumer consumer(String group, String label, String topic, Deliveries got) throws Exception {
        DefaultMQPushConsumer c = Clients.push(cluster.namesrvAddrs(), group, label, topic, "*", got.listener(label));
        c.setPollNameServerInterval(POLL_NAMESRV_MILLIS);
        return c;
    }

    void awaitHeld(DefaultMQPushConsumer c, String topic, Set<String> want, String... down) {
        cluster.awaitHeld(c, topic, want, BALANCE_TIMEOUT, down);
    }

    static Set<String> queues(String topic, int perBroker, String... brokers) {
        return MultiBrokerCluster.queues(perBroker, brokers);
    }

    void awaitDelivered(String what, Deliveries got, List<Deliveries.Sent> sent, String... down) {
        cluster.awaitDelivered(what, got, sent, CONSUME_TIMEOUT, down);
    }

    @Test
    @Order(1)
    void bothNameServersRouteATopicToBothMastersAndClientsUseBoth() throws Exception {
        for (int i = 0; i < 2; i++) {
            Generation.Cluster c = NamesrvQueries.cluster(cluster.admin(i));
            assertEquals(Set.of(A, B), c.clusters().get(MultiBrokerCluster.CLUSTER), "brokers of the cluster on NameServer "
                + (i + 1) + ": " + c);
            for (String b : List.of(A, B)) {
                assertEquals(Map.of(0L, cluster.brokerAddr(b)), c.brokers().get(b).brokerAddrs(),
                    "addresses of " + b + " on NameServer " + (i + 1));
                assertEquals(MultiBrokerCluster.CLUSTER, c.brokers().get(b).cluster(), "cluster of " + b);
            }
        }
        String topic = Compat.unique("multi");
        bgen.createTopic(cluster.admin(0), MultiBrokerCluster.CLUSTER, topic, 4);
        cluster.awaitRoute(topic, List.of(A, B), 4, 4, PERM_RW);

        DefaultMQProducer producer = FeatureClients.producer(cluster.namesrvAddrs(), "multi", POLL_NAMESRV_MILLIS);
        String group = Compat.unique("cg-multi");
        Deliveries got = new Deliveries();
        DefaultMQPushConsumer c = consumer(group, "multi", topic, got);
        try {
            c.start();
            awaitHeld(c, topic, queues(topic, 4, A, B));
            List<Deliveries.Sent> sent = new ArrayList<>();
            Map<String, Integer> perBroker = new TreeMap<>();
            Set<String> queuesUsed = new TreeSet<>();
            for (int i = 0; i < 40; i++) {
                Deliveries.Sent s = new Deliveries.Sent(topic, String.format("multi-%03d", i), "TagM", "body-multi-" + i);
                SendResult r = FeatureClients.ok(producer.send(Clients.message(topic, s.tags(), s.key(), s.body())),
                    "send of " + s.key());
                perBroker.merge(r.getMessageQueue().getBrokerName(), 1, Integer::sum);
                queuesUsed.add(r.getMessageQueue().getBrokerName() + ":" + r.getMessageQueue().getQueueId());
                sent.add(s);
            }
            assertEquals(queues(topic, 4, A, B), queuesUsed, "queues the producer sent to (round robin over both brokers)");
            assertEquals(Map.of(A, 20, B, 20), perBroker, "messages per broker");
            awaitDelivered("two masters", got, sent);
            Wait.until("the consumer to finish what it pulled", Duration.ofSeconds(10),
                () -> Clients.pending(c, topic), n -> n == 0);
            assertEquals(0, Deliveries.assertExactly("messages consumed from both masters", sent, got.all()),
                "duplicate deliveries in a stable group");
            Map<String, Integer> consumedPerBroker = new TreeMap<>();
            got.all().forEach(d -> consumedPerBroker.merge(d.offsetMsgId().substring(0, 16), 1, Integer::sum));
            assertEquals(2, consumedPerBroker.size(), "store hosts (offsetMsgId prefixes) of the consumed messages: "
                + consumedPerBroker);
        } finally {
            Clients.shutdownAll(List.of(c::shutdown, producer::shutdown), 15_000);
        }
    }

    /** Keeps sending synchronously until stopped; records acknowledged sends and failures with their times. */
    static final class Sender implements AutoCloseable {
        record Ack(Deliveries.Sent sent, SendResult result, long atMillis) {
        }

        final List<Ack> ok = new CopyOnWriteArrayList<>();
        final List<String> failures = new CopyOnWriteArrayList<>();
        final List<Long> failureTimes = new CopyOnWriteArrayList<>();
        final Set<String> attempted = java.util.concurrent.ConcurrentHashMap.newKeySet();
        private final Thread thread;
        private volatile boolean stop;

        Sender(DefaultMQProducer p, String topic, String prefix) {
            thread = new Thread(() -> {
                for (int i = 0; !stop; i++) {
                    Deliveries.Sent s = new Deliveries.Sent(topic, String.format("%s-%05d", prefix, i), "TagK",
                        "body-" + prefix + "-" + i);
                    attempted.add(s.key());
                    try {
                        SendResult r = p.send(Clients.message(topic, s.tags(), s.key(), s.body()));
                        if (r.getSendStatus() == SendStatus.SEND_OK) {
                            ok.add(new Ack(s, r, System.currentTimeMillis()));
                        } else {
                            failures.add(s.key() + ": " + r.getSendStatus());
                            failureTimes.add(System.currentTimeMillis());
                        }
                    } catch (Exception e) {
                        failures.add(s.key() + ": " + e);
                        failureTimes.add(System.currentTimeMillis());
                        Wait.sleep(20);
                    }
                    Wait.sleep(5);
                }
            }, "compat-sender-" + prefix);
            thread.setDaemon(true);
            thread.start();
        }

        long okOn(String broker) {
            return ok.stream().filter(a -> a.result().getMessageQueue().getBrokerName().equals(broker)).count();
        }

        @Override
        public void close() throws InterruptedException {
            stop = true;
            thread.join(30_000);
        }
    }

    @Test
    @Order(2)
    @Tag("fault")
    void killedMasterLosesNoAcknowledgedMessageAndSendsGoOnOnTheOther() throws Exception {
        String topic = Compat.unique("multi-kill");
        bgen.createTopic(cluster.admin(0), MultiBrokerCluster.CLUSTER, topic, 4);
        cluster.awaitRoute(topic, List.of(A, B), 4, 4, PERM_RW);
        DefaultMQProducer producer = FeatureClients.producer(cluster.namesrvAddrs(), "kill", POLL_NAMESRV_MILLIS);
        String group = Compat.unique("cg-multi-kill");
        Deliveries got = new Deliveries();
        DefaultMQPushConsumer c = consumer(group, "kill", topic, got);
        Sender sender = null;
        long killedAt;
        int okAtKill;
        long restartedAt;
        try {
            c.start();
            awaitHeld(c, topic, queues(topic, 4, A, B));
            sender = new Sender(producer, topic, "kill");
            Sender s = sender;
            Wait.until("200 acknowledged sends, some on each broker", Duration.ofSeconds(30), () -> {
                cluster.assertAlive();
                return List.of(s.okOn(A), s.okOn(B));
            }, l -> l.get(0) + l.get(1) >= 200 && l.get(0) >= 50 && l.get(1) >= 50);

            cluster.killBroker(B);
            killedAt = System.currentTimeMillis();
            report("broker-b killed after %d acknowledged sends", s.ok.size());
            okAtKill = s.ok.size();
            long bAckedBeforeKill = s.okOn(B);
            // the NameServers drop broker-b when its connections close
            cluster.awaitListed(B, false);
            cluster.awaitRoute(topic, List.of(A), 4, 4, PERM_RW);
            Wait.until("200 more acknowledged sends after the kill", Duration.ofSeconds(30), () -> {
                cluster.assertAlive(B);
                return s.ok.size() - okAtKill;
            }, n -> n >= 200);
            List<String> ackedByDeadB = s.ok.stream().filter(a -> a.result().getMessageQueue().getBrokerName().equals(B)
                && a.atMillis() > killedAt + 1_000).map(a -> a.sent().key()).toList();
            assertEquals(List.of(), ackedByDeadB, "sends acknowledged by broker-b more than 1 s after it was killed");

            // broker-b comes back on the same store
            report("%d ms after the kill: 200 more sends acknowledged; restarting broker-b", System.currentTimeMillis() - killedAt);
            cluster.startBroker(B);
            restartedAt = System.currentTimeMillis();
            cluster.awaitRoute(topic, List.of(A, B), 4, 4, PERM_RW);
            int okAtRestart = s.ok.size();
            long bAtRestart = s.okOn(B);
            Wait.until("sends acknowledged by broker-b again after its restart", Duration.ofSeconds(30), () -> {
                cluster.assertAlive();
                return s.okOn(B) - bAtRestart;
            }, n -> n >= 20);
            Wait.until("50 more sends after the restart", Duration.ofSeconds(30), () -> s.ok.size() - okAtRestart,
                n -> n >= 50);
            s.close();

            // every acknowledged message is consumed: those broker-b had before the crash included
            report("%d ms after the kill: sends stopped", System.currentTimeMillis() - killedAt);
            awaitHeld(c, topic, queues(topic, 4, A, B));
            report("%d ms after the kill: the consumer holds the queues of both brokers again", System.currentTimeMillis() - killedAt);
            List<Deliveries.Sent> acked = s.ok.stream().map(Sender.Ack::sent).toList();
            awaitDelivered("after broker-b's crash and restart", got, acked);
            Wait.until("the consumer to finish what it pulled", Duration.ofSeconds(10),
                () -> Clients.pending(c, topic), n -> n == 0);

            Set<String> ackedKeys = acked.stream().map(Deliveries.Sent::key).collect(Collectors.toSet());
            List<Deliveries.Delivery> ofAcked = got.matching(d -> ackedKeys.contains(d.key()));
            int duplicates = Deliveries.assertExactly("acknowledged messages consumed", acked, ofAcked);
            List<String> foreign = got.all().stream().map(Deliveries.Delivery::key)
                .filter(k -> !ackedKeys.contains(k) && !s.attempted.contains(k)).distinct().toList();
            long unackedStored = got.all().stream().map(Deliveries.Delivery::key)
                .filter(k -> !ackedKeys.contains(k) && s.attempted.contains(k)).distinct().count();
            List<Long> failureOffsets = s.failureTimes.stream().map(t -> t - killedAt).toList();
            report("kill -9 of broker-b: %d sends acknowledged (%d on broker-b before the kill), %d failed at %s ms "
                    + "from the kill (first: %s); %d unacknowledged sends were stored anyway; %d duplicate deliveries; "
                    + "broker-b serving again %d ms after the kill", acked.size(), bAckedBeforeKill,
                s.failures.size(), failureOffsets, s.failures.isEmpty() ? "-" : s.failures.get(0),
                unackedStored, duplicates, restartedAt - killedAt);
            assertEquals(List.of(), foreign, "consumed messages that were never sent");

            // broker-b kept every message it acknowledged (SYNC_FLUSH): its queues reach past each acknowledged offset
            // (the consumer already received them all; this names the queue if not)
            DefaultMQAdminExt admin = cluster.admin(0);
            Map<Integer, Long> maxAckedOffsetOnB = new TreeMap<>();
            s.ok.stream().filter(a -> a.result().getMessageQueue().getBrokerName().equals(B))
                .forEach(a -> maxAckedOffsetOnB.merge(a.result().getMessageQueue().getQueueId(),
                    a.result().getQueueOffset(), Math::max));
            for (var e : maxAckedOffsetOnB.entrySet()) {
                long max = admin.maxOffset(new MessageQueue(topic, B, e.getKey()));
                assertTrue(max > e.getValue(), "broker-b queue " + e.getKey() + " has max offset " + max
                    + " after the restart, but acknowledged a message at offset " + e.getValue() + " before the kill");
            }

            // few failures, and only around the kill (the producer retries on the other broker)
            assertTrue(s.failures.size() <= 5, "sends that failed although broker-a was up: " + s.failures);
            for (long t : failureOffsets) {
                assertTrue(t >= -1_000 && t <= 5_000, "a send failed " + t + " ms from the kill of broker-b (failures: "
                    + s.failures + ")");
            }
        } finally {
            if (sender != null) {
                sender.close();
            }
            Clients.shutdownAll(List.of(c::shutdown, producer::shutdown), 15_000);
        }
    }
}
