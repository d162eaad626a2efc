package dev.ferrocket.compat;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.CommonClientConfigs;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.config.SslConfigs;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The Kafka port over TLS, judged by the official Kafka Java client with
 * {@code security.protocol=SSL}: a broker with {@code tls.server.mode=enforcing} and a certificate
 * made here with openssl (the RocketMQ port's {@code tls.*} keys) takes a producer's records and
 * serves them to a consumer group; the client checks the certificate against a PEM trust store, host
 * name included. A plaintext Kafka client gets no metadata from the enforcing port.
 */
@ExtendWith(BrokerLogsOnFailure.class)
class KafkaTlsTest {
    static final int COUNT = 10;

    static Properties ssl(String bootstrap, Path cert) {
        Properties p = new Properties();
        p.put(CommonClientConfigs.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(CommonClientConfigs.SECURITY_PROTOCOL_CONFIG, "SSL");
        p.put(SslConfigs.SSL_TRUSTSTORE_TYPE_CONFIG, "PEM");
        p.put(SslConfigs.SSL_TRUSTSTORE_LOCATION_CONFIG, cert.toString());
        return p;
    }

    @Test
    void sslProducerAndConsumerRoundTripRecordsAndPlaintextIsRefused() throws Exception {
        Path dir = TestDirs.fresh("kafka-tls-certs");
        Path cert = dir.resolve("cert.pem");
        Path key = dir.resolve("key.pem");
        Process openssl = new ProcessBuilder("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes",
            "-keyout", key.toString(), "-out", cert.toString(), "-days", "2", "-subj", "/CN=localhost",
            "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost")
            .redirectErrorStream(true).redirectOutput(dir.resolve("openssl.log").toFile()).start();
        assertEquals(true, openssl.waitFor(60, TimeUnit.SECONDS), "openssl finished");
        assertEquals(0, openssl.exitValue(), "openssl exit code (see " + dir.resolve("openssl.log") + ")");

        int port = Ports.free();
        String bootstrap = "127.0.0.1:" + port;
        Map<String, String> conf = Map.of("kafkaListenPort", Integer.toString(port),
            "kafkaAdvertisedAddress", bootstrap, "tls.server.mode", "enforcing",
            "tls.server.certPath", cert.toString(), "tls.server.keyPath", key.toString());
        try (BrokerDeployment d = BrokerDeployment.start(BrokerDeployment.Mode.STANDALONE, "kafka-tls", conf)) {
            String topic = Compat.unique("k-tls").replace('%', '-');
            try (Admin admin = Admin.create(ssl(bootstrap, cert))) {
                admin.createTopics(List.of(new NewTopic(topic, 1, (short) 1))).all().get();
            }

            Properties pp = ssl(bootstrap, cert);
            pp.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "30000");
            pp.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, "10000");
            try (KafkaProducer<byte[], byte[]> producer =
                     new KafkaProducer<>(pp, new ByteArraySerializer(), new ByteArraySerializer())) {
                for (int i = 0; i < COUNT; i++) {
                    producer.send(new ProducerRecord<>(topic, utf8("k" + i), utf8("over tls " + i))).get();
                }
            }

            Properties cp = ssl(bootstrap, cert);
            cp.put(ConsumerConfig.GROUP_ID_CONFIG, Compat.unique("cg-k-tls").replace('%', '-'));
            cp.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
            cp.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
            cp.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, "10000");
            cp.put(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, "500");
            try (KafkaConsumer<byte[], byte[]> consumer =
                     new KafkaConsumer<>(cp, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
                consumer.subscribe(List.of(topic));
                List<ConsumerRecord<byte[], byte[]>> got = new ArrayList<>();
                long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
                while (got.size() < COUNT && System.nanoTime() < deadline) {
                    consumer.poll(Duration.ofMillis(200)).forEach(got::add);
                }
                assertEquals(COUNT, got.size(), "records consumed over TLS");
                for (int i = 0; i < COUNT; i++) {
                    assertEquals(i, got.get(i).offset());
                    assertArrayEquals(utf8("k" + i), got.get(i).key());
                    assertArrayEquals(utf8("over tls " + i), got.get(i).value());
                }
                consumer.commitSync();
            }

            Properties plain = new Properties();
            plain.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
            plain.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "3000");
            plain.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "5000");
            try (Admin admin = Admin.create(plain)) {
                Exception refused = assertThrows(Exception.class,
                    () -> admin.listTopics().names().get(10, TimeUnit.SECONDS),
                    "a plaintext Kafka client on an enforcing port");
                System.out.printf("[compat %s kafka-tls] plaintext client on an enforcing port: %s%n",
                    Generation.current().tag(), refused);
            }
        }
    }

    static byte[] utf8(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }
}
