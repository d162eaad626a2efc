package dev.ferrocket.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.lang.reflect.InvocationTargetException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ListOffsetsResult;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.utils.Exit;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/**
 * Kafka transactions (issue 27) judged by the official Java client of the module's era (4.1.1 in
 * client5, 3.9.1 in client4): initTransactions, commit and abort (one control record per partition
 * of the transaction, so each takes one offset), sendOffsetsToTransaction (the group's offsets move
 * at the commit only), two producers with the same transactional.id (the first is fenced), and
 * {@code kafka-transactions.sh list} ({@code TransactionsCommand} from kafka-tools, client5 only).
 *
 * <p>What a {@code read_committed} consumer sees needs the read side (read_committed fetch, control
 * batches hidden), built beside this: {@link #a_read_committed_consumer_sees_committed_records_only}
 * holds once both are in.
 */
class KafkaTransactionsTest extends KafkaBrokerTest {
    private final Generation gen = Generation.current();

    KafkaTransactionsTest() {
        super("kafka-txn", Map.of());
    }

    void report(String format, Object... args) {
        System.out.printf("[compat %s kafka-txn] %s%n", gen.tag(), String.format(format, args));
    }

    KafkaProducer<byte[], byte[]> txProducer(String transactionalId) {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, transactionalId);
        p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, "30000");
        p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "30000");
        p.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, "10000");
        return new KafkaProducer<>(p, new ByteArraySerializer(), new ByteArraySerializer());
    }

    void createTopic(String topic, int partitions) throws Exception {
        try (Admin admin = admin()) {
            admin.createTopics(List.of(new NewTopic(topic, partitions, (short) 1))).all().get();
        }
    }

    static ProducerRecord<byte[], byte[]> record(String topic, int partition, String value) {
        return new ProducerRecord<>(topic, partition, null, value.getBytes(StandardCharsets.UTF_8));
    }

    long latest(Admin admin, String topic, int partition) throws Exception {
        TopicPartition tp = new TopicPartition(topic, partition);
        ListOffsetsResult r = admin.listOffsets(Map.of(tp, OffsetSpec.latest()));
        return r.partitionResult(tp).get().offset();
    }

    /** c1 and c2 committed, a1 aborted, c3 committed: the record offsets and the markers. */
    String commitAbortCommit() throws Exception {
        String topic = Compat.unique("ktx");
        createTopic(topic, 2);
        try (KafkaProducer<byte[], byte[]> p = txProducer(Compat.unique("tx-app"))) {
            p.initTransactions();
            p.beginTransaction();
            assertEquals(0, p.send(record(topic, 0, "c1")).get().offset());
            assertEquals(0, p.send(record(topic, 1, "c2")).get().offset());
            p.commitTransaction();
            p.beginTransaction();
            assertEquals(2, p.send(record(topic, 0, "a1")).get().offset(), "after c1 and its COMMIT marker");
            p.abortTransaction();
            p.beginTransaction();
            assertEquals(4, p.send(record(topic, 0, "c3")).get().offset(), "after a1 and its ABORT marker");
            p.commitTransaction();
        }
        return topic;
    }

    @Test
    void commit_and_abort_write_one_control_record_per_partition() throws Exception {
        String topic = commitAbortCommit();
        try (Admin admin = admin()) {
            assertEquals(6, latest(admin, topic, 0), "c1, COMMIT, a1, ABORT, c3, COMMIT");
            assertEquals(2, latest(admin, topic, 1), "c2, COMMIT: only the partitions of a transaction get a marker");
        }
    }

    /** Holds once the read side (read_committed fetch, control batches hidden) is in. */
    @Test
    void a_read_committed_consumer_sees_committed_records_only() throws Exception {
        String topic = commitAbortCommit();
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.GROUP_ID_CONFIG, Compat.unique("g-rc"));
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        List<String> got = new ArrayList<>();
        try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(p, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
            c.assign(List.of(new TopicPartition(topic, 0), new TopicPartition(topic, 1)));
            long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
            while (got.size() < 3 && System.nanoTime() < deadline) {
                for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(200))) {
                    got.add(new String(r.value(), StandardCharsets.UTF_8));
                }
            }
        }
        got.sort(null);
        assertEquals(List.of("c1", "c2", "c3"), got);
    }

    @Test
    void offsets_sent_to_a_transaction_move_at_its_commit_only() throws Exception {
        String topic = Compat.unique("ktx-src");
        String group = Compat.unique("g-eos");
        createTopic(topic, 1);
        TopicPartition tp = new TopicPartition(topic, 0);
        try (KafkaProducer<byte[], byte[]> p = txProducer(Compat.unique("tx-eos"));
                Admin admin = admin()) {
            p.initTransactions();
            p.beginTransaction();
            p.send(record(topic, 0, "out")).get();
            p.sendOffsetsToTransaction(Map.of(tp, new OffsetAndMetadata(5, "m")), new ConsumerGroupMetadata(group));
            p.commitTransaction();
            OffsetAndMetadata committed = admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get().get(tp);
            assertEquals(5, committed.offset());
            assertEquals("m", committed.metadata());
            p.beginTransaction();
            p.sendOffsetsToTransaction(Map.of(tp, new OffsetAndMetadata(9)), new ConsumerGroupMetadata(group));
            p.abortTransaction();
            committed = admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get().get(tp);
            assertEquals(5, committed.offset(), "an aborted transaction's offsets are discarded");
        }
    }

    @Test
    void a_second_producer_with_the_same_transactional_id_fences_the_first() throws Exception {
        String topic = Compat.unique("ktx-z");
        String id = Compat.unique("tx-z");
        createTopic(topic, 1);
        try (KafkaProducer<byte[], byte[]> zombie = txProducer(id)) {
            zombie.initTransactions();
            zombie.beginTransaction();
            zombie.send(record(topic, 0, "zombie")).get();
            try (KafkaProducer<byte[], byte[]> next = txProducer(id)) {
                next.initTransactions(); // aborts the zombie's transaction
                KafkaException e = assertThrows(KafkaException.class, zombie::commitTransaction);
                report("the zombie's commit: %s", e);
                assertTrue(e instanceof ProducerFencedException || e.getCause() instanceof ProducerFencedException, e.toString());
                next.beginTransaction();
                assertEquals(2, next.send(record(topic, 0, "next")).get().offset(), "after the zombie's record and its ABORT");
                next.commitTransaction();
            }
        }
    }

    /** {@code kafka-transactions.sh list}: needs kafka-tools (client5's 4.1.1). */
    @Test
    void kafka_transactions_sh_list_shows_the_transactional_id() throws Exception {
        Class<?> command;
        try {
            command = Class.forName("org.apache.kafka.tools.TransactionsCommand");
        } catch (ClassNotFoundException e) {
            Assumptions.abort("kafka-tools is not on this module's class path");
            return;
        }
        String id = Compat.unique("tx-listed");
        try (KafkaProducer<byte[], byte[]> p = txProducer(id)) {
            p.initTransactions();
        }
        ByteArrayOutputStream captured = new ByteArrayOutputStream();
        PrintStream out = System.out;
        Exit.setExitProcedure((code, message) -> {
            throw new IllegalStateException("exit " + code + ": " + message);
        });
        try {
            System.setOut(new PrintStream(captured, true, StandardCharsets.UTF_8));
            command.getMethod("main", String[].class).invoke(null, (Object) new String[] {"--bootstrap-server", bootstrap, "list"});
        } catch (InvocationTargetException e) {
            assertTrue(e.getCause().getMessage().startsWith("exit 0"), e.getCause().toString());
        } finally {
            System.setOut(out);
            Exit.resetExitProcedure();
        }
        String text = captured.toString(StandardCharsets.UTF_8);
        report("kafka-transactions.sh list:%n%s", text);
        assertTrue(text.contains(id), text);
        assertTrue(text.contains("Empty") || text.contains("CompleteCommit"), text);
    }
}
