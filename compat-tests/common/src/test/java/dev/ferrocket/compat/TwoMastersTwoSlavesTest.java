package dev.ferrocket.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Collectors;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.message.MessageQueue;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The two HA deployment modes of the RocketMQ docs, end to end with the official client: two broker
 * groups ({@code broker-a}, {@code broker-b}), each a master and a slave (four ferrocket processes)
 * on two NameServers, with ASYNC_MASTER, and with SYNC_MASTER + ASYNC_FLUSH (the recommended
 * setup). A producer sends without pause over both groups and a push consumer consumes; the master
 * of {@code broker-a} is killed with SIGKILL mid-stream. Sends go on on {@code broker-b}; the
 * consumer reads {@code broker-a}'s messages from its slave. Under SYNC_MASTER every acknowledged
 * message is consumed; under ASYNC_MASTER the messages acknowledged but not yet on the slave are
 * counted and reported (the consumer must get every other one). Then the master comes back on its
 * store, the consumer moves back to it (its slave serves no more pulls), and new messages flow.
 */
@Tag("fault")
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@ExtendWith(BrokerLogsOnFailure.class)
class TwoMastersTwoSlavesTest {
    static final int QUEUES = 4;
    static final int PERM_RW = 6;
    /** Route refresh of the test's clients (default 30 s), so they see a master leave and come back promptly. */
    static final int POLL_NAMESRV_MILLIS = 1_000;
    static final Duration CONSUME_TIMEOUT = Duration.ofSeconds(90);
    static final Duration BALANCE_TIMEOUT = Duration.ofSeconds(40);
    static final String A = MultiBrokerCluster.BROKER_A;
    static final String B = MultiBrokerCluster.BROKER_B;
    private final Generation gen = Generation.current();
    private final BrokerGenerationApi bgen = BrokerGenerationApi.current();

    @AfterAll
    void tearDown() {
        Clients.awaitBackgroundShutdowns(10_000);
    }

    void report(String mode, String format, Object... args) {
        System.out.printf("[compat %s 2m-2s %s] %s%n", gen.tag(), mode, String.format(format, args));
    }

    @Test
    void asyncMasterGroupsFailOverToTheirSlavesAndTheLossIsMeasured() throws Exception {
        run("ASYNC_MASTER", false);
    }

    @Test
    void syncMasterWithAsyncFlushLosesNoAcknowledgedMessageWhenAMasterIsKilled() throws Exception {
        run("SYNC_MASTER", true);
    }

    private void run(String role, boolean syncMaster) throws Exception {
        String mode = role.toLowerCase();
        try (MultiBrokerCluster cluster = MultiBrokerCluster.startWithSlaves("2m2s-" + mode, role, Map.of());
             BrokerRpc rpc = new BrokerRpc()) {
            String topic = Compat.unique("2m2s-" + mode);
            bgen.createTopic(cluster.admin(0), MultiBrokerCluster.CLUSTER, topic, QUEUES);
            cluster.awaitRoute(topic, List.of(A, B), QUEUES, QUEUES, PERM_RW);
            for (String b : List.of(A, B)) {
                HaCluster.awaitTopicOn(rpc, cluster.brokerAddr(MultiBrokerCluster.slave(b)), topic,
                    Duration.ofSeconds(30), cluster::assertAlive);
            }
            DefaultMQProducer producer = FeatureClients.producer(cluster.namesrvAddrs(), "2m2s", POLL_NAMESRV_MILLIS);
            producer.setSendMsgTimeout(3_000);
            String group = Compat.unique("cg-2m2s");
            Deliveries got = new Deliveries();
            DefaultMQPushConsumer consumer = Clients.push(cluster.namesrvAddrs(), group, "2m2s", topic, "*",
                got.listener("c"));
            consumer.setPollNameServerInterval(POLL_NAMESRV_MILLIS);
            MultiMasterTest.Sender sender = null;
            try {
                List<Deliveries.Sent> probes = new ArrayList<>();
                for (String b : List.of(A, B)) {
                    awaitSendOk(producer, cluster, new MessageQueue(topic, b, 0), "probe-" + b, probes);
                }
                consumer.start();
                cluster.awaitHeld(consumer, topic, MultiBrokerCluster.queues(QUEUES, A, B), BALANCE_TIMEOUT);

                sender = new MultiMasterTest.Sender(producer, topic, "load");
                MultiMasterTest.Sender s = sender;
                Wait.until("150 acknowledged sends on each group", Duration.ofSeconds(60), () -> {
                    cluster.assertAlive();
                    return List.of(s.okOn(A), s.okOn(B));
                }, l -> l.get(0) >= 150 && l.get(1) >= 150);

                cluster.killBroker(A);
                long killedAt = System.currentTimeMillis();
                int okAtKill = s.ok.size();
                report(mode, "master of broker-a killed after %d acknowledged sends (%d on broker-a)", okAtKill, s.okOn(A));
                cluster.awaitListed(A, false);
                Wait.until("150 more acknowledged sends after the kill", Duration.ofSeconds(60), () -> {
                    cluster.assertAlive(A);
                    return s.ok.size() - okAtKill;
                }, n -> n >= 150);
                s.close();

                // What the slave of broker-a holds decides what can be consumed: an acknowledged
                // message at or past its max offset of the queue was lost with the master.
                String slaveA = cluster.brokerAddr(MultiBrokerCluster.slave(A));
                Map<Integer, Long> slaveMax = HaCluster.maxOffsets(rpc, slaveA, topic, QUEUES);
                List<MultiMasterTest.Sender.Ack> ackedOnA = s.ok.stream()
                    .filter(a -> a.result().getMessageQueue().getBrokerName().equals(A)).toList();
                List<String> lost = ackedOnA.stream()
                    .filter(a -> a.result().getQueueOffset() >= slaveMax.get(a.result().getMessageQueue().getQueueId()))
                    .map(a -> a.sent().key()).toList();
                Set<String> lostKeys = Set.copyOf(lost);
                List<Deliveries.Sent> expected = s.ok.stream().map(MultiMasterTest.Sender.Ack::sent)
                    .filter(m -> !lostKeys.contains(m.key())).toList();
                cluster.awaitDelivered("after the master of broker-a was killed", got, expected, CONSUME_TIMEOUT, A);
                Set<String> ackedKeys = s.ok.stream().map(a -> a.sent().key()).collect(Collectors.toSet());
                int dups = Deliveries.assertExactly("acknowledged messages consumed (from broker-b and broker-a's slave)",
                    expected, got.matching(d -> ackedKeys.contains(d.key()) && !lostKeys.contains(d.key())));
                Set<String> probeKeys = probes.stream().map(Deliveries.Sent::key).collect(Collectors.toSet());
                List<String> foreign = got.keys().stream()
                    .filter(k -> !s.attempted.contains(k) && !probeKeys.contains(k)).sorted().toList();
                assertEquals(List.of(), foreign, "consumed messages that were never sent");
                report(mode, "kill -9 of broker-a's master under load: %d sends acknowledged (%d by broker-a), "
                        + "%d of them lost (not on the slave: slave max offsets %s), %d failed sends, all others "
                        + "consumed %d ms after the kill, %d duplicate deliveries", s.ok.size(), ackedOnA.size(),
                    lost.size(), slaveMax, s.failures.size(), System.currentTimeMillis() - killedAt, dups);
                if (syncMaster) {
                    assertEquals(List.of(), lost, "SYNC_MASTER acknowledged messages its slave does not have");
                }

                // The master returns on its store: the consumer moves back to it.
                cluster.startBroker(A);
                cluster.awaitRoute(topic, List.of(A, B), QUEUES, QUEUES, PERM_RW);
                awaitSendOk(producer, cluster, new MessageQueue(topic, A, 0), "probe-back", probes);
                String masterA = cluster.brokerAddr(A);
                AtomicInteger round = new AtomicInteger();
                Wait.until("the consumer to pull broker-a's queues from its master again (a message on each queue "
                    + "fetched from the master, none from the slave)", Duration.ofSeconds(60), () -> {
                        cluster.assertAlive();
                        long masterBefore = gets(cluster, masterA);
                        long slaveBefore = gets(cluster, slaveA);
                        List<Deliveries.Sent> batch = sendToEachQueue(producer, topic, A, "back-" + round.incrementAndGet());
                        cluster.awaitDelivered("round " + round.get() + " after broker-a's master returned", got, batch, CONSUME_TIMEOUT);
                        return gets(cluster, masterA) - masterBefore >= QUEUES && gets(cluster, slaveA) == slaveBefore;
                    });
                long masterBefore = gets(cluster, masterA);
                long slaveBefore = gets(cluster, slaveA);
                List<Deliveries.Sent> after = new ArrayList<>();
                for (int i = 0; i < 10; i++) {
                    after.addAll(sendToEachQueue(producer, topic, A, "after-" + i));
                }
                cluster.awaitDelivered("after broker-a's master returned", got, after, CONSUME_TIMEOUT);
                assertEquals(slaveBefore, gets(cluster, slaveA), "messages broker-a's slave served after its master "
                    + "returned and the consumer moved back");
                assertTrue(gets(cluster, masterA) - masterBefore >= after.size(), "broker-a's master served "
                    + (gets(cluster, masterA) - masterBefore) + " messages of the " + after.size() + " sent to it");
                report(mode, "broker-a's master back: the consumer moved back to it after %d round(s); %d more "
                    + "messages consumed from it", round.get(), after.size());
            } finally {
                if (sender != null) {
                    sender.close();
                }
                Clients.shutdownAll(List.of(consumer::shutdown, producer::shutdown), 15_000);
            }
        }
    }

    /**
     * Sends to {@code mq} until one send answers SEND_OK (under SYNC_MASTER: the slave is connected
     * and in sync); every attempt is stored on the master, so all are recorded in {@code sent}.
     */
    private static void awaitSendOk(DefaultMQProducer producer, MultiBrokerCluster cluster, MessageQueue mq,
                                    String prefix, List<Deliveries.Sent> sent) {
        AtomicInteger n = new AtomicInteger();
        Wait.until("a send to " + mq.getBrokerName() + " queue " + mq.getQueueId() + " to answer SEND_OK",
            Duration.ofSeconds(30), () -> {
                cluster.assertAlive();
                Deliveries.Sent s = new Deliveries.Sent(mq.getTopic(), prefix + "-" + n.incrementAndGet(), "probe", "probe");
                sent.add(s);
                try {
                    return producer.send(Clients.message(s.topic(), s.tags(), s.key(), s.body()), mq).getSendStatus();
                } catch (Exception e) {
                    return e.toString();
                }
            }, SendStatus.SEND_OK::equals);
    }

    /** One message to each queue of {@code broker}, each SEND_OK. */
    private static List<Deliveries.Sent> sendToEachQueue(DefaultMQProducer producer, String topic, String broker,
                                                         String prefix) throws Exception {
        List<Deliveries.Sent> out = new ArrayList<>();
        for (int q = 0; q < QUEUES; q++) {
            Deliveries.Sent s = new Deliveries.Sent(topic, prefix + "-q" + q, "TagK", "body of " + prefix + "-q" + q);
            SendResult r = producer.send(Clients.message(topic, s.tags(), s.key(), s.body()),
                new MessageQueue(topic, broker, q));
            FeatureClients.ok(r, "send of " + s.key());
            out.add(s);
        }
        return out;
    }

    /** Messages the broker at {@code addr} has served to consumers since it started (runtime stats). */
    private static long gets(MultiBrokerCluster cluster, String addr) throws Exception {
        return Long.parseLong(cluster.admin(0).fetchBrokerRuntimeStats(addr).getTable().get("msgGetTotalTodayNow"));
    }
}
