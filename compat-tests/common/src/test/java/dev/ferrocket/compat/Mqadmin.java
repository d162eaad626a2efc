package dev.ferrocket.compat;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import org.apache.rocketmq.common.MixAll;
import org.apache.rocketmq.tools.command.MQAdminStartup;

/**
 * The real {@code mqadmin} (MQAdminStartup of the module's rocketmq-tools jar) run in this JVM,
 * its standard output captured: much faster than a child JVM ({@link MqadminLiveConfigTest#mqadmin},
 * which 4.9's tools need: in-process they first load {@code ${rocketmq.home.dir}/conf/logback_tools.xml}
 * and run nothing without it). One command at a time (standard output is the JVM's); the
 * NameServer address a command sets as a system property is put back afterwards.
 */
final class Mqadmin {
    private Mqadmin() {
    }

    /** Runs {@code mqadmin args...} and returns what it printed. */
    static String inProcess(String... args) {
        ByteArrayOutputStream buf = new ByteArrayOutputStream();
        PrintStream out = System.out;
        String namesrv = System.getProperty(MixAll.NAMESRV_ADDR_PROPERTY);
        synchronized (Mqadmin.class) {
            System.setOut(new PrintStream(buf, true, StandardCharsets.UTF_8));
            try {
                MQAdminStartup.main0(args, new RecordingRpcHook("mqadmin " + args[0]));
            } finally {
                System.setOut(out);
                if (namesrv == null) {
                    System.clearProperty(MixAll.NAMESRV_ADDR_PROPERTY);
                } else {
                    System.setProperty(MixAll.NAMESRV_ADDR_PROPERTY, namesrv);
                }
            }
        }
        return buf.toString(StandardCharsets.UTF_8);
    }
}
