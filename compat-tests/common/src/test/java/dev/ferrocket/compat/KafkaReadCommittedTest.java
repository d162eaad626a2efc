package dev.ferrocket.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.rocketmq.client.consumer.DefaultMQPullConsumer;
import org.apache.rocketmq.client.consumer.PullResult;
import org.apache.rocketmq.client.consumer.PullStatus;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;
import org.junit.jupiter.api.Test;

/**
 * Kafka transactions as readers see them (#27.2), judged by the official clients: a transactional
 * producer commits, aborts and leaves a transaction open beside a plain producer; a
 * {@code read_committed} consumer gets exactly the committed and plain records (no marker, nothing
 * of the open transaction until it commits, {@code endOffsets} = the last stable offset), a
 * {@code read_uncommitted} one everything but the markers, and the official RocketMQ pull consumer
 * on the same queue what the {@code read_committed} consumer gets. Needs the transaction
 * coordinator (#27.1).
 */
class KafkaReadCommittedTest extends KafkaBrokerTest {
    private final Generation gen = Generation.current();

    KafkaReadCommittedTest() {
        super("kafka-rc", Map.of());
    }

    void report(String format, Object... args) {
        System.out.printf("[compat %s kafka-rc] %s%n", gen.tag(), String.format(format, args));
    }

    static byte[] utf8(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    KafkaProducer<byte[], byte[]> producer(String transactionalId) {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "30000");
        p.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, "10000");
        if (transactionalId != null) {
            p.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, transactionalId);
        }
        return new KafkaProducer<>(p, new ByteArraySerializer(), new ByteArraySerializer());
    }

    KafkaConsumer<byte[], byte[]> consumer(String isolation) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, isolation);
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        return new KafkaConsumer<>(p, new ByteArrayDeserializer(), new ByteArrayDeserializer());
    }

    /** Values read from the current position until {@code done} holds (or fails after 30 s). */
    static List<String> readUntil(KafkaConsumer<byte[], byte[]> c, List<String> into,
            java.util.function.Predicate<List<String>> done) {
        long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        while (!done.test(into) && System.nanoTime() < deadline) {
            for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(200))) {
                into.add(new String(r.value(), StandardCharsets.UTF_8));
            }
        }
        assertTrue(done.test(into), "read within 30 s: " + into);
        return into;
    }

    /**
     * Every message the RocketMQ client pulls from {@code mq}: like {@code FeatureClients.readQueue},
     * but past NO_MATCHED_MSG (what a pull answers over markers and aborted records) to the end.
     */
    static List<String> rocketmqRead(DefaultMQPullConsumer reader, MessageQueue mq) throws Exception {
        List<String> out = new ArrayList<>();
        long offset = 0;
        for (int pulls = 0; pulls < 1000; pulls++) {
            PullResult r = reader.pull(mq, "*", offset, 32);
            if (r.getPullStatus() == PullStatus.FOUND) {
                for (MessageExt m : r.getMsgFoundList()) {
                    out.add(new String(m.getBody(), StandardCharsets.UTF_8));
                }
            } else if (r.getPullStatus() != PullStatus.NO_MATCHED_MSG) {
                return out;
            }
            offset = r.getNextBeginOffset();
        }
        throw new AssertionError("no end after 1000 pulls: " + out);
    }

    @Test
    void committed_readers_of_both_protocols_see_committed_records_only() throws Exception {
        String topic = Compat.unique("k-rc").replace('%', '-');
        TopicPartition tp = new TopicPartition(topic, 0);
        try (Admin admin = admin()) {
            admin.createTopics(List.of(new NewTopic(topic, 1, (short) 1))).all().get();
        }
        KafkaProducer<byte[], byte[]> tx = producer(Compat.unique("k-rc-tx"));
        KafkaProducer<byte[], byte[]> plain = producer(null);
        KafkaConsumer<byte[], byte[]> committed = consumer("read_committed");
        KafkaConsumer<byte[], byte[]> uncommitted = consumer("read_uncommitted");
        DefaultMQPullConsumer reader = Clients.pull(env.namesrvAddr(), Compat.unique("k-rc-reader"));
        try {
            tx.initTransactions();
            tx.beginTransaction();
            tx.send(new ProducerRecord<>(topic, 0, null, utf8("c1")));
            tx.send(new ProducerRecord<>(topic, 0, null, utf8("c2")));
            tx.commitTransaction();
            tx.beginTransaction();
            tx.send(new ProducerRecord<>(topic, 0, null, utf8("a1")));
            tx.send(new ProducerRecord<>(topic, 0, null, utf8("a2")));
            tx.flush();
            tx.abortTransaction();
            plain.send(new ProducerRecord<>(topic, 0, null, utf8("plain"))).get();
            tx.beginTransaction();
            tx.send(new ProducerRecord<>(topic, 0, null, utf8("c3")));
            tx.commitTransaction();
            // Left open: stored, not yet committed.
            tx.beginTransaction();
            tx.send(new ProducerRecord<>(topic, 0, null, utf8("o1")));
            tx.flush();

            uncommitted.assign(List.of(tp));
            uncommitted.seekToBeginning(List.of(tp));
            List<String> all = readUntil(uncommitted, new ArrayList<>(), l -> l.contains("o1"));
            assertEquals(List.of("c1", "c2", "a1", "a2", "plain", "c3", "o1"), all,
                "read_uncommitted: every record, no marker");

            committed.assign(List.of(tp));
            committed.seekToBeginning(List.of(tp));
            long lso = committed.endOffsets(List.of(tp)).get(tp);
            long hw = uncommitted.endOffsets(List.of(tp)).get(tp);
            // c1 c2 COMMIT a1 a2 ABORT plain c3 COMMIT | o1: the LSO is o1's offset, 9.
            assertEquals(9L, lso, "endOffsets of a read_committed consumer is the last stable offset");
            assertEquals(10L, hw, "read_uncommitted: the high watermark");
            List<String> seen = readUntil(committed, new ArrayList<>(), l -> committed.position(tp) >= lso);
            assertEquals(List.of("c1", "c2", "plain", "c3"), seen, "read_committed: no aborted record, no open one");
            assertTrue(committed.poll(Duration.ofMillis(500)).isEmpty(), "nothing past the LSO");
            MessageQueue mq = new MessageQueue(topic, env.brokerName(), 0);
            assertEquals(List.of("c1", "c2", "plain", "c3"), rocketmqRead(reader, mq),
                "the RocketMQ consumer: committed records only, never past the LSO");

            tx.commitTransaction();
            readUntil(committed, seen, l -> l.contains("o1"));
            assertEquals(List.of("c1", "c2", "plain", "c3", "o1"), seen, "the open transaction once committed");
            List<String> rocketmq = Wait.until("the committed record, read by the RocketMQ client", Duration.ofSeconds(20),
                () -> rocketmqRead(reader, mq), l -> l.contains("o1"));
            assertEquals(List.of("c1", "c2", "plain", "c3", "o1"), rocketmq);
            report("read_committed, read_uncommitted and a RocketMQ pull consumer agree with Kafka's semantics");
        } finally {
            tx.close(Duration.ofSeconds(5));
            plain.close(Duration.ofSeconds(5));
            committed.close(Duration.ofSeconds(5));
            uncommitted.close(Duration.ofSeconds(5));
            Clients.shutdownInBackground("kafka-rc reader", reader::shutdown);
        }
    }
}
