package dev.ferrocket.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.security.cert.X509Certificate;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLSocket;
import javax.net.ssl.TrustManager;
import javax.net.ssl.X509TrustManager;
import org.apache.kafka.clients.CommonClientConfigs;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.errors.AuthorizationException;
import org.apache.kafka.common.errors.SaslAuthenticationException;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Kafka SASL against the ACL accounts ({@code aclEnable=true}) with the official Kafka Java client:
 * for PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512, on SASL_PLAINTEXT and (once the Kafka port speaks TLS,
 * {@code tls.server.mode=permissive}) SASL_SSL: a good account produces and consumes in its group, a
 * wrong password fails with SaslAuthenticationException, an account without permission on the topic
 * gets an AuthorizationException.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@ExtendWith(BrokerLogsOnFailure.class)
class KafkaSaslTest {
    static final String USER = "kafkaUser1";
    static final String SECRET = "kafkaSecret1";
    static final String OTHER = "otherUser1";
    static final String OTHER_SECRET = "otherSecret1";
    static final String ADMIN = "kafkaAdmin1";
    static final String ADMIN_SECRET = "adminSecret1";
    static final String TOPIC = "sasl-topic";
    static final String GROUP = "sasl-group";

    BrokerDeployment env;
    int port;
    Path cert;

    @BeforeAll
    void setUp() throws Exception {
        Path dir = TestDirs.fresh("kafka-sasl-certs");
        cert = dir.resolve("cert.pem");
        Path key = dir.resolve("key.pem");
        Process openssl = new ProcessBuilder("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes",
            "-keyout", key.toString(), "-out", cert.toString(), "-days", "2", "-subj", "/CN=localhost",
            "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1")
            .redirectErrorStream(true).redirectOutput(dir.resolve("openssl.log").toFile()).start();
        assertTrue(openssl.waitFor(60, TimeUnit.SECONDS), "openssl finished");
        assertEquals(0, openssl.exitValue(), "openssl exit code (see " + dir.resolve("openssl.log") + ")");
        Path home = TestDirs.fresh("kafka-sasl-home");
        Path file = home.resolve("conf").resolve("plain_acl.yml");
        Files.createDirectories(file.getParent());
        Files.writeString(file, "accounts:\n"
            + "  - accessKey: " + USER + "\n    secretKey: " + SECRET + "\n"
            + "    defaultTopicPerm: DENY\n    defaultGroupPerm: DENY\n"
            + "    topicPerms: ['" + TOPIC + "=PUB|SUB']\n    groupPerms: ['" + GROUP + "=SUB']\n"
            + "  - accessKey: " + OTHER + "\n    secretKey: " + OTHER_SECRET + "\n"
            + "    defaultTopicPerm: DENY\n    defaultGroupPerm: DENY\n"
            + "  - accessKey: " + ADMIN + "\n    secretKey: " + ADMIN_SECRET + "\n    admin: true\n");
        port = Ports.free();
        env = BrokerDeployment.start(BrokerDeployment.Mode.STANDALONE, "kafka-sasl", Map.of(
            "aclEnable", "true", "rocketmqHome", home.toString(),
            "kafkaListenPort", Integer.toString(port), "kafkaAdvertisedAddress", "127.0.0.1:" + port,
            "tls.server.mode", "permissive", "tls.server.certPath", cert.toString(), "tls.server.keyPath", key.toString()));
        try (Admin admin = Admin.create(props("SASL_PLAINTEXT", "SCRAM-SHA-512", ADMIN, ADMIN_SECRET))) {
            admin.createTopics(List.of(new NewTopic(TOPIC, 1, (short) 1))).all().get(30, TimeUnit.SECONDS);
        }
    }

    @AfterAll
    void tearDown() {
        if (env != null) {
            env.close();
        }
    }

    /** Whether the Kafka port completes a TLS handshake (trusting any certificate). */
    boolean kafkaPortSpeaksTls() {
        try {
            SSLContext ctx = SSLContext.getInstance("TLS");
            ctx.init(null, new TrustManager[] {new X509TrustManager() {
                public void checkClientTrusted(X509Certificate[] c, String a) {
                }

                public void checkServerTrusted(X509Certificate[] c, String a) {
                }

                public X509Certificate[] getAcceptedIssuers() {
                    return new X509Certificate[0];
                }
            }}, null);
            try (SSLSocket s = (SSLSocket) ctx.getSocketFactory().createSocket("127.0.0.1", port)) {
                s.setSoTimeout(5_000);
                s.startHandshake();
                return true;
            }
        } catch (Exception e) {
            return false;
        }
    }

    Properties props(String protocol, String mechanism, String user, String password) {
        Properties p = new Properties();
        p.put(CommonClientConfigs.BOOTSTRAP_SERVERS_CONFIG, "127.0.0.1:" + port);
        p.put(CommonClientConfigs.SECURITY_PROTOCOL_CONFIG, protocol);
        p.put("sasl.mechanism", mechanism);
        String module = mechanism.equals("PLAIN") ? "org.apache.kafka.common.security.plain.PlainLoginModule"
            : "org.apache.kafka.common.security.scram.ScramLoginModule";
        p.put("sasl.jaas.config", module + " required username=\"" + user + "\" password=\"" + password + "\";");
        if (protocol.equals("SASL_SSL")) {
            p.put("ssl.truststore.type", "PEM");
            p.put("ssl.truststore.location", cert.toString());
            p.put("ssl.endpoint.identification.algorithm", "");
        }
        p.put(CommonClientConfigs.REQUEST_TIMEOUT_MS_CONFIG, "10000");
        p.put(CommonClientConfigs.DEFAULT_API_TIMEOUT_MS_CONFIG, "15000");
        return p;
    }

    KafkaProducer<String, String> producer(Properties p) {
        p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "20000");
        p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, "15000");
        return new KafkaProducer<>(p, new StringSerializer(), new StringSerializer());
    }

    static Throwable root(Throwable t) {
        Throwable c = t;
        while (c.getCause() != null && !(c instanceof SaslAuthenticationException) && !(c instanceof AuthorizationException)) {
            c = c.getCause();
        }
        return c;
    }

    @ParameterizedTest
    @CsvSource({"SASL_PLAINTEXT,PLAIN", "SASL_PLAINTEXT,SCRAM-SHA-256", "SASL_PLAINTEXT,SCRAM-SHA-512",
        "SASL_SSL,PLAIN", "SASL_SSL,SCRAM-SHA-256", "SASL_SSL,SCRAM-SHA-512"})
    void goodAccountWorksWrongPasswordAndMissingPermissionAreReported(String protocol, String mechanism) throws Exception {
        if (protocol.equals("SASL_SSL")) {
            Assumptions.assumeTrue(kafkaPortSpeaksTls(),
                "SKIPPED: the broker's Kafka port does not speak TLS yet (tls.server.mode=permissive), so SASL_SSL cannot run");
        }
        String value = "v-" + protocol + "-" + mechanism + "-" + System.nanoTime();
        try (KafkaProducer<String, String> p = producer(props(protocol, mechanism, USER, SECRET))) {
            p.send(new ProducerRecord<>(TOPIC, "k", value)).get(30, TimeUnit.SECONDS);
        }
        Properties cp = props(protocol, mechanism, USER, SECRET);
        cp.put(ConsumerConfig.GROUP_ID_CONFIG, GROUP);
        cp.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        cp.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        boolean seen = false;
        try (KafkaConsumer<String, String> c = new KafkaConsumer<>(cp, new StringDeserializer(), new StringDeserializer())) {
            c.subscribe(List.of(TOPIC));
            long deadline = System.currentTimeMillis() + 30_000;
            while (!seen && System.currentTimeMillis() < deadline) {
                ConsumerRecords<String, String> rs = c.poll(Duration.ofMillis(500));
                for (var r : rs) {
                    seen |= r.value().equals(value);
                }
            }
            c.commitSync();
        }
        assertTrue(seen, "the consumer read what the producer wrote");

        try (KafkaProducer<String, String> p = producer(props(protocol, mechanism, USER, "wrongPassword"))) {
            Exception e = assertThrows(Exception.class, () -> p.send(new ProducerRecord<>(TOPIC, "k", "x")).get(30, TimeUnit.SECONDS));
            assertTrue(root(e) instanceof SaslAuthenticationException, "a wrong password: " + e);
        }
        try (KafkaProducer<String, String> p = producer(props(protocol, mechanism, OTHER, OTHER_SECRET))) {
            Exception e = assertThrows(Exception.class, () -> p.send(new ProducerRecord<>(TOPIC, "k", "x")).get(30, TimeUnit.SECONDS));
            assertTrue(root(e) instanceof AuthorizationException, "no permission: " + e);
        }
        System.out.printf("[compat kafka-sasl] %s %s: good account ok, wrong password and missing permission reported%n",
            protocol, mechanism);
    }
}
