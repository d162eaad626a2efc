package dev.ferrocket.compat;

import java.nio.file.Path;
import org.apache.rocketmq.broker.BrokerController;
import org.apache.rocketmq.common.BrokerConfig;
import org.apache.rocketmq.remoting.netty.NettyClientConfig;
import org.apache.rocketmq.remoting.netty.NettyServerConfig;
import org.apache.rocketmq.store.config.BrokerRole;
import org.apache.rocketmq.store.config.MessageStoreConfig;

/**
 * The official Java broker of the module's release, in-process, as a member of an HA group: an
 * ASYNC_MASTER (brokerId 0) or a SLAVE (brokerId 1), loopback, 16 MiB CommitLog files like
 * {@link HaCluster}'s ferrocket members, its HA port set explicitly.
 */
public final class HaJavaBroker implements AutoCloseable {
    private final BrokerController controller;
    private final int haPort;
    private boolean stopped;

    private HaJavaBroker(BrokerController controller, int haPort) {
        this.controller = controller;
        this.haPort = haPort;
    }

    /**
     * Starts a Java broker of {@link HaCluster#BROKER} with {@code role}; {@code haMasterAddress}
     * (slaves only, may be null: then learned from the NameServer's registration answer).
     */
    public static HaJavaBroker start(String label, BrokerRole role, String namesrvAddr, String haMasterAddress)
        throws Exception {
        Compat.init();
        Path store = TestDirs.fresh("ha-java-" + label);
        int port = Ports.freeBrokerPort();
        int haPort = Ports.free();

        BrokerConfig brokerConfig = new BrokerConfig();
        brokerConfig.setBrokerClusterName(HaCluster.CLUSTER);
        brokerConfig.setBrokerName(HaCluster.BROKER);
        brokerConfig.setBrokerId(role == BrokerRole.SLAVE ? 1 : 0);
        brokerConfig.setNamesrvAddr(namesrvAddr);
        brokerConfig.setBrokerIP1("127.0.0.1");
        brokerConfig.setBrokerIP2("127.0.0.1");
        brokerConfig.setAutoCreateTopicEnable(true);
        brokerConfig.setAutoCreateSubscriptionGroup(true);
        // A 5.x SLAVE answers every PULL_MESSAGE SYSTEM_BUSY "[REJECTREQUEST]system busy, start flow
        // control for a while" unless slaveReadEnable (PullMessageProcessor.rejectRequest).
        brokerConfig.setSlaveReadEnable(true);

        NettyServerConfig serverConfig = new NettyServerConfig();
        serverConfig.setListenPort(port);

        MessageStoreConfig storeConfig = new MessageStoreConfig();
        storeConfig.setStorePathRootDir(store.toString());
        storeConfig.setStorePathCommitLog(store.resolve("commitlog").toString());
        storeConfig.setHaListenPort(haPort);
        storeConfig.setBrokerRole(role);
        if (haMasterAddress != null) {
            storeConfig.setHaMasterAddress(haMasterAddress);
        }
        storeConfig.setMappedFileSizeCommitLog(HaCluster.COMMIT_LOG_FILE_SIZE);
        storeConfig.setMappedFileSizeConsumeQueue(30_000 * 20);
        storeConfig.setMaxHashSlotNum(10_000);
        storeConfig.setMaxIndexNum(40_000);
        storeConfig.setTransientStorePoolEnable(false);

        BrokerController controller = new BrokerController(brokerConfig, serverConfig, new NettyClientConfig(),
            storeConfig);
        if (!controller.initialize()) {
            controller.shutdown();
            throw new IllegalStateException("Java broker " + label + " failed to initialize");
        }
        controller.start();
        // A 5.x broker may skip the NameServer at start (asynchronous reachability scan): register now.
        controller.registerBrokerAll(true, false, true);
        return new HaJavaBroker(controller, haPort);
    }

    public String addr() {
        return controller.getBrokerAddr();
    }

    public String haAddr() {
        return "127.0.0.1:" + haPort;
    }

    /** The end of the last record in this broker's CommitLog. */
    public long maxPhyOffset() {
        return controller.getMessageStore().getMaxPhyOffset();
    }

    /**
     * A slave's SlaveSynchronize.syncAll() now (topics, offsets, delay offsets, groups from the
     * master, through the master's VIP port listenPort - 2). On its own a Java slave runs it 10 s
     * after start and then at most once a minute, too rarely for a test.
     */
    public void syncFromMaster() {
        controller.getSlaveSynchronize().syncAll();
    }

    public BrokerController controller() {
        return controller;
    }

    @Override
    public synchronized void close() {
        if (!stopped) {
            stopped = true;
            controller.shutdown();
        }
    }
}
