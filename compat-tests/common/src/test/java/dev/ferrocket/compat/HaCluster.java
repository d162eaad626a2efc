package dev.ferrocket.compat;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.rocketmq.common.TopicConfig;
import org.apache.rocketmq.remoting.protocol.RemotingCommand;
import org.apache.rocketmq.tools.admin.DefaultMQAdminExt;

/**
 * One ferrocket NameServer and one broker group ({@link #BROKER}) of a master (brokerId 0) and a
 * slave (brokerId 1), each a ferrocket process ({@code ferrocket broker -n <ns> -c broker.conf}) with
 * its own HA port. Both use 16 MiB CommitLog files. Everything lives under one directory of
 * {@link TestDirs#root()}: {@code namesrv/}, {@code master/}, {@code slave/} (config, store, log).
 */
public final class HaCluster implements AutoCloseable {
    public static final String CLUSTER = "FerroHaCluster";
    public static final String BROKER = "ha-broker";
    public static final String MASTER = "master";
    public static final String SLAVE = "slave";
    static final int COMMIT_LOG_FILE_SIZE = 16 * 1024 * 1024;
    static final Duration READY_TIMEOUT = Duration.ofSeconds(20);
    private static final Duration CLOSE_GRACE = Duration.ofSeconds(5);

    private final String name;
    private final Path dir;
    private int namesrvPort;
    private FerrocketProcess namesrv;
    private final Map<String, Integer> ports = new LinkedHashMap<>();
    private final Map<String, Integer> haPorts = new LinkedHashMap<>();
    private final Map<String, FerrocketProcess> brokers = new LinkedHashMap<>();
    private DefaultMQAdminExt admin;
    private BrokerRpc rpc;

    private HaCluster(String name, Path dir) {
        this.name = name;
        this.dir = dir;
    }

    /**
     * Starts the NameServer, the master ({@code masterRole}: SYNC_MASTER or ASYNC_MASTER) and the
     * slave, and waits until the NameServer lists both in {@link #BROKER}.
     */
    public static HaCluster start(String name, String masterRole) throws Exception {
        return start(name, masterRole, true, true, Map.of());
    }

    /**
     * Starts the NameServer and, if asked, the ferrocket master ({@code masterRole}) and/or the
     * ferrocket slave ({@code slaveExtra} added to its broker.conf, e.g. {@code haMasterAddress});
     * a missing member is expected to be a Java broker the test starts itself.
     */
    public static HaCluster start(String name, String masterRole, boolean master, boolean slave,
                                  Map<String, String> slaveExtra) throws Exception {
        return start(name, masterRole, master ? Map.of() : null, slave ? slaveExtra : null);
    }

    /**
     * Starts the NameServer, a ferrocket master unless {@code masterExtra} is null and a ferrocket
     * slave unless {@code slaveExtra} is null, each with those keys added to its broker.conf.
     */
    public static HaCluster start(String name, String masterRole, Map<String, String> masterExtra,
                                  Map<String, String> slaveExtra) throws Exception {
        boolean master = masterExtra != null;
        boolean slave = slaveExtra != null;
        Compat.init();
        Path bin = Ferrocket.binary();
        HaCluster c = new HaCluster(name, TestDirs.fresh("ha-" + name));
        try {
            Path nsDir = Files.createDirectories(c.dir.resolve("namesrv"));
            c.namesrvPort = Ports.free();
            Map<String, String> ns = new LinkedHashMap<>();
            ns.put("listenPort", Integer.toString(c.namesrvPort));
            ns.put("kvConfigPath", nsDir.resolve("kvConfig.json").toString());
            ns.put("scanNotActiveBrokerInterval", "500");
            Path nsConf = ConfigFiles.write(nsDir.resolve("namesrv.conf"), ns);
            c.namesrv = new FerrocketProcess("namesrv", nsDir, nsDir.resolve("ferrocket.log"),
                List.of(bin.toString(), "namesrv", "-c", nsConf.toString()));
            c.namesrv.start();
            c.namesrv.awaitPort(c.namesrvPort, READY_TIMEOUT);
            c.admin = Compat.admin(c.namesrvAddr());
            c.rpc = new BrokerRpc();
            if (master) {
                c.addBroker(bin, MASTER, 0, masterRole, masterExtra);
                c.startBroker(MASTER);
            }
            if (slave) {
                c.addBroker(bin, SLAVE, 1, "SLAVE", slaveExtra);
                c.startBroker(SLAVE);
            }
            return c;
        } catch (Throwable t) {
            System.err.println("[compat] HA cluster " + c + " failed to start: " + t + "\n" + c.logTails(60));
            c.close();
            throw t;
        }
    }

    private void addBroker(Path bin, String label, int brokerId, String role, Map<String, String> extra)
        throws IOException {
        Path bDir = Files.createDirectories(dir.resolve(label));
        int port = Ports.freeBrokerPort();
        int haPort = port + 1;
        Map<String, String> b = new LinkedHashMap<>();
        b.put("brokerClusterName", CLUSTER);
        b.put("brokerName", BROKER);
        b.put("brokerId", Integer.toString(brokerId));
        b.put("brokerRole", role);
        b.put("brokerIP1", "127.0.0.1");
        b.put("brokerIP2", "127.0.0.1");
        b.put("listenPort", Integer.toString(port));
        b.put("haListenPort", Integer.toString(haPort));
        b.put("storePathRootDir", bDir.resolve("store").toString());
        b.put("mappedFileSizeCommitLog", Integer.toString(COMMIT_LOG_FILE_SIZE));
        b.put("cleanFileForciblyEnable", "false"); // see BrokerDeployment
        b.put("flushDiskType", "ASYNC_FLUSH");
        b.put("autoCreateTopicEnable", "true");
        b.put("autoCreateSubscriptionGroup", "true");
        b.put("defaultTopicQueueNums", "4");
        // As for the Java members: a 5.x Java slave refuses pulls (SYSTEM_BUSY) without it.
        b.put("slaveReadEnable", "true");
        b.putAll(extra);
        Path conf = ConfigFiles.write(bDir.resolve("broker.conf"), b);
        ports.put(label, port);
        haPorts.put(label, haPort);
        brokers.put(label, new FerrocketProcess(label, bDir, bDir.resolve("ferrocket.log"),
            List.of(bin.toString(), "broker", "-n", namesrvAddr(), "-c", conf.toString())));
    }

    /** Adds and starts a ferrocket slave (after {@link #start} without one), e.g. of a Java master. */
    public void startFerrocketSlave(Map<String, String> extra) throws Exception {
        addBroker(Ferrocket.binary(), SLAVE, 1, "SLAVE", extra);
        startBroker(SLAVE);
    }

    public String namesrvAddr() {
        return "127.0.0.1:" + namesrvPort;
    }

    /** {@code 127.0.0.1:<listenPort>} of {@link #MASTER} or {@link #SLAVE}. */
    public String addr(String label) {
        return "127.0.0.1:" + ports.get(label);
    }

    /** {@code 127.0.0.1:<haListenPort>} of a ferrocket member. */
    public String haAddr(String label) {
        return "127.0.0.1:" + haPorts.get(label);
    }

    public BrokerRpc rpc() {
        return rpc;
    }

    public DefaultMQAdminExt admin() {
        return admin;
    }

    /** Starts the broker process and waits until it accepts connections and the NameServer lists it. */
    public void startBroker(String label) throws Exception {
        FerrocketProcess p = brokers.get(label);
        p.start();
        p.awaitPort(ports.get(label), READY_TIMEOUT);
        long id = MASTER.equals(label) ? 0L : 1L;
        Wait.until("the NameServer to list " + label + " as " + BROKER + " id " + id + " at " + addr(label),
            READY_TIMEOUT, () -> addrs().get(id), addr(label)::equals);
    }

    /** SIGKILL, like a crash. */
    public void kill(String label) throws InterruptedException {
        brokers.get(label).kill();
    }

    public boolean isAlive(String label) {
        return brokers.get(label).isAlive();
    }

    /** brokerId → address of {@link #BROKER} in the NameServer's cluster info (empty if absent). */
    public Map<Long, String> addrs() throws Exception {
        Generation.BrokerView view = NamesrvQueries.cluster(admin).brokers().get(BROKER);
        return view == null ? Map.of() : new TreeMap<>(view.brokerAddrs());
    }

    /** brokerId → address of {@link #BROKER} in the route of {@code topic} (null if no route). */
    public Map<Long, String> routeAddrs(String topic) throws Exception {
        Generation.Route r = NamesrvQueries.routeOrNull(admin, topic);
        if (r == null || r.brokerOf(BROKER) == null) {
            return null;
        }
        return new TreeMap<>(r.brokerOf(BROKER).brokerAddrs());
    }

    /** Creates {@code topic} (read/write queues, perm 6) on the master through the admin API. */
    public void createTopic(String topic, int queues) throws Exception {
        createTopic(addr(MASTER), topic, queues);
    }

    /** Creates {@code topic} on the master at {@code masterAddr} (ferrocket or Java). */
    public void createTopic(String masterAddr, String topic, int queues) throws Exception {
        admin.createAndUpdateTopicConfig(masterAddr, new TopicConfig(topic, queues, queues, 6));
        Wait.until("route of " + topic + " to name " + BROKER, READY_TIMEOUT, () -> routeAddrs(topic),
            r -> r != null && masterAddr.equals(r.get(0L)));
    }

    /** GET_MAX_OFFSET (30) for each queue of {@code topic}, asked of the broker at {@code brokerAddr}. */
    public Map<Integer, Long> maxOffsets(String brokerAddr, String topic, int queues) throws Exception {
        return maxOffsets(rpc, brokerAddr, topic, queues);
    }

    static Map<Integer, Long> maxOffsets(BrokerRpc rpc, String brokerAddr, String topic, int queues) throws Exception {
        Map<Integer, Long> out = new TreeMap<>();
        for (int q = 0; q < queues; q++) {
            Map<String, String> ext = new HashMap<>();
            ext.put("topic", topic);
            ext.put("queueId", Integer.toString(q));
            RemotingCommand response = rpc.invoke(brokerAddr, 30, ext, null);
            if (response.getCode() != 0) {
                throw new AssertionError("GET_MAX_OFFSET " + ext + " to " + brokerAddr + " answered "
                    + response.getCode() + " " + response.getRemark());
            }
            out.put(q, Long.parseLong(response.getExtFields().get("offset")));
        }
        return out;
    }

    /**
     * Waits until the broker at {@code slaveAddr} has {@code topic} in its topic table
     * (GET_ALL_TOPIC_CONFIG, 21): a slave copies topics from its master periodically and refuses
     * pulls of a topic it does not know (TOPIC_NOT_EXIST).
     */
    public void awaitTopicOn(String slaveAddr, String topic, Duration timeout) {
        awaitTopicOn(slaveAddr, topic, timeout, () -> { });
    }

    /** {@link #awaitTopicOn(String, String, Duration)}, running {@code beforeEachPoll} (a Java slave's sync). */
    public void awaitTopicOn(String slaveAddr, String topic, Duration timeout, Runnable beforeEachPoll) {
        awaitTopicOn(rpc, slaveAddr, topic, timeout, beforeEachPoll);
    }

    /** {@link #awaitTopicOn(String, String, Duration, Runnable)} with any {@link BrokerRpc}. */
    static void awaitTopicOn(BrokerRpc rpc, String slaveAddr, String topic, Duration timeout, Runnable beforeEachPoll) {
        Wait.until("the broker at " + slaveAddr + " to have topic " + topic + " in GET_ALL_TOPIC_CONFIG (copied from"
                + " its master)", timeout, () -> {
                beforeEachPoll.run();
                RemotingCommand response = rpc.invoke(slaveAddr, 21, Map.of(), null);
                if (response.getCode() != 0) {
                    throw new AssertionError("GET_ALL_TOPIC_CONFIG answered " + response.getCode() + " "
                        + response.getRemark());
                }
                String body = response.getBody() == null ? "" : new String(response.getBody(), StandardCharsets.UTF_8);
                return body.contains("\"" + topic + "\"");
            });
    }

    public String logTails(int lines) {
        List<FerrocketProcess> all = new ArrayList<>();
        if (namesrv != null) {
            all.add(namesrv);
        }
        all.addAll(brokers.values());
        return FerrocketProcess.logTails(all, lines);
    }

    public Path dir() {
        return dir;
    }

    @Override
    public void close() {
        if (admin != null) {
            DefaultMQAdminExt a = admin;
            Clients.shutdownInBackground("admin of " + name, a::shutdown);
            admin = null;
        }
        if (rpc != null) {
            rpc.close();
            rpc = null;
        }
        List<FerrocketProcess> order = new ArrayList<>(brokers.values());
        if (namesrv != null) {
            order.add(namesrv);
        }
        FerrocketProcess.terminateAll(order, CLOSE_GRACE);
    }

    @Override
    public String toString() {
        return "ferrocket HA cluster '" + name + "' (namesrv " + namesrvAddr() + ", brokers " + ports + ", HA ports "
            + haPorts + ", " + dir + ")";
    }

}
