package dev.ferrocket.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.rocketmq.remoting.protocol.RemotingCommand;
import org.apache.rocketmq.remoting.protocol.RemotingSerializable;
import org.apache.rocketmq.remoting.protocol.SerializeType;
import org.apache.rocketmq.tools.admin.DefaultMQAdminExt;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Brokers faked with the official remoting client: REGISTER_BROKER requests built like the real
 * broker's, on connections the test controls, so liveness rules can be checked one at a time.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@ExtendWith(DumpLogsOnFailure.class)
class FakeBrokerRegistrationTest {
    private static final int RW = 6;

    private final Generation gen = Generation.current();
    /** Default expiry (120 s): anything that disappears within seconds left because of a close. */
    private Ferrocket namesrv;
    private DefaultMQAdminExt admin;

    @BeforeAll
    void setUp() throws Exception {
        namesrv = Ferrocket.startNamesrv("fake-brokers", Map.of());
        admin = Compat.admin(namesrv.addr());
    }

    @AfterAll
    void tearDown() {
        if (admin != null) {
            admin.shutdown();
        }
        if (namesrv != null) {
            namesrv.close();
        }
    }

    private static Generation.BrokerIdentity identity(String cluster, String brokerName, long brokerId) {
        int port = Ports.free();
        return new Generation.BrokerIdentity(cluster, brokerName, brokerId, "127.0.0.1:" + port, "127.0.0.1:" + (port + 1));
    }

    private static List<Generation.TopicSpec> twoTopics(String a, String b) {
        return List.of(new Generation.TopicSpec(a, 4, 4, RW), new Generation.TopicSpec(b, 2, 2, RW));
    }

    /** The broker is in cluster info and both topics route to it with the registered queue numbers. */
    private static void assertRegistered(DefaultMQAdminExt admin, Generation.BrokerIdentity b, String t1, String t2)
        throws Exception {
        Generation.Cluster cluster = NamesrvQueries.cluster(admin);
        Generation.BrokerView view = cluster.brokers().get(b.brokerName());
        assertNotNull(view, b.brokerName() + " in cluster info " + cluster);
        assertEquals(Map.of(b.brokerId(), b.brokerAddr()), view.brokerAddrs(), "brokerAddrs of " + b.brokerName());
        assertTrue(cluster.clusters().getOrDefault(b.cluster(), Set.of()).contains(b.brokerName()),
            "clusterAddrTable " + cluster.clusters());
        assertEquals(new Generation.QueueView(b.brokerName(), 4, 4, RW, 0),
            NamesrvQueries.route(admin, t1).queueOf(b.brokerName()), "QueueData of " + t1);
        assertEquals(new Generation.QueueView(b.brokerName(), 2, 2, RW, 0),
            NamesrvQueries.route(admin, t2).queueOf(b.brokerName()), "QueueData of " + t2);
    }

    /** Waits until neither cluster info nor either route mentions the broker; returns the ms waited. */
    private static long awaitGone(Ferrocket namesrv, DefaultMQAdminExt admin, Generation.BrokerIdentity b,
                                  String t1, String t2, Duration timeout, String why) {
        long start = System.nanoTime();
        Wait.until(b.brokerName() + " to disappear from cluster info and the routes of " + t1 + ", " + t2
                + " (" + why + ")", timeout,
            () -> {
                namesrv.assertAlive();
                Generation.Cluster cluster = NamesrvQueries.cluster(admin);
                return !cluster.brokers().containsKey(b.brokerName())
                    && !cluster.clusters().getOrDefault(b.cluster(), Set.of()).contains(b.brokerName())
                    && NamesrvQueries.routeOrNull(admin, t1) == null
                    && NamesrvQueries.routeOrNull(admin, t2) == null;
            });
        return Duration.ofNanos(System.nanoTime() - start).toMillis();
    }

    @Test
    void closedBrokerConnectionRemovesTheBrokerAtOnce() throws Exception {
        String t1 = Compat.unique("crash-a");
        String t2 = Compat.unique("crash-b");
        Generation.BrokerIdentity b = identity(Compat.unique("cluster"), Compat.unique("broker"), 0);
        FakeBroker broker = new FakeBroker(gen, namesrv.addr(), b, twoTopics(t1, t2));
        try {
            broker.register();
            assertRegistered(admin, b, t1, t2);
        } finally {
            broker.close();
        }
        long ms = awaitGone(namesrv, admin, b, t1, t2, Duration.ofSeconds(3),
            "its connection was closed without UNREGISTER_BROKER; expiry is 120 s");
        System.out.printf("[compat %s] broker gone %d ms after its connection was closed%n", gen.tag(), ms);
    }

    @Test
    void slaveLearnsMasterAddressAndHaAddress() throws Exception {
        String cluster = Compat.unique("cluster");
        String brokerName = Compat.unique("broker");
        String t1 = Compat.unique("ha-a");
        String t2 = Compat.unique("ha-b");
        Generation.BrokerIdentity m = identity(cluster, brokerName, 0);
        Generation.BrokerIdentity s = identity(cluster, brokerName, 1);
        try (FakeBroker master = new FakeBroker(gen, namesrv.addr(), m, twoTopics(t1, t2));
             FakeBroker slave = new FakeBroker(gen, namesrv.addr(), s, twoTopics(t1, t2))) {
            master.register();
            Generation.RegisterResult result = slave.register();

            assertEquals(m.brokerAddr(), result.masterAddr(), "masterAddr in the slave's RegisterBrokerResponseHeader");
            assertEquals(m.haServerAddr(), result.haServerAddr(), "haServerAddr in the slave's RegisterBrokerResponseHeader");

            assertRegisteredMasterAndSlave(m, s, t1);
        }
    }

    @Test
    void brokerThatStopsRegisteringExpires() throws Exception {
        Map<String, String> fastExpiry = Map.of("brokerChannelExpiredTime", "3000", "scanNotActiveBrokerInterval", "500");
        try (Ferrocket expiring = Ferrocket.startNamesrv("expiry", fastExpiry)) {
            DefaultMQAdminExt expiringAdmin = Compat.admin(expiring.addr());
            String t1 = Compat.unique("expire-a");
            String t2 = Compat.unique("expire-b");
            Generation.BrokerIdentity b = identity(Compat.unique("cluster"), Compat.unique("broker"), 0);
            try (FakeBroker broker = new FakeBroker(gen, expiring.addr(), b, twoTopics(t1, t2))) {
                broker.register();
                long registered = System.nanoTime();
                assertRegistered(expiringAdmin, b, t1, t2);

                // The connection stays open and silent: only the 3 s expiry can remove the broker.
                awaitGone(expiring, expiringAdmin, b, t1, t2, Duration.ofSeconds(10),
                    "brokerChannelExpiredTime=3000, scanNotActiveBrokerInterval=500");
                long ms = Duration.ofNanos(System.nanoTime() - registered).toMillis();
                System.out.printf("[compat %s] silent broker expired %d ms after registering%n", gen.tag(), ms);
                assertTrue(ms >= 2_500, "expired after " + ms + " ms, before brokerChannelExpiredTime=3000");
                assertTrue(ms <= 7_000, "expired after " + ms + " ms, expected about 3000 + one 500 ms scan");
            } finally {
                expiringAdmin.shutdown();
            }
        }
    }

    @Test
    void topicOnTwoBrokersLosesOnlyTheClosedBrokersQueues() throws Exception {
        String cluster = Compat.unique("cluster");
        String shared = Compat.unique("shared");
        String onlyA = Compat.unique("only-a");
        String onlyB = Compat.unique("only-b");
        Generation.BrokerIdentity a = identity(cluster, Compat.unique("broker"), 0);
        Generation.BrokerIdentity b = identity(cluster, Compat.unique("broker"), 0);
        try (FakeBroker brokerB = new FakeBroker(gen, namesrv.addr(), b, twoTopics(shared, onlyB))) {
            FakeBroker brokerA = new FakeBroker(gen, namesrv.addr(), a, twoTopics(shared, onlyA));
            try {
                brokerA.register();
                brokerB.register();
                Generation.Route route = NamesrvQueries.route(admin, shared);
                assertEquals(Set.of(a.brokerName(), b.brokerName()),
                    Set.copyOf(route.queues().stream().map(Generation.QueueView::brokerName).toList()),
                    "QueueData brokers of " + shared + ": " + route);
                assertEquals(Set.of(a.brokerName(), b.brokerName()),
                    Set.copyOf(route.brokers().stream().map(Generation.BrokerView::brokerName).toList()),
                    "BrokerData of " + shared + ": " + route);
                assertEquals(Set.of(a.brokerName(), b.brokerName()), NamesrvQueries.cluster(admin).clusters().get(cluster),
                    "members of " + cluster);
            } finally {
                brokerA.close();
            }
            Generation.Route survivor = Wait.until("the route of " + shared + " to keep only " + b.brokerName()
                    + " after " + a.brokerName() + "'s connection closed", Duration.ofSeconds(3),
                () -> NamesrvQueries.routeOrNull(admin, shared),
                r -> r != null && r.queues().size() == 1 && r.brokers().size() == 1);
            assertEquals(new Generation.QueueView(b.brokerName(), 4, 4, RW, 0), survivor.queues().get(0), "QueueData left");
            assertEquals(Map.of(0L, b.brokerAddr()), survivor.brokers().get(0).brokerAddrs(), "BrokerData left");
            assertEquals(null, NamesrvQueries.routeOrNull(admin, onlyA), "route of " + onlyA);
            assertNotNull(NamesrvQueries.routeOrNull(admin, onlyB), "route of " + onlyB);
            assertEquals(Set.of(b.brokerName()), NamesrvQueries.cluster(admin).clusters().get(cluster),
                "members of " + cluster + " after one broker left");
        }
    }

    @Test
    void registrationAndRouteQueryInRocketmqBinaryHeaders() throws Exception {
        // A Java peer started with -Drocketmq.serialize.type=ROCKETMQ sends binary headers; the
        // server must decode them (it may answer in either form, the client reads both).
        String t1 = Compat.unique("binary-a");
        String t2 = Compat.unique("binary-b");
        Generation.BrokerIdentity m = identity(Compat.unique("cluster"), Compat.unique("broker"), 0);
        Generation.BrokerIdentity s = identity(m.cluster(), m.brokerName(), 1);
        try (FakeBroker master = new FakeBroker(gen, namesrv.addr(), m, twoTopics(t1, t2), SerializeType.ROCKETMQ);
             FakeBroker slave = new FakeBroker(gen, namesrv.addr(), s, twoTopics(t1, t2), SerializeType.ROCKETMQ)) {
            master.register();
            Generation.RegisterResult result = slave.register();
            assertEquals(m.brokerAddr(), result.masterAddr(), "masterAddr for a slave registering with a ROCKETMQ header");
            assertEquals(m.haServerAddr(), result.haServerAddr(), "haServerAddr for a slave registering with a ROCKETMQ header");
            assertRegisteredMasterAndSlave(m, s, t1);

            RemotingCommand request = RemotingCommand.createRequestCommand(105,
                Protocol.header("header.namesrv.GetRouteInfoRequestHeader", Map.of("topic", t1)));
            RemotingCommand response = master.invoke(request);
            assertEquals(0, response.getCode(), "GET_ROUTEINFO_BY_TOPIC with a ROCKETMQ header: " + response);
            assertNotNull(response.getBody(), "route body");
            Object binaryRoute = RemotingSerializable.decode(response.getBody(), Protocol.typeOrNull("route.TopicRouteData"));
            assertEquals(admin.examineTopicRouteInfo(t1), binaryRoute,
                "the route answered to a ROCKETMQ request equals the one answered to JSON");
        }
    }

    private void assertRegisteredMasterAndSlave(Generation.BrokerIdentity m, Generation.BrokerIdentity s, String topic)
        throws Exception {
        Map<Long, String> both = Map.of(0L, m.brokerAddr(), 1L, s.brokerAddr());
        assertEquals(both, NamesrvQueries.cluster(admin).brokers().get(m.brokerName()).brokerAddrs(),
            "brokerAddrs in cluster info");
        assertEquals(both, NamesrvQueries.route(admin, topic).brokerOf(m.brokerName()).brokerAddrs(),
            "brokerAddrs in the route of " + topic);
    }

    @Test
    void registrationAnswerCarriesTheOrderTopicConfig() throws Exception {
        // The Java NameServer (returnOrderTopicConfigToBroker, default true) answers REGISTER_BROKER
        // with the ORDER_TOPIC_CONFIG namespace as a KVTable; brokers use it for orderly topics.
        String t1 = Compat.unique("ordered");
        String t2 = Compat.unique("plain");
        admin.createAndUpdateKvConfig("ORDER_TOPIC_CONFIG", t1, "broker-x:2;broker-y:2");
        try (FakeBroker broker = new FakeBroker(gen, namesrv.addr(),
            identity(Compat.unique("cluster"), Compat.unique("broker"), 0), twoTopics(t1, t2))) {
            Generation.RegisterResult result = broker.register();
            assertNotNull(result.orderTopicConfig(), "REGISTER_BROKER answer without the ORDER_TOPIC_CONFIG body");
            assertEquals("broker-x:2;broker-y:2", result.orderTopicConfig().get(t1),
                "ORDER_TOPIC_CONFIG in the REGISTER_BROKER answer: " + result.orderTopicConfig());
        } finally {
            admin.deleteKvConfig("ORDER_TOPIC_CONFIG", t1);
        }
    }

    @Test
    void routeBodyUsesLegacyJsonForOldClientsAndStandardJsonForNewOnes() throws Exception {
        // Java NameServer: version >= V4_9_4 (401) or acceptStandardJsonOnly=true -> quoted map keys;
        // older versions (every Go client sends 317) -> fastjson's unquoted {0:"addr"}.
        String t1 = Compat.unique("json-a");
        String t2 = Compat.unique("json-b");
        Generation.BrokerIdentity b = identity(Compat.unique("cluster"), Compat.unique("broker"), 0);
        try (FakeBroker broker = new FakeBroker(gen, namesrv.addr(), b, twoTopics(t1, t2))) {
            broker.register();
            String unquoted = "\"brokerAddrs\":{0:\"" + b.brokerAddr() + "\"}";
            String quoted = "\"brokerAddrs\":{\"0\":\"" + b.brokerAddr() + "\"}";
            assertRouteBody(broker, t1, 317, Map.of(), unquoted);
            assertRouteBody(broker, t1, 409, Map.of(), quoted);
            assertRouteBody(broker, t1, 317, Map.of("acceptStandardJsonOnly", "true"), quoted);
        }
    }

    private static void assertRouteBody(FakeBroker broker, String topic, int version, Map<String, String> extra,
                                        String expected) throws Exception {
        Map<String, String> fields = new java.util.HashMap<>(extra);
        fields.put("topic", topic);
        RemotingCommand request = RemotingCommand.createRequestCommand(105,
            Protocol.header("header.namesrv.GetRouteInfoRequestHeader", fields));
        request.setVersion(version);
        RemotingCommand response = broker.invoke(request);
        assertEquals(0, response.getCode(), "GET_ROUTEINFO_BY_TOPIC version " + version + " " + extra + ": " + response);
        String body = new String(response.getBody(), java.nio.charset.StandardCharsets.UTF_8);
        assertTrue(body.contains(expected), "route body for request version " + version + " " + extra
            + " should contain " + expected + ": " + body);
    }
}
