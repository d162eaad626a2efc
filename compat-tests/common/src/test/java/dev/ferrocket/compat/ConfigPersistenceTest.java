package dev.ferrocket.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.rocketmq.client.exception.MQBrokerException;
import org.apache.rocketmq.tools.admin.DefaultMQAdminExt;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * updateBrokerConfig and updateNameServerConfig (what {@code mqadmin updateBrokerConfig} and
 * {@code updateNamesrvConfig} send) are written back to the files given with {@code -c} and
 * {@code --namesrv-config}, as the Java broker and NameServer write theirs, and a restart keeps them.
 */
@ExtendWith(DumpLogsOnFailure.class)
class ConfigPersistenceTest {

    @Test
    void configUpdatesAreWrittenToTheConfigFilesAndSurviveARestart() throws Exception {
        try (BrokerDeployment d = BrokerDeployment.start(BrokerDeployment.Mode.STANDALONE, "config-sticks", Map.of())) {
            Path brokerConf = d.dir().resolve("broker.conf");
            Path namesrvConf = d.dir().resolve("namesrv.conf");
            Files.writeString(brokerConf, "# written by hand, kept by ferrocket\n" + Files.readString(brokerConf));
            DefaultMQAdminExt admin = d.admin();

            Properties broker = new Properties();
            broker.setProperty("brokerPermission", "4");        // takes effect at once
            broker.setProperty("defaultTopicQueueNums", "3");   // takes effect at the next start
            admin.updateBrokerConfig(d.brokerAddr(), broker);
            assertEquals("4", admin.getBrokerConfig(d.brokerAddr()).getProperty("brokerPermission"),
                "brokerPermission right after updateBrokerConfig");

            Properties namesrv = new Properties();
            namesrv.setProperty("orderMessageEnable", "true");
            admin.updateNameServerConfig(namesrv, List.of(d.namesrvAddr()));

            // Java's configBlackList: refused with NO_PERMISSION (16), nothing written.
            Properties black = new Properties();
            black.setProperty("brokerConfigPath", "/tmp/elsewhere.conf");
            MQBrokerException refused = assertThrows(MQBrokerException.class,
                () -> admin.updateBrokerConfig(d.brokerAddr(), black), "updating a black-listed key");
            assertEquals(16, refused.getResponseCode(), "response code for a black-listed key: " + refused);

            Properties file = load(brokerConf);
            assertEquals("4", file.getProperty("brokerPermission"), "brokerPermission in " + brokerConf);
            assertEquals("3", file.getProperty("defaultTopicQueueNums"), "defaultTopicQueueNums in " + brokerConf);
            assertEquals(BrokerDeployment.BROKER_NAME, file.getProperty("brokerName"), "brokerName kept in " + brokerConf);
            assertTrue(Files.readString(brokerConf).startsWith("# written by hand"), "comment kept in " + brokerConf);
            assertTrue(file.getProperty("brokerConfigPath") == null, "black-listed key written to " + brokerConf);
            assertEquals("true", load(namesrvConf).getProperty("orderMessageEnable"), "orderMessageEnable in " + namesrvConf);

            assertEquals(0, d.stopBroker(), "exit code of the standalone process");
            d.startBroker();
            DefaultMQAdminExt after = d.admin();
            Properties restarted = after.getBrokerConfig(d.brokerAddr());
            assertEquals("4", restarted.getProperty("brokerPermission"), "brokerPermission after a restart");
            assertEquals("3", restarted.getProperty("defaultTopicQueueNums"), "defaultTopicQueueNums after a restart");
            assertEquals("true", after.getNameServerConfig(List.of(d.namesrvAddr())).get(d.namesrvAddr())
                .getProperty("orderMessageEnable"), "orderMessageEnable after a restart");
        }
    }

    private static Properties load(Path file) throws Exception {
        Properties p = new Properties();
        try (var reader = Files.newBufferedReader(file, StandardCharsets.ISO_8859_1)) {
            p.load(reader);
        }
        return p;
    }
}
