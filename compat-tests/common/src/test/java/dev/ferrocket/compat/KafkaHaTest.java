package dev.ferrocket.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.junit.jupiter.api.Test;

/**
 * acks=all on a SYNC_MASTER means "the slave has it": records a Kafka producer saw acknowledged
 * are consumed from the slave, each once, after the master is killed with SIGKILL.
 */
class KafkaHaTest {
    static final int QUEUES = 2;
    static final Duration CONSUME_TIMEOUT = Duration.ofSeconds(60);

    @Test
    void records_acknowledged_with_acks_all_are_consumable_from_the_slave_after_a_kill() throws Exception {
        int kafkaPort = Ports.free();
        HaCluster c = HaCluster.start("kafka", "SYNC_MASTER",
            Map.of("kafkaListenPort", Integer.toString(kafkaPort), "kafkaAdvertisedAddress", "127.0.0.1:" + kafkaPort),
            Map.of());
        DefaultMQPushConsumer consumer = null;
        try {
            String bootstrap = "127.0.0.1:" + kafkaPort;
            String topic = Compat.unique("k-ha").replace('%', '-');
            Properties a = new Properties();
            a.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
            try (Admin admin = Admin.create(a)) {
                admin.createTopics(List.of(new NewTopic(topic, QUEUES, (short) 1))).all().get();
            }
            c.awaitTopicOn(c.addr(HaCluster.SLAVE), topic, Duration.ofSeconds(30));
            Properties p = new Properties();
            p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
            p.put(ProducerConfig.ACKS_CONFIG, "all");
            p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "60000");
            List<Deliveries.Sent> sent = new ArrayList<>();
            try (KafkaProducer<byte[], byte[]> producer =
                     new KafkaProducer<>(p, new ByteArraySerializer(), new ByteArraySerializer())) {
                for (int i = 0; i < 40; i++) {
                    String key = "kha-" + i;
                    String body = "kafka acks=all " + i;
                    producer.send(new ProducerRecord<>(topic, i % QUEUES, key.getBytes(StandardCharsets.UTF_8),
                        body.getBytes(StandardCharsets.UTF_8))).get();
                    sent.add(new Deliveries.Sent(topic, key, null, body));
                }
            }
            c.kill(HaCluster.MASTER);

            Deliveries deliveries = new Deliveries();
            consumer = Clients.push(c.namesrvAddr(), Compat.unique("k-ha-group"), "kha", topic, "*",
                deliveries.listener("kha"));
            consumer.start();
            Wait.until("all 40 acknowledged records consumed from the slave", CONSUME_TIMEOUT,
                () -> deliveries.keys().size(), v -> deliveries.hasAll(sent, null));
            Deliveries.assertExactly("Kafka records consumed from the slave", sent, deliveries.all());
            long stored = c.maxOffsets(c.addr(HaCluster.SLAVE), topic, QUEUES).values().stream().mapToLong(x -> x).sum();
            assertEquals(40L, stored, "the slave holds each record once (retries of a batch are not stored again)");
        } catch (Throwable t) {
            System.err.println("[compat] " + c + " failed: " + t + "\n" + c.logTails(80));
            throw t;
        } finally {
            if (consumer != null) {
                Clients.shutdownInBackground("kafka ha consumer", consumer::shutdown);
            }
            c.close();
        }
    }
}
