package dev.ferrocket.compat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.stream.Collectors;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.tools.admin.DefaultMQAdminExt;

/**
 * Two ferrocket NameServers and two master brokers ({@code broker-a}, {@code broker-b}) of one
 * cluster, optionally each with a slave ({@link #slave}: {@code broker-a-slave}, brokerId 1), each its own process ({@code ferrocket namesrv -c}, {@code ferrocket broker -n "ns1;ns2" -c}).
 * Each broker registers with both NameServers. Everything lives in one directory under
 * {@link TestDirs#root()}: {@code namesrv-1/}, {@code namesrv-2/}, {@code broker-a/}, {@code broker-b/}
 * (config, {@code store/}, {@code ferrocket.log} appended across restarts).
 */
public final class MultiBrokerCluster implements AutoCloseable {
    public static final String CLUSTER = "FerroMultiCluster";
    public static final String BROKER_A = "broker-a";
    public static final String BROKER_B = "broker-b";
    public static final List<String> BROKERS = List.of(BROKER_A, BROKER_B);
    static final Duration READY_TIMEOUT = Duration.ofSeconds(20);
    static final Duration ROUTE_TIMEOUT = Duration.ofSeconds(15);
    private static final Duration STOP_TIMEOUT = Duration.ofSeconds(30);
    private static final Duration CLOSE_GRACE = Duration.ofSeconds(5);
    /** Every cluster this JVM started, so a failed test can print their logs. */
    static final List<MultiBrokerCluster> STARTED = new CopyOnWriteArrayList<>();

    private final String name;
    private final Path dir;
    private final List<Integer> namesrvPorts = new ArrayList<>();
    private final List<FerrocketProcess> namesrvs = new ArrayList<>();
    private final Map<String, Integer> brokerPorts = new LinkedHashMap<>();
    private final Map<String, FerrocketProcess> brokers = new LinkedHashMap<>();
    private final Map<String, Path> brokerDirs = new LinkedHashMap<>();
    /** Process label → brokerName and brokerId (a slave's label is {@link #slave} of its group). */
    private final Map<String, String> brokerNames = new LinkedHashMap<>();
    private final Map<String, Long> brokerIds = new LinkedHashMap<>();
    private final List<DefaultMQAdminExt> admins = new ArrayList<>();
    final long startedNanos = System.nanoTime();

    private MultiBrokerCluster(String name, Path dir) {
        this.name = name;
        this.dir = dir;
    }

    /**
     * Starts both NameServers, then both brokers (broker.conf keys as for {@link BrokerDeployment},
     * {@code overrides} per broker name replace or add keys), and waits until both NameServers list
     * both brokers.
     */
    public static MultiBrokerCluster start(String name, Map<String, Map<String, String>> overrides) throws Exception {
        return start(name, overrides, null);
    }

    /**
     * Two broker groups of a master ({@code brokerRole=masterRole}) and a slave each, on two
     * NameServers; {@code overrides} per process label ({@code broker-a}, {@link #slave}{@code ("broker-a")}, ...).
     * Waits until both NameServers list all four.
     */
    public static MultiBrokerCluster startWithSlaves(String name, String masterRole,
                                                     Map<String, Map<String, String>> overrides) throws Exception {
        return start(name, overrides, masterRole);
    }

    /** The process label of {@code broker}'s slave. */
    public static String slave(String broker) {
        return broker + "-slave";
    }

    private static MultiBrokerCluster start(String name, Map<String, Map<String, String>> overrides, String masterRole)
        throws Exception {
        Compat.init();
        Path bin = Ferrocket.binary();
        MultiBrokerCluster c = new MultiBrokerCluster(name, TestDirs.fresh("multi-" + name));
        STARTED.add(c);
        try {
            for (int i = 1; i <= 2; i++) {
                Path nsDir = Files.createDirectories(c.dir.resolve("namesrv-" + i));
                int port = Ports.free();
                Map<String, String> ns = new LinkedHashMap<>();
                ns.put("listenPort", Integer.toString(port));
                ns.put("kvConfigPath", nsDir.resolve("kvConfig.json").toString());
                ns.put("scanNotActiveBrokerInterval", "500");
                Path conf = ConfigFiles.write(nsDir.resolve("namesrv.conf"), ns);
                FerrocketProcess p = new FerrocketProcess("namesrv-" + i, nsDir, nsDir.resolve("ferrocket.log"),
                    List.of(bin.toString(), "namesrv", "-c", conf.toString()));
                c.namesrvPorts.add(port);
                c.namesrvs.add(p);
                p.start();
            }
            for (int i = 0; i < 2; i++) {
                c.namesrvs.get(i).awaitPort(c.namesrvPorts.get(i), READY_TIMEOUT);
            }
            List<String> labels = new ArrayList<>();
            for (String broker : BROKERS) {
                labels.add(broker);
                if (masterRole != null) {
                    labels.add(slave(broker));
                }
            }
            for (String label : labels) {
                boolean isSlave = !BROKERS.contains(label);
                String broker = isSlave ? label.substring(0, label.length() - "-slave".length()) : label;
                Path bDir = Files.createDirectories(c.dir.resolve(label));
                int port = Ports.freeBrokerPort();
                Map<String, String> b = new LinkedHashMap<>();
                b.put("brokerClusterName", CLUSTER);
                b.put("brokerName", broker);
                b.put("brokerId", isSlave ? "1" : "0");
                if (masterRole != null) {
                    b.put("brokerRole", isSlave ? "SLAVE" : masterRole);
                    b.put("brokerIP2", "127.0.0.1");
                }
                b.put("brokerIP1", "127.0.0.1");
                b.put("listenPort", Integer.toString(port));
                b.put("haListenPort", Integer.toString(port + 1));
                b.put("storePathRootDir", bDir.resolve("store").toString());
                b.put("mappedFileSizeCommitLog", Integer.toString(16 * 1024 * 1024));
                b.put("cleanFileForciblyEnable", "false"); // see BrokerDeployment
                b.put("flushDiskType", "ASYNC_FLUSH");
                b.put("autoCreateTopicEnable", "true");
                b.put("autoCreateSubscriptionGroup", "true");
                b.put("defaultTopicQueueNums", "4");
                b.putAll(overrides.getOrDefault(label, Map.of()));
                Path conf = ConfigFiles.write(bDir.resolve("broker.conf"), b);
                FerrocketProcess p = new FerrocketProcess(label, bDir, bDir.resolve("ferrocket.log"),
                    List.of(bin.toString(), "broker", "-n", c.namesrvAddrs(), "-c", conf.toString()));
                c.brokerPorts.put(label, port);
                c.brokers.put(label, p);
                c.brokerDirs.put(label, bDir);
                c.brokerNames.put(label, broker);
                c.brokerIds.put(label, isSlave ? 1L : 0L);
            }
            for (int i = 0; i < 2; i++) {
                c.admins.add(Compat.admin(c.namesrvAddr(i)));
            }
            for (String label : labels) {
                c.startBroker(label);
            }
            return c;
        } catch (Throwable t) {
            System.err.println("[compat] cluster " + c + " failed to start: " + t + "\n" + c.logTails(60));
            c.close();
            throw t;
        }
    }

    /** {@code 127.0.0.1:<ns1>;127.0.0.1:<ns2>}: what clients and brokers are given. */
    public String namesrvAddrs() {
        return namesrvAddr(0) + ";" + namesrvAddr(1);
    }

    /** The address of NameServer {@code i} (0 or 1). */
    public String namesrvAddr(int i) {
        return "127.0.0.1:" + namesrvPorts.get(i);
    }

    public String brokerAddr(String broker) {
        return "127.0.0.1:" + brokerPorts.get(broker);
    }

    public Path brokerDir(String broker) {
        return brokerDirs.get(broker);
    }

    public Path dir() {
        return dir;
    }

    /** An admin client on NameServer {@code i} alone (0 or 1). */
    public DefaultMQAdminExt admin(int i) {
        return admins.get(i);
    }

    /** Starts {@code broker} (on its store) and waits until both NameServers list it at its address. */
    public void startBroker(String broker) throws Exception {
        FerrocketProcess p = brokers.get(broker);
        p.start();
        p.awaitPort(brokerPorts.get(broker), READY_TIMEOUT);
        awaitListed(broker, true);
    }

    /** SIGTERM to {@code broker}; returns its exit code (-1 if it had to be killed after 30 s). */
    public int stopBroker(String broker) throws InterruptedException {
        return brokers.get(broker).terminate(STOP_TIMEOUT);
    }

    /** SIGKILL to {@code broker}, like a crash. */
    public void killBroker(String broker) throws InterruptedException {
        brokers.get(broker).kill();
    }

    /** Waits until both NameServers list (or no longer list) the broker process {@code label} at its address and id. */
    public void awaitListed(String label, boolean listed) {
        String broker = brokerNames.get(label);
        long id = brokerIds.get(label);
        for (int i = 0; i < 2; i++) {
            DefaultMQAdminExt a = admins.get(i);
            Wait.until("NameServer " + (i + 1) + " (" + namesrvAddr(i) + ") to " + (listed ? "" : "no longer ")
                    + "list " + broker + " id " + id + " at " + brokerAddr(label), READY_TIMEOUT,
                () -> {
                    assertNameServersAlive();
                    Generation.BrokerView view = NamesrvQueries.cluster(a).brokers().get(broker);
                    boolean there = view != null && brokerAddr(label).equals(view.brokerAddrs().get(id));
                    return there == listed;
                });
        }
    }

    /**
     * Waits until the route of {@code topic} on both NameServers has exactly the QueueData of
     * {@code brokers} (any others absent), each with these numbers and perm.
     */
    public void awaitRoute(String topic, List<String> brokerNames, int readQueueNums, int writeQueueNums, int perm) {
        for (int i = 0; i < 2; i++) {
            DefaultMQAdminExt a = admins.get(i);
            Wait.until("route of " + topic + " on NameServer " + (i + 1) + " to hold exactly " + brokerNames + " with "
                    + readQueueNums + "/" + writeQueueNums + " queues, perm " + perm, ROUTE_TIMEOUT,
                () -> {
                    assertNameServersAlive();
                    return NamesrvQueries.routeOrNull(a, topic);
                },
                r -> {
                    if (r == null || r.queues().size() != brokerNames.size()) {
                        return false;
                    }
                    for (String b : brokerNames) {
                        Generation.QueueView q = r.queueOf(b);
                        if (q == null || q.readQueueNums() != readQueueNums || q.writeQueueNums() != writeQueueNums
                            || q.perm() != perm || r.brokerOf(b) == null
                            || !brokerAddr(b).equals(r.brokerOf(b).brokerAddrs().get(0L))) {
                            return false;
                        }
                    }
                    return true;
                });
        }
    }

    /** Waits until the consumer holds exactly {@code want} ("broker:queue") of {@code topic}; nudges its rebalance. */
    public void awaitHeld(DefaultMQPushConsumer c, String topic, Set<String> want, Duration timeout, String... down) {
        Wait.until("the consumer to hold " + want, timeout, () -> {
            assertAlive(down);
            Set<String> held = FeatureClients.held(c, topic);
            if (!held.equals(want)) {
                FeatureClients.rebalanceNow(c);
            }
            return held;
        }, want::equals);
        FeatureClients.heartbeat(c);
    }

    /** Waits until {@code got} has every key of {@code sent}; fails early if a process not in {@code down} died. */
    public void awaitDelivered(String what, Deliveries got, List<Deliveries.Sent> sent, Duration timeout,
                               String... down) {
        Wait.until(what + ": all " + sent.size() + " messages delivered", timeout, () -> {
            assertAlive(down);
            Set<String> have = got.keys();
            return sent.stream().map(Deliveries.Sent::key).filter(k -> !have.contains(k))
                .collect(Collectors.toCollection(TreeSet::new));
        }, Set::isEmpty);
    }

    /** "broker:queue" for queues 0..perBroker-1 of each broker. */
    public static Set<String> queues(int perBroker, String... brokers) {
        Set<String> out = new TreeSet<>();
        for (String b : brokers) {
            for (int q = 0; q < perBroker; q++) {
                out.add(b + ":" + q);
            }
        }
        return out;
    }

    /** Fails if a NameServer has died. */
    public void assertNameServersAlive() {
        for (FerrocketProcess p : namesrvs) {
            if (p.everStarted() && !p.isAlive()) {
                throw new AssertionError(p.label + " of " + this + " died with exit code " + p.exitCode() + "\n"
                    + p.logTail(60));
            }
        }
    }

    /** Fails if any process has died, except the brokers named in {@code down}. */
    public void assertAlive(String... down) {
        assertNameServersAlive();
        List<String> expectedDown = List.of(down);
        brokers.forEach((b, p) -> {
            if (!expectedDown.contains(b) && p.everStarted() && !p.isAlive()) {
                throw new AssertionError(b + " of " + this + " died with exit code " + p.exitCode() + "\n"
                    + p.logTail(60));
            }
        });
    }

    boolean isAlive() {
        return namesrvs.stream().anyMatch(FerrocketProcess::isAlive)
            || brokers.values().stream().anyMatch(FerrocketProcess::isAlive);
    }

    /** The last {@code lines} lines of every process log. */
    public String logTails(int lines) {
        List<FerrocketProcess> all = new ArrayList<>(namesrvs);
        all.addAll(brokers.values());
        return FerrocketProcess.logTails(all, lines);
    }

    @Override
    public void close() {
        for (DefaultMQAdminExt a : admins) {
            Clients.shutdownInBackground("admin of " + name, a::shutdown);
        }
        admins.clear();
        List<FerrocketProcess> order = new ArrayList<>(brokers.values());
        order.addAll(namesrvs);
        FerrocketProcess.terminateAll(order, CLOSE_GRACE);
    }

    @Override
    public String toString() {
        return "ferrocket cluster '" + name + "' (namesrv " + (namesrvPorts.size() == 2 ? namesrvAddrs() : "?")
            + ", brokers " + brokerPorts + ", " + dir + ")";
    }
}
