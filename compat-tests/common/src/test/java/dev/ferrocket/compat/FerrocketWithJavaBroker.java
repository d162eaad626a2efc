package dev.ferrocket.compat;

import java.time.Duration;
import java.util.Map;
import org.apache.rocketmq.common.TopicConfig;
import org.apache.rocketmq.tools.admin.DefaultMQAdminExt;

/**
 * A ferrocket NameServer, the Java broker registered with it, and an admin client: the fixture of
 * the tests that need a real broker. Closing stops all three.
 */
public final class FerrocketWithJavaBroker implements AutoCloseable {
    public static final Duration REGISTRATION_TIMEOUT = Duration.ofSeconds(20);
    public static final Duration ROUTE_TIMEOUT = Duration.ofSeconds(15);

    public final Generation generation = Generation.current();
    public final Ferrocket namesrv;
    public final JavaBroker broker;
    public final DefaultMQAdminExt admin;

    private FerrocketWithJavaBroker(Ferrocket namesrv, JavaBroker broker, DefaultMQAdminExt admin) {
        this.namesrv = namesrv;
        this.broker = broker;
        this.admin = admin;
    }

    /** Starts all three and waits until the NameServer lists the broker. */
    public static FerrocketWithJavaBroker start(String name, String cluster, String brokerName) throws Exception {
        Ferrocket namesrv = Ferrocket.startNamesrv(name, Map.of());
        JavaBroker broker = null;
        DefaultMQAdminExt admin = null;
        try {
            broker = JavaBroker.start(cluster, brokerName, namesrv.addr());
            admin = Compat.admin(namesrv.addr());
            FerrocketWithJavaBroker fixture = new FerrocketWithJavaBroker(namesrv, broker, admin);
            fixture.awaitBrokerListed();
            return fixture;
        } catch (Throwable t) {
            if (admin != null) {
                admin.shutdown();
            }
            if (broker != null) {
                broker.close();
            }
            System.err.println("[compat] setup failed: " + t + "\n" + namesrv.logTail(60)
                + "\n---- remoting calls ----\n" + RecordingRpcHook.drainAll());
            namesrv.close();
            throw t;
        }
    }

    private void awaitBrokerListed() {
        String brokerName = broker.brokerName();
        long[] lastNudge = {System.nanoTime()};
        Wait.until("the Java broker " + brokerName + " (" + broker.addr() + ") to appear in "
                + "GET_BROKER_CLUSTER_INFO of ferrocket", REGISTRATION_TIMEOUT,
            () -> {
                namesrv.assertAlive();
                Generation.Cluster cluster = NamesrvQueries.cluster(admin);
                if (!cluster.brokers().containsKey(brokerName)
                    && System.nanoTime() - lastNudge[0] > Duration.ofSeconds(1).toNanos()) {
                    // A 5.x broker registers at start only with NameServers its client has already
                    // found reachable (a scan that races with start), then again 10 s later. Run that
                    // periodic registration now instead of waiting for it.
                    lastNudge[0] = System.nanoTime();
                    broker.controller().registerBrokerAll(true, false, true);
                }
                return cluster;
            },
            c -> c.brokers().containsKey(brokerName));
    }

    /**
     * Creates a topic on the broker with the admin client (UPDATE_AND_CREATE_TOPIC, 17); the broker
     * then registers it with the NameServer. Waits until the route shows those queue numbers.
     */
    public void createTopicAndAwaitRoute(String topic, int readQueueNums, int writeQueueNums, int perm)
        throws Exception {
        admin.createAndUpdateTopicConfig(broker.addr(), new TopicConfig(topic, readQueueNums, writeQueueNums, perm));
        String brokerName = broker.brokerName();
        Wait.until("route of " + topic + " with " + readQueueNums + " read / " + writeQueueNums
                + " write queues on " + brokerName + " in ferrocket", ROUTE_TIMEOUT,
            () -> {
                namesrv.assertAlive();
                return NamesrvQueries.routeOrNull(admin, topic);
            },
            r -> r != null && r.queueOf(brokerName) != null
                && r.queueOf(brokerName).readQueueNums() == readQueueNums
                && r.queueOf(brokerName).writeQueueNums() == writeQueueNums);
    }

    @Override
    public void close() {
        try {
            admin.shutdown();
        } finally {
            try {
                broker.close();
            } finally {
                namesrv.close();
            }
        }
    }
}
