package dev.ferrocket.compat;

import java.nio.file.Path;
import java.util.Map;
import java.util.TreeMap;
import org.apache.rocketmq.broker.BrokerController;
import org.apache.rocketmq.common.BrokerConfig;
import org.apache.rocketmq.common.TopicConfig;
import org.apache.rocketmq.remoting.netty.NettyClientConfig;
import org.apache.rocketmq.remoting.netty.NettyServerConfig;
import org.apache.rocketmq.store.config.MessageStoreConfig;

/**
 * The official Java broker of the module's release, started in-process as the reference peer
 * that registers with ferrocket's NameServer. Loopback only, small files, temp store.
 */
public final class JavaBroker implements AutoCloseable {
    private final BrokerController controller;
    private final RecordingRpcHook calls;
    private final String cluster;
    private final String brokerName;
    private boolean stopped;

    private JavaBroker(BrokerController controller, RecordingRpcHook calls, String cluster, String brokerName) {
        this.controller = controller;
        this.calls = calls;
        this.cluster = cluster;
        this.brokerName = brokerName;
    }

    public static JavaBroker start(String cluster, String brokerName, String namesrvAddr) throws Exception {
        return startOn(cluster, brokerName, namesrvAddr, TestDirs.fresh("java-broker-" + brokerName));
    }

    /** {@link #start} on an existing store directory (its config files included). */
    public static JavaBroker startOn(String cluster, String brokerName, String namesrvAddr, Path store) throws Exception {
        BrokerController controller = newController(cluster, brokerName, namesrvAddr, store);
        RecordingRpcHook calls = new RecordingRpcHook("broker " + brokerName);
        controller.getBrokerOuterAPI().registerRPCHook(calls);
        if (!controller.initialize()) {
            controller.shutdown();
            throw new IllegalStateException("Java broker " + brokerName + " failed to initialize");
        }
        controller.start();
        return new JavaBroker(controller, calls, cluster, brokerName);
    }

    /**
     * The topic table a freshly started broker registers (system topics, TBW102, cluster and broker
     * topics), read from an initialized but never started broker.
     */
    public static Map<String, TopicConfig> freshTopicTable(String cluster, String brokerName) {
        BrokerController controller = newController(cluster, brokerName, null, TestDirs.fresh("java-broker-" + brokerName));
        try {
            if (!controller.initialize()) {
                throw new IllegalStateException("Java broker " + brokerName + " failed to initialize");
            }
            return new TreeMap<>(controller.getTopicConfigManager().getTopicConfigTable());
        } catch (Exception e) {
            throw new IllegalStateException("cannot initialize a Java broker", e);
        } finally {
            try {
                controller.shutdown();
            } catch (RuntimeException e) {
                // never started: some services have nothing to stop
            }
        }
    }

    private static BrokerController newController(String cluster, String brokerName, String namesrvAddr, Path store) {
        Compat.init();
        int port = Ports.freeBrokerPort();

        BrokerConfig brokerConfig = new BrokerConfig();
        brokerConfig.setBrokerClusterName(cluster);
        brokerConfig.setBrokerName(brokerName);
        brokerConfig.setBrokerId(0);
        brokerConfig.setNamesrvAddr(namesrvAddr);
        brokerConfig.setBrokerIP1("127.0.0.1");
        brokerConfig.setBrokerIP2("127.0.0.1");
        brokerConfig.setAutoCreateTopicEnable(true);
        brokerConfig.setAutoCreateSubscriptionGroup(true);

        NettyServerConfig serverConfig = new NettyServerConfig();
        serverConfig.setListenPort(port);

        MessageStoreConfig storeConfig = new MessageStoreConfig();
        storeConfig.setStorePathRootDir(store.toString());
        storeConfig.setStorePathCommitLog(store.resolve("commitlog").toString());
        storeConfig.setHaListenPort(port + 1);
        storeConfig.setMappedFileSizeCommitLog(16 * 1024 * 1024);
        storeConfig.setMappedFileSizeConsumeQueue(30_000 * 20);
        storeConfig.setMaxHashSlotNum(10_000);
        storeConfig.setMaxIndexNum(40_000);
        storeConfig.setTransientStorePoolEnable(false);

        return new BrokerController(brokerConfig, serverConfig, new NettyClientConfig(), storeConfig);
    }

    /** {@code 127.0.0.1:<listenPort>}, as registered with the NameServer. */
    public String addr() {
        return controller.getBrokerAddr();
    }

    public String cluster() {
        return cluster;
    }

    public String brokerName() {
        return brokerName;
    }

    /** What the broker sent to the NameServer (REGISTER_BROKER 103, UNREGISTER_BROKER 104, ...). */
    public RecordingRpcHook calls() {
        return calls;
    }

    public BrokerController controller() {
        return controller;
    }

    /** Orderly shutdown: the broker sends UNREGISTER_BROKER and closes its connections. */
    @Override
    public synchronized void close() {
        if (!stopped) {
            stopped = true;
            controller.shutdown();
        }
    }
}
