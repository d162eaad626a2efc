package dev.ferrocket.compat;

import java.util.HashMap;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * One standalone ferrocket with its Kafka listener on a free port, shared by every test of a class
 * that extends this: {@link #env} (the broker and its RocketMQ side), {@link #bootstrap} (the Kafka
 * clients' {@code bootstrap.servers}) and an {@link #admin()} client. A subclass names its broker
 * and adds its own broker.conf keys in its constructor.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@ExtendWith(BrokerLogsOnFailure.class)
abstract class KafkaBrokerTest {
    private final String name;
    private final Map<String, String> brokerOverrides;
    BrokerDeployment env;
    String bootstrap;

    KafkaBrokerTest(String name, Map<String, String> brokerOverrides) {
        this.name = name;
        this.brokerOverrides = brokerOverrides;
    }

    @BeforeAll
    void startKafkaBroker() throws Exception {
        int port = Ports.free();
        Map<String, String> conf = new HashMap<>(brokerOverrides);
        conf.put("kafkaListenPort", Integer.toString(port));
        conf.put("kafkaAdvertisedAddress", "127.0.0.1:" + port);
        env = BrokerDeployment.start(BrokerDeployment.Mode.STANDALONE, name, conf);
        bootstrap = "127.0.0.1:" + port;
    }

    @AfterAll
    void stopKafkaBroker() {
        if (env != null) {
            env.close();
        }
    }

    /** A Kafka AdminClient on this class's broker; the caller closes it. */
    Admin admin() {
        Properties p = new Properties();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        return Admin.create(p);
    }
}
