package dev.ferrocket.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.rocketmq.client.exception.MQBrokerException;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.common.message.Message;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The real {@code mqadmin} (MQAdminStartup from the module's rocketmq-tools jar, run as a child
 * JVM on the test classpath) changes broker config while ferrocket runs (#28):
 * {@code updateBrokerConfig -k fileReservedTime -v 48} and {@code -k deleteWhen} are read back at
 * once by {@code mqadmin getBrokerConfig} (and by {@code DefaultMQAdminExt.getBrokerConfig}), as
 * on the Java broker, and {@code maxMessageSize} changed the same way decides the producer's next
 * send (MESSAGE_ILLEGAL, 13, above it; accepted again once raised).
 */
@ExtendWith(DumpLogsOnFailure.class)
class MqadminLiveConfigTest {
    static final int MESSAGE_ILLEGAL = 13;
    private final Generation gen = Generation.current();

    @Test
    void updateBrokerConfigIsReadBackAtOnceAndActsLive() throws Exception {
        try (BrokerDeployment d = BrokerDeployment.start(BrokerDeployment.Mode.STANDALONE, "live-config", Map.of())) {
            Map<String, String> before = getBrokerConfig(d);
            assertEquals("72", before.get("fileReservedTime"), "fileReservedTime before the update");
            assertEquals("04", before.get("deleteWhen"), "deleteWhen before the update");

            updateBrokerConfig(d, "fileReservedTime", "48");
            updateBrokerConfig(d, "deleteWhen", "01");
            Map<String, String> after = getBrokerConfig(d);
            assertEquals("48", after.get("fileReservedTime"), "mqadmin getBrokerConfig right after the update");
            assertEquals("01", after.get("deleteWhen"), "mqadmin getBrokerConfig right after the update");
            Properties viaApi = d.admin().getBrokerConfig(d.brokerAddr());
            assertEquals("48", viaApi.getProperty("fileReservedTime"), "DefaultMQAdminExt.getBrokerConfig");
            assertEquals("01", viaApi.getProperty("deleteWhen"), "DefaultMQAdminExt.getBrokerConfig");

            DefaultMQProducer producer = Clients.producer(d.namesrvAddr());
            try {
                String topic = Compat.unique("LiveConfig" + gen.tag());
                byte[] body = new byte[2048];
                java.util.Arrays.fill(body, (byte) 'x');
                assertEquals("SEND_OK", producer.send(new Message(topic, "TagA", body)).getSendStatus().name(),
                    "a 2 KiB send with the default maxMessageSize");
                updateBrokerConfig(d, "maxMessageSize", "1024");
                assertEquals("1024", getBrokerConfig(d).get("maxMessageSize"), "maxMessageSize read back");
                MQBrokerException refused = assertThrows(MQBrokerException.class,
                    () -> producer.send(new Message(topic, "TagA", body)), "a 2 KiB send above maxMessageSize=1024");
                assertEquals(MESSAGE_ILLEGAL, refused.getResponseCode(), "code of the refused send: " + refused);
                updateBrokerConfig(d, "maxMessageSize", Integer.toString(4 * 1024 * 1024));
                assertEquals("SEND_OK", producer.send(new Message(topic, "TagA", body)).getSendStatus().name(),
                    "a 2 KiB send once maxMessageSize is raised again");
            } finally {
                producer.shutdown();
            }
            System.out.printf("[compat %s live-config] mqadmin updateBrokerConfig read back and live: %s%n",
                gen.tag(), List.of("fileReservedTime=48", "deleteWhen=01", "maxMessageSize"));
        }
    }

    /** {@code mqadmin updateBrokerConfig -b <broker> -k key -v value}; fails unless it says it succeeded. */
    void updateBrokerConfig(BrokerDeployment d, String key, String value) throws Exception {
        String out = mqadmin(d, "updateBrokerConfig", "-b", d.brokerAddr(), "-k", key, "-v", value);
        assertTrue(out.contains("update broker config success"), "mqadmin updateBrokerConfig " + key + "=" + value + ":\n" + out);
    }

    /** {@code mqadmin getBrokerConfig -b <broker>}: its {@code key  =  value} lines. */
    Map<String, String> getBrokerConfig(BrokerDeployment d) throws Exception {
        String out = mqadmin(d, "getBrokerConfig", "-b", d.brokerAddr());
        Map<String, String> table = new LinkedHashMap<>();
        Matcher m = Pattern.compile("(?m)^(\\S+)\\s*=  (.*)$").matcher(out);
        while (m.find()) {
            table.put(m.group(1), m.group(2).trim());
        }
        assertTrue(table.containsKey("brokerName"), "mqadmin getBrokerConfig printed no config:\n" + out);
        return table;
    }

    /** Runs mqadmin with {@code -n <namesrv>}; its output (stdout and stderr). */
    static String mqadmin(BrokerDeployment d, String... args) throws Exception {
        String classpath = System.getProperty("surefire.test.class.path", System.getProperty("java.class.path"));
        // The 4.9 tools read <rocketmq.home.dir>/conf/logback_tools.xml first and do nothing
        // without it; a home with a quiet one (5.x reads only conf/tools.yml, absent: no ACL hook).
        Path home = d.dir().resolve("mqadmin-home");
        Files.createDirectories(home.resolve("conf"));
        Files.writeString(home.resolve("conf/logback_tools.xml"),
            "<configuration><root level=\"OFF\"/></configuration>\n");
        List<String> command = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
            "-Drocketmq.home.dir=" + home, "-cp", classpath, "org.apache.rocketmq.tools.command.MQAdminStartup"));
        command.addAll(List.of(args));
        command.addAll(List.of("-n", d.namesrvAddr()));
        return ReferenceClasspath.run(command, Duration.ofSeconds(90));
    }
}
