package dev.ferrocket.compat;

import java.nio.file.Path;
import org.apache.rocketmq.broker.BrokerController;
import org.apache.rocketmq.common.BrokerConfig;
import org.apache.rocketmq.remoting.netty.NettyClientConfig;
import org.apache.rocketmq.remoting.netty.NettyServerConfig;
import org.apache.rocketmq.store.config.MessageStoreConfig;

/**
 * The official Java broker of the module's release, started in-process as the reference peer
 * that registers with ferrocket's NameServer. Loopback only, small files, temp store.
 */
public final class JavaBroker implements AutoCloseable {
    private final BrokerController controller;
    private final String cluster;
    private final String brokerName;
    private boolean stopped;

    private JavaBroker(BrokerController controller, String cluster, String brokerName) {
        this.controller = controller;
        this.cluster = cluster;
        this.brokerName = brokerName;
    }

    public static JavaBroker start(String cluster, String brokerName, String namesrvAddr) throws Exception {
        Compat.init();
        Path store = TestDirs.fresh("java-broker-" + brokerName);
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

        BrokerController controller = new BrokerController(brokerConfig, serverConfig, new NettyClientConfig(), storeConfig);
        if (!controller.initialize()) {
            controller.shutdown();
            throw new IllegalStateException("Java broker " + brokerName + " failed to initialize (store " + store + ")");
        }
        controller.start();
        return new JavaBroker(controller, cluster, brokerName);
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
