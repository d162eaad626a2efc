package dev.ferrocket.compat;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import org.apache.rocketmq.common.TopicConfig;
import org.apache.rocketmq.tools.admin.DefaultMQAdminExt;

/**
 * A ferrocket broker with its NameServer, deployed one of two ways:
 * <ul>
 *   <li>{@link Mode#STANDALONE}: one process, {@code ferrocket standalone -c broker.conf --namesrv-config namesrv.conf};</li>
 *   <li>{@link Mode#SEPARATE}: {@code ferrocket namesrv -c namesrv.conf} and
 *       {@code ferrocket broker -n 127.0.0.1:<port> -c broker.conf}.</li>
 * </ul>
 * Everything lives in one directory under {@link TestDirs#root()} (configs, {@code store/}, one log
 * per process, appended to across restarts with a header per start). Ready = the broker port accepts
 * connections and the NameServer lists the broker at {@code 127.0.0.1:<port>}.
 *
 * <p>"The broker" is the broker process in SEPARATE mode and the whole process in STANDALONE mode:
 * {@link #stopBroker()}, {@link #killBroker()} and {@link #startBroker()} act on it; in standalone
 * mode the NameServer goes down and comes back with it (same ports).
 */
public final class BrokerDeployment implements AutoCloseable {
    public enum Mode { STANDALONE, SEPARATE }

    public static final String CLUSTER = "FerroCluster";
    public static final String BROKER_NAME = "ferro-broker-a";
    public static final Duration READY_TIMEOUT = Duration.ofSeconds(20);
    public static final Duration ROUTE_TIMEOUT = Duration.ofSeconds(15);
    /** How long {@link #stopBroker()} waits for the broker to exit after SIGTERM. */
    private static final Duration STOP_TIMEOUT = Duration.ofSeconds(30);
    /** Cleanup after a test ({@link #close()}): SIGTERM, then SIGKILL after 5 s, like {@link Ferrocket}. */
    private static final Duration CLOSE_GRACE = Duration.ofSeconds(5);
    /** Every deployment this JVM started, so a failed test can print their logs. */
    static final List<BrokerDeployment> STARTED = new CopyOnWriteArrayList<>();

    public final Mode mode;
    private final String name;
    private final Path dir;
    private final int namesrvPort;
    private final int brokerPort;
    private final FerrocketProcess namesrv;
    private final FerrocketProcess broker;
    final long startedNanos = System.nanoTime();
    private DefaultMQAdminExt admin;
    private volatile long lastStopMillis = -1;

    private BrokerDeployment(Mode mode, String name, Path dir, int namesrvPort, int brokerPort, FerrocketProcess namesrv,
                             FerrocketProcess broker) {
        this.mode = mode;
        this.name = name;
        this.dir = dir;
        this.namesrvPort = namesrvPort;
        this.brokerPort = brokerPort;
        this.namesrv = namesrv;
        this.broker = broker;
    }

    /** Writes the configs, starts the process(es) and waits until the broker is listed. */
    public static BrokerDeployment start(Mode mode, String name, Map<String, String> brokerOverrides) throws Exception {
        Compat.init();
        Path bin = Ferrocket.binary();
        Path dir = TestDirs.fresh("broker-" + (mode == Mode.STANDALONE ? "standalone" : "separate") + "-" + name);
        int namesrvPort = Ports.free();
        int brokerPort = Ports.freeBrokerPort();

        Map<String, String> ns = new LinkedHashMap<>();
        ns.put("listenPort", Integer.toString(namesrvPort));
        ns.put("kvConfigPath", dir.resolve("kvConfig.json").toString());
        Path nsConf = ConfigFiles.write(dir.resolve("namesrv.conf"), ns);

        Map<String, String> b = new LinkedHashMap<>();
        b.put("brokerClusterName", CLUSTER);
        b.put("brokerName", BROKER_NAME);
        b.put("brokerId", "0");
        b.put("brokerIP1", "127.0.0.1");
        b.put("listenPort", Integer.toString(brokerPort));
        b.put("storePathRootDir", dir.resolve("store").toString());
        b.put("mappedFileSizeCommitLog", Integer.toString(16 * 1024 * 1024));
        // The machine's disk must not decide: above 85 % (diskSpaceCleanForciblyRatio) a broker
        // deletes CommitLog segments not yet consumed.
        b.put("cleanFileForciblyEnable", "false");
        b.put("flushDiskType", "ASYNC_FLUSH");
        b.put("autoCreateTopicEnable", "true");
        b.put("autoCreateSubscriptionGroup", "true");
        b.put("defaultTopicQueueNums", "8");
        b.putAll(brokerOverrides);
        Path brokerConf = ConfigFiles.write(dir.resolve("broker.conf"), b);

        FerrocketProcess namesrv = null;
        FerrocketProcess broker;
        if (mode == Mode.STANDALONE) {
            broker = new FerrocketProcess("standalone", dir, dir.resolve("ferrocket-standalone.log"),
                List.of(bin.toString(), "standalone", "-c", brokerConf.toString(), "--namesrv-config", nsConf.toString()));
        } else {
            namesrv = new FerrocketProcess("namesrv", dir, dir.resolve("ferrocket-namesrv.log"),
                List.of(bin.toString(), "namesrv", "-c", nsConf.toString()));
            broker = new FerrocketProcess("broker", dir, dir.resolve("ferrocket-broker.log"),
                List.of(bin.toString(), "broker", "-n", "127.0.0.1:" + namesrvPort, "-c", brokerConf.toString()));
        }
        BrokerDeployment d = new BrokerDeployment(mode, name, dir, namesrvPort, brokerPort, namesrv, broker);
        STARTED.add(d);
        try {
            if (namesrv != null) {
                namesrv.start();
                namesrv.awaitPort(namesrvPort, READY_TIMEOUT);
            }
            d.startBroker();
            return d;
        } catch (Throwable t) {
            System.err.println("[compat] deployment " + d + " failed to start: " + t + "\n" + d.logTails(60));
            d.close();
            throw t;
        }
    }

    public String namesrvAddr() {
        return "127.0.0.1:" + namesrvPort;
    }

    public String brokerAddr() {
        return "127.0.0.1:" + brokerPort;
    }

    public String brokerName() {
        return BROKER_NAME;
    }

    public Path dir() {
        return dir;
    }

    /** An admin client on this deployment's NameServer, created on first use, closed by {@link #close()}. */
    public synchronized DefaultMQAdminExt admin() throws Exception {
        if (admin == null) {
            admin = Compat.admin(namesrvAddr());
        }
        return admin;
    }

    /** Starts the broker (standalone: the whole process) on its store and waits until it is listed. */
    public void startBroker() throws Exception {
        if (broker.isAlive()) {
            throw new IllegalStateException(broker.label + " of " + this + " is already running");
        }
        broker.start();
        if (mode == Mode.STANDALONE) {
            broker.awaitPort(namesrvPort, READY_TIMEOUT);
        }
        broker.awaitPort(brokerPort, READY_TIMEOUT);
        DefaultMQAdminExt a = admin();
        Wait.until("the NameServer of " + this + " to list " + BROKER_NAME + " at " + brokerAddr(), READY_TIMEOUT,
            () -> {
                assertAlive();
                Generation.BrokerView view = NamesrvQueries.cluster(a).brokers().get(BROKER_NAME);
                return view != null && brokerAddr().equals(view.brokerAddrs().get(0L));
            });
    }

    /**
     * SIGTERM to the broker (standalone: the whole process); waits up to 30 s for it to exit and
     * returns its exit code (-1 if it had to be killed). {@link #lastStopMillis()} says how long it took.
     */
    public int stopBroker() throws InterruptedException {
        long start = System.nanoTime();
        int code = broker.terminate(STOP_TIMEOUT);
        lastStopMillis = Duration.ofNanos(System.nanoTime() - start).toMillis();
        return code;
    }

    /** How long the last {@link #stopBroker()} took, in milliseconds. */
    public long lastStopMillis() {
        return lastStopMillis;
    }

    /** SIGKILL to the broker (standalone: the whole process), like a crash; waits until it is gone. */
    public void killBroker() throws InterruptedException {
        broker.kill();
    }

    /** Fails if a process that should run has died: a crash must not pass for a missing answer. */
    public void assertAlive() {
        for (FerrocketProcess c : children()) {
            if (c.everStarted() && !c.isAlive()) {
                throw new AssertionError(c.label + " of " + this + " died with exit code " + c.exitCode()
                    + "\n" + c.logTail(60));
            }
        }
    }

    boolean isAlive() {
        return children().stream().anyMatch(FerrocketProcess::isAlive);
    }

    private List<FerrocketProcess> children() {
        List<FerrocketProcess> all = new ArrayList<>();
        if (namesrv != null) {
            all.add(namesrv);
        }
        all.add(broker);
        return all;
    }

    /**
     * Creates (or updates) a topic on the broker with the admin client (UPDATE_AND_CREATE_TOPIC, 17)
     * and waits until the NameServer's route shows those queue numbers and perm.
     */
    public void createTopic(String topic, int readQueueNums, int writeQueueNums, int perm) throws Exception {
        DefaultMQAdminExt a = admin();
        a.createAndUpdateTopicConfig(brokerAddr(), new TopicConfig(topic, readQueueNums, writeQueueNums, perm));
        awaitRoute(topic, readQueueNums, writeQueueNums, perm);
    }

    /** Waits until the route of {@code topic} has this broker's QueueData with these numbers and perm. */
    public Generation.Route awaitRoute(String topic, int readQueueNums, int writeQueueNums, int perm) throws Exception {
        DefaultMQAdminExt a = admin();
        Generation.QueueView want = new Generation.QueueView(BROKER_NAME, readQueueNums, writeQueueNums, perm, 0);
        return Wait.until("route of " + topic + " to show " + want, ROUTE_TIMEOUT,
            () -> {
                assertAlive();
                return NamesrvQueries.routeOrNull(a, topic);
            },
            r -> r != null && want.equals(r.queueOf(BROKER_NAME)));
    }

    /** The last {@code lines} lines of every process log of this deployment. */
    public String logTails(int lines) {
        return FerrocketProcess.logTails(children(), lines);
    }

    /** Stops the admin client and SIGTERMs the processes (SIGKILL after 5 s). */
    @Override
    public void close() {
        DefaultMQAdminExt a;
        synchronized (this) {
            a = admin;
            admin = null;
        }
        if (a != null) {
            Clients.shutdownInBackground("admin of " + name, a::shutdown);
        }
        // Broker first, so it can unregister from a NameServer that is still there.
        List<FerrocketProcess> order = new ArrayList<>(children());
        java.util.Collections.reverse(order);
        FerrocketProcess.terminateAll(order, CLOSE_GRACE);
    }

    @Override
    public String toString() {
        return "ferrocket " + mode.name().toLowerCase() + " deployment '" + name + "' (namesrv " + namesrvAddr()
            + ", broker " + brokerAddr() + ", " + dir + ")";
    }
}
