package dev.ferrocket.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.RecordsToDelete;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.InvalidConfigurationException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.Test;

/**
 * Issue #27 items 4 and 5 judged by the official Kafka clients and tools: topic configs given at
 * creation are kept and read back (AdminClient, and the real {@code kafka-configs.sh --describe}),
 * changed by incrementalAlterConfigs; deleteRecords moves the log start (AdminClient, and the real
 * {@code kafka-delete-records.sh}), a consumer below it is reset; per-topic retention.ms is
 * enforced; refused configs leave a WARN line in the broker's log.
 */
class KafkaRetentionTest extends KafkaBrokerTest {
    KafkaRetentionTest() {
        super("kafka-retention", Map.of("kafkaLogRetentionCheckIntervalMs", "200", "compactionScheduleInternal", "200"));
    }

    static String topic(String base) {
        return Compat.unique(base).replace('%', '-');
    }

    void produce(String topic, int n) throws Exception {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        try (KafkaProducer<byte[], byte[]> producer =
                 new KafkaProducer<>(p, new ByteArraySerializer(), new ByteArraySerializer())) {
            for (int i = 0; i < n; i++) {
                producer.send(new ProducerRecord<>(topic, 0, null, ("v" + i).getBytes(StandardCharsets.UTF_8))).get();
            }
        }
    }

    static Map<String, ConfigEntry> describe(Admin admin, String topic) throws Exception {
        ConfigResource r = new ConfigResource(ConfigResource.Type.TOPIC, topic);
        Config c = admin.describeConfigs(List.of(r)).all().get().get(r);
        Map<String, ConfigEntry> out = new java.util.TreeMap<>();
        c.entries().forEach(e -> out.put(e.name(), e));
        return out;
    }

    static long earliest(Admin admin, TopicPartition tp) throws Exception {
        return admin.listOffsets(Map.of(tp, OffsetSpec.earliest())).partitionResult(tp).get().offset();
    }

    @Test
    void configs_given_at_creation_are_kept_read_back_and_altered() throws Exception {
        String topic = topic("k-configs");
        try (Admin admin = admin()) {
            // What Kafka Streams sends for a repartition topic.
            NewTopic t = new NewTopic(topic, 1, (short) 1).configs(Map.of("cleanup.policy", "delete",
                "segment.bytes", "52428800", "retention.ms", "-1", "message.timestamp.type", "CreateTime"));
            admin.createTopics(List.of(t)).all().get();
            Map<String, ConfigEntry> d = describe(admin, topic);
            assertEquals("-1", d.get("retention.ms").value());
            assertEquals(ConfigEntry.ConfigSource.DYNAMIC_TOPIC_CONFIG, d.get("retention.ms").source());
            assertEquals("52428800", d.get("segment.bytes").value());
            assertEquals(ConfigEntry.ConfigSource.DEFAULT_CONFIG, d.get("retention.bytes").source());

            ConfigResource r = new ConfigResource(ConfigResource.Type.TOPIC, topic);
            Collection<AlterConfigOp> ops = List.of(
                new AlterConfigOp(new ConfigEntry("retention.bytes", "1048576"), AlterConfigOp.OpType.SET),
                new AlterConfigOp(new ConfigEntry("retention.ms", null), AlterConfigOp.OpType.DELETE));
            admin.incrementalAlterConfigs(Map.of(r, ops)).all().get();
            d = describe(admin, topic);
            assertEquals("1048576", d.get("retention.bytes").value());
            assertEquals(ConfigEntry.ConfigSource.DYNAMIC_TOPIC_CONFIG, d.get("retention.bytes").source());
            assertEquals(ConfigEntry.ConfigSource.DEFAULT_CONFIG, d.get("retention.ms").source());

            // A config this broker cannot honour (a second in-sync replica) is refused with
            // INVALID_CONFIG, and the broker says so in its log.
            NewTopic refused = new NewTopic(topic("k-isr2"), 1, (short) 1).configs(Map.of("min.insync.replicas", "2"));
            ExecutionException e = assertThrows(ExecutionException.class, () -> admin.createTopics(List.of(refused)).all().get());
            assertInstanceOf(InvalidConfigurationException.class, e.getCause());
            String log = Files.readString(env.dir().resolve("ferrocket-standalone.log"));
            assertTrue(log.contains("Kafka request refused") && log.contains("min.insync.replicas"), "a WARN line for the refusal");

            // The real kafka-configs.sh --describe shows what was set.
            String out = tool("kafka.admin.ConfigCommand", "--bootstrap-server", bootstrap, "--describe",
                "--entity-type", "topics", "--entity-name", topic);
            assertTrue(out.contains("retention.bytes=1048576"), out);
            assertTrue(out.contains("segment.bytes=52428800"), out);
        }
    }

    @Test
    void delete_records_moves_the_log_start_and_a_consumer_below_it_is_reset() throws Exception {
        String topic = topic("k-delrec");
        TopicPartition tp = new TopicPartition(topic, 0);
        try (Admin admin = admin()) {
            admin.createTopics(List.of(new NewTopic(topic, 1, (short) 1))).all().get();
            produce(topic, 10);
            long low = admin.deleteRecords(Map.of(tp, RecordsToDelete.beforeOffset(4))).lowWatermarks().get(tp).get()
                .lowWatermark();
            assertEquals(4, low);
            assertEquals(4, earliest(admin, tp));

            Properties p = new Properties();
            p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
            p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
            try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(p, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
                c.assign(List.of(tp));
                c.seek(tp, 1);
                List<ConsumerRecord<byte[], byte[]>> got = new ArrayList<>();
                long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
                while (got.isEmpty() && System.nanoTime() < deadline) {
                    c.poll(Duration.ofMillis(200)).forEach(got::add);
                }
                assertEquals(4, got.get(0).offset(), "reset to the log start");
            }

            // The real kafka-delete-records.sh.
            Path json = env.dir().resolve("delete-" + topic + ".json");
            Files.writeString(json, "{\"version\":1,\"partitions\":[{\"topic\":\"" + topic + "\",\"partition\":0,\"offset\":7}]}");
            String out = tool("org.apache.kafka.tools.DeleteRecordsCommand", "--bootstrap-server", bootstrap,
                "--offset-json-file", json.toString());
            assertTrue(out.contains("low_watermark: 7"), out);
            assertEquals(7, earliest(admin, tp));
        }
    }

    @Test
    void per_topic_retention_ms_is_enforced() throws Exception {
        String topic = topic("k-retms");
        TopicPartition tp = new TopicPartition(topic, 0);
        try (Admin admin = admin()) {
            admin.createTopics(List.of(new NewTopic(topic, 1, (short) 1).configs(Map.of("retention.ms", "1")))).all().get();
            produce(topic, 5);
            long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
            long start = earliest(admin, tp);
            while (start < 5 && System.nanoTime() < deadline) {
                Thread.sleep(100);
                start = earliest(admin, tp);
            }
            assertEquals(5, start, "every record is older than retention.ms=1");
            assertEquals("1", describe(admin, topic).get("retention.ms").value());
        }
    }

    // ------------------------------------------------------------------ the real Kafka tools

    /** The classpath of Apache Kafka 4.1.1's tools (benchmarks/kafka-broker, resolved offline when cached). */
    /** (offset, key, value or "<null>") of every record of partition 0, read from the start up to {@code end}. */
    List<String> readAll(String topic, long end) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        TopicPartition tp = new TopicPartition(topic, 0);
        List<String> out = new ArrayList<>();
        try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(p, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
            c.assign(List.of(tp));
            c.seekToBeginning(List.of(tp));
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
            while (c.position(tp) < end && System.nanoTime() < deadline) {
                for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(200))) {
                    String v = r.value() == null ? "<null>" : new String(r.value(), StandardCharsets.UTF_8);
                    out.add(r.offset() + ":" + new String(r.key(), StandardCharsets.UTF_8) + "=" + v);
                }
            }
            assertEquals(end, c.position(tp), "read up to the end");
        }
        return out;
    }

    /**
     * Reads the partition until it holds exactly {@code expected} (leaving out {@code ignored}, a record a pass
     * may or may not have dropped yet), or fails after 30 s with what it held.
     */
    void awaitRecords(String topic, long end, List<String> expected, String ignored) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        List<String> got = readAll(topic, end);
        got.remove(ignored);
        while (!got.equals(expected) && System.nanoTime() < deadline) {
            Thread.sleep(100); // the next compaction pass (compactionScheduleInternal=200) is awaited by reading again
            got = readAll(topic, end);
            got.remove(ignored);
        }
        assertEquals(expected, got);
    }

    /**
     * A compacted topic, written by the Java producer: compaction keeps the latest value per key at
     * its original offset (the consumer reads across the gaps), and a tombstone goes once
     * delete.retention.ms passed after the pass that kept it. The topic asks for small segments,
     * as a Kafka test would to let its cleaner run; here compaction is not bound to segments.
     */
    @Test
    void a_compacted_topic_keeps_the_latest_value_per_key_at_its_offset_and_drops_tombstones() throws Exception {
        String topic = topic("k-compact");
        try (Admin admin = admin()) {
            admin.createTopics(List.of(new NewTopic(topic, 1, (short) 1).configs(Map.of("cleanup.policy", "compact",
                "delete.retention.ms", "0", "min.cleanable.dirty.ratio", "0.01", "segment.bytes", "1048576"))))
                .all().get();
        }
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.LINGER_MS_CONFIG, "10000"); // one batch, sent by flush(): a pass sees all or none
        String[][] writes = {{"a", "a1"}, {"b", "b1"}, {"a", "a2"}, {"c", "c1"}, {"b", null}, {"d", "d1"}, {"e", "e1"}};
        try (KafkaProducer<byte[], byte[]> producer =
                 new KafkaProducer<>(p, new ByteArraySerializer(), new ByteArraySerializer())) {
            List<java.util.concurrent.Future<org.apache.kafka.clients.producer.RecordMetadata>> sent = new ArrayList<>();
            for (String[] w : writes) {
                byte[] v = w[1] == null ? null : w[1].getBytes(StandardCharsets.UTF_8);
                sent.add(producer.send(new ProducerRecord<>(topic, 0, w[0].getBytes(StandardCharsets.UTF_8), v)));
            }
            producer.flush();
            for (int i = 0; i < writes.length; i++) {
                assertEquals(i, sent.get(i).get().offset());
            }
            // The older values go, each key's latest stays at its offset; the tombstone stays until
            // delete.retention.ms after the pass that kept it (0 here: a later pass may already have dropped it).
            awaitRecords(topic, 7, List.of("2:a=a2", "3:c=c1", "5:d=d1", "6:e=e1"), "4:b=<null>");
            // A later pass (a new record makes the topic dirty again) drops the tombstone.
            java.util.concurrent.Future<org.apache.kafka.clients.producer.RecordMetadata> f = producer.send(
                new ProducerRecord<>(topic, 0, "f".getBytes(StandardCharsets.UTF_8), "f1".getBytes(StandardCharsets.UTF_8)));
            producer.flush();
            assertEquals(7, f.get().offset());
            awaitRecords(topic, 8, List.of("2:a=a2", "3:c=c1", "5:d=d1", "6:e=e1", "7:f=f1"), null);
        }
        try (Admin admin = admin()) {
            TopicPartition tp = new TopicPartition(topic, 0);
            assertEquals(8, admin.listOffsets(Map.of(tp, OffsetSpec.latest())).partitionResult(tp).get().offset(),
                "offsets unchanged: the end stays where the producer left it");
        }
    }

    static String tool(String mainClass, String... args) throws Exception {
        List<String> command = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
            "-cp", ReferenceClasspath.of("kafka-broker"), mainClass));
        command.addAll(List.of(args));
        return ReferenceClasspath.run(command, Duration.ofSeconds(90));
    }
}
