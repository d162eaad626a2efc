package dev.ferrocket.compat;

import java.util.concurrent.atomic.AtomicInteger;
import org.apache.rocketmq.common.MQVersion;
import org.apache.rocketmq.remoting.protocol.RemotingCommand;
import org.apache.rocketmq.tools.admin.DefaultMQAdminExt;

/** Process-wide setup and small factories shared by all tests. */
public final class Compat {
    private static final AtomicInteger SEQ = new AtomicInteger();

    static {
        // BrokerStartup and the client set this before creating any command: every request and
        // response carries the release's ordinal. REGISTER_BROKER's body format depends on it.
        System.setProperty(RemotingCommand.REMOTING_VERSION_KEY, Integer.toString(MQVersion.CURRENT_VERSION));
    }

    private Compat() {
    }

    /** Call before creating any RemotingCommand, broker or client. */
    public static void init() {
        // the static initializer does the work
    }

    /** A name unique in this JVM run, tagged with the generation, e.g. {@code compat-v5-orders-3}. */
    public static String unique(String base) {
        return "compat-" + Generation.current().tag() + "-" + base + "-" + SEQ.incrementAndGet();
    }

    /** A started official admin client (what mqadmin uses) that records its calls. */
    public static DefaultMQAdminExt admin(String namesrvAddr) throws Exception {
        init();
        DefaultMQAdminExt admin = new DefaultMQAdminExt(new RecordingRpcHook("admin"), 5_000);
        admin.setNamesrvAddr(namesrvAddr);
        admin.setInstanceName(unique("admin"));
        admin.start();
        return admin;
    }
}
