package dev.ferrocket.compat;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ExecutionException;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.InvalidReplicationFactorException;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.rocketmq.client.consumer.DefaultMQPullConsumer;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;
import org.junit.jupiter.api.Test;

/**
 * The Kafka front end judged by the official Kafka Java client of the module's era (4.x beside the
 * RocketMQ 5.x client, 3.9 beside 4.9): produce with every compression codec, idempotent by default,
 * keys and headers (duplicates, binary, null) kept exactly; consumer groups with committed offsets
 * and a two-member rebalance; admin calls; and the same messages read by the official RocketMQ
 * client, and back. Transactions: {@link KafkaTransactionsTest}.
 */
class KafkaClientsTest extends KafkaBrokerTest {
    private final Generation gen = Generation.current();

    KafkaClientsTest() {
        super("kafka", Map.of());
    }

    void report(String format, Object... args) {
        System.out.printf("[compat %s kafka] %s%n", gen.tag(), String.format(format, args));
    }

    KafkaProducer<byte[], byte[]> producer(String compression) {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.COMPRESSION_TYPE_CONFIG, compression);
        p.put(ProducerConfig.LINGER_MS_CONFIG, "5");
        p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "30000");
        p.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, "10000");
        return new KafkaProducer<>(p, new ByteArraySerializer(), new ByteArraySerializer());
    }

    KafkaConsumer<byte[], byte[]> consumer(String group) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, "10000");
        p.put(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, "500");
        return new KafkaConsumer<>(p, new ByteArrayDeserializer(), new ByteArrayDeserializer());
    }

    static byte[] utf8(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    void createTopic(String topic, int partitions) throws Exception {
        try (Admin admin = admin()) {
            admin.createTopics(List.of(new NewTopic(topic, partitions, (short) 1))).all().get();
        }
    }

    /** Polls until {@code n} records came (or fails after {@code max}). */
    static List<ConsumerRecord<byte[], byte[]>> pollUntil(KafkaConsumer<byte[], byte[]> c, int n, Duration max) {
        List<ConsumerRecord<byte[], byte[]>> got = new ArrayList<>();
        long deadline = System.nanoTime() + max.toNanos();
        while (got.size() < n && System.nanoTime() < deadline) {
            c.poll(Duration.ofMillis(200)).forEach(got::add);
        }
        assertEquals(n, got.size(), "records consumed within " + max);
        return got;
    }

    @Test
    void every_compression_round_trips_keys_headers_and_offsets() throws Exception {
        String topic = Compat.unique("k-codecs").replace('%', '-');
        createTopic(topic, 2);
        List<String> codecs = List.of("none", "gzip", "snappy", "lz4", "zstd");
        Map<String, RecordMetadata> sent = new TreeMap<>();
        for (String codec : codecs) {
            try (KafkaProducer<byte[], byte[]> p = producer(codec)) {
                for (int i = 0; i < 20; i++) {
                    String id = codec + "-" + i;
                    List<Header> headers = List.of(new RecordHeader("h", utf8("1")), new RecordHeader("h", utf8("2")),
                        new RecordHeader("bin", new byte[] {0, (byte) 0xff}), new RecordHeader("nul", null));
                    byte[] key = i % 3 == 0 ? null : i % 3 == 1 ? utf8("key-" + id) : new byte[] {1, 0, (byte) i};
                    sent.put(id, p.send(new ProducerRecord<>(topic, i % 2, key, utf8("value " + id), headers)).get());
                }
            }
        }
        for (int q = 0; q < 2; q++) {
            int partition = q;
            List<Long> offsets = sent.values().stream().filter(m -> m.partition() == partition).map(RecordMetadata::offset)
                .sorted().toList();
            for (int i = 0; i < offsets.size(); i++) {
                assertEquals((long) i, offsets.get(i), "partition " + q + " offsets are dense from 0");
            }
        }
        try (KafkaConsumer<byte[], byte[]> c = consumer(Compat.unique("k-codecs-g"))) {
            c.subscribe(List.of(topic));
            List<ConsumerRecord<byte[], byte[]>> got = pollUntil(c, sent.size(), Duration.ofSeconds(60));
            Set<String> seen = new HashSet<>();
            for (ConsumerRecord<byte[], byte[]> r : got) {
                String id = new String(r.value(), StandardCharsets.UTF_8).substring("value ".length());
                assertTrue(seen.add(id), "no record twice: " + id);
                RecordMetadata m = sent.get(id);
                assertEquals(m.partition(), r.partition());
                assertEquals(m.offset(), r.offset());
                int i = Integer.parseInt(id.substring(id.indexOf('-') + 1));
                byte[] key = i % 3 == 0 ? null : i % 3 == 1 ? utf8("key-" + id) : new byte[] {1, 0, (byte) i};
                assertArrayEquals(key, r.key(), "key of " + id);
                Header[] h = r.headers().toArray();
                assertEquals(4, h.length, "headers of " + id);
                assertEquals("h", h[0].key());
                assertArrayEquals(utf8("1"), h[0].value());
                assertEquals("h", h[1].key());
                assertArrayEquals(utf8("2"), h[1].value());
                assertArrayEquals(new byte[] {0, (byte) 0xff}, h[2].value());
                assertNull(h[3].value());
            }
            report("%d records in %d codecs consumed with keys and duplicate headers intact", got.size(), codecs.size());
        }
    }

    /**
     * Fetches hand records out compressed the way they were produced: every byte the consumer
     * received from the broker (its incoming-byte-total, metadata and offsets included) stays far
     * below the values' size for compressible records (before: every fetch re-encoded them
     * uncompressed). Its bytes-consumed-total counts records inflated, so it cannot tell.
     */
    @Test
    void fetched_batches_come_compressed_as_they_were_produced() throws Exception {
        for (String codec : List.of("lz4", "zstd", "gzip", "snappy")) {
            String topic = Compat.unique("k-packed-" + codec).replace('%', '-');
            createTopic(topic, 1);
            int n = 200;
            byte[] value = utf8("compressible ".repeat(80));
            try (KafkaProducer<byte[], byte[]> p = producer(codec)) {
                List<java.util.concurrent.Future<RecordMetadata>> acks = new ArrayList<>();
                for (int i = 0; i < n; i++) {
                    acks.add(p.send(new ProducerRecord<>(topic, 0, null, value)));
                }
                for (java.util.concurrent.Future<RecordMetadata> a : acks) {
                    a.get();
                }
            }
            try (KafkaConsumer<byte[], byte[]> c = consumer(Compat.unique("k-packed-g"))) {
                c.assign(List.of(new TopicPartition(topic, 0)));
                c.seekToBeginning(List.of(new TopicPartition(topic, 0)));
                List<ConsumerRecord<byte[], byte[]>> got = pollUntil(c, n, Duration.ofSeconds(30));
                got.forEach(r -> assertArrayEquals(value, r.value()));
                double fetched = c.metrics().entrySet().stream()
                    .filter(e -> e.getKey().name().equals("incoming-byte-total") && e.getKey().group().equals("consumer-metrics"))
                    .mapToDouble(e -> ((Number) e.getValue().metricValue()).doubleValue()).sum();
                long values = (long) n * value.length;
                assertTrue(fetched > 0 && fetched < values / 4.0,
                    codec + ": fetched " + fetched + " bytes for " + values + " bytes of values");
                report("%s: %d records of %d value bytes fetched as %.0f bytes", codec, n, values, fetched);
            }
        }
    }

    @Test
    void kafka_records_reach_rocketmq_consumers_and_rocketmq_messages_reach_kafka() throws Exception {
        String topic = Compat.unique("k-cross").replace('%', '-');
        createTopic(topic, 1);
        try (KafkaProducer<byte[], byte[]> p = producer("none")) {
            List<Header> headers = List.of(new RecordHeader("TAGS", utf8("TagK")), new RecordHeader("color", utf8("red")));
            p.send(new ProducerRecord<>(topic, 0, utf8("order-7"), utf8("from kafka"), headers)).get();
        }
        DefaultMQPullConsumer reader = Clients.pull(env.namesrvAddr(), Compat.unique("k-cross-reader"));
        try {
            List<MessageExt> got = Wait.until("the Kafka record, read by the RocketMQ client", Duration.ofSeconds(20),
                () -> FeatureClients.readTopic(reader, topic), l -> !l.isEmpty());
            MessageExt m = got.get(0);
            assertEquals("from kafka", new String(m.getBody(), StandardCharsets.UTF_8));
            assertEquals("order-7", m.getKeys());
            assertEquals("TagK", m.getTags());
            assertEquals("red", m.getUserProperty("color"));
        } finally {
            Clients.shutdownInBackground("kafka cross reader", reader::shutdown);
        }

        DefaultMQProducer rp = Clients.producer(env.namesrvAddr());
        try {
            Message m = Clients.message(topic, "TagR", "rkey-1", "x".repeat(8000));
            m.putUserProperty("size", "big");
            SendResult r = rp.send(m);
            assertEquals(SendStatus.SEND_OK, r.getSendStatus());
        } finally {
            Clients.shutdownInBackground("kafka cross producer", rp::shutdown);
        }
        try (KafkaConsumer<byte[], byte[]> c = consumer(Compat.unique("k-cross-g"))) {
            c.assign(List.of(new TopicPartition(topic, 0)));
            c.seek(new TopicPartition(topic, 0), 1);
            ConsumerRecord<byte[], byte[]> r = pollUntil(c, 1, Duration.ofSeconds(30)).get(0);
            assertEquals("x".repeat(8000), new String(r.value(), StandardCharsets.UTF_8),
                "a body the RocketMQ client compressed comes back inflated");
            assertArrayEquals(utf8("rkey-1"), r.key());
            assertArrayEquals(utf8("TagR"), r.headers().lastHeader("TAGS").value());
            assertArrayEquals(utf8("big"), r.headers().lastHeader("size").value());
            assertNull(r.headers().lastHeader("UNIQ_KEY"), "system properties are not headers");
        }
        report("Kafka -> RocketMQ and RocketMQ -> Kafka: body, key, tag and properties carried over");
    }

    @Test
    void committed_offsets_survive_a_restart_and_two_members_share_the_partitions() throws Exception {
        String topic = Compat.unique("k-groups").replace('%', '-');
        createTopic(topic, 4);
        String group = Compat.unique("k-groups-g");
        try (KafkaProducer<byte[], byte[]> p = producer("lz4")) {
            for (int i = 0; i < 40; i++) {
                p.send(new ProducerRecord<>(topic, i % 4, null, utf8("a" + i)));
            }
            p.flush();
        }
        try (KafkaConsumer<byte[], byte[]> c = consumer(group)) {
            c.subscribe(List.of(topic));
            pollUntil(c, 40, Duration.ofSeconds(60));
            Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
            for (int q = 0; q < 4; q++) {
                offsets.put(new TopicPartition(topic, q), new OffsetAndMetadata(10, "checkpoint-" + q));
            }
            c.commitSync(offsets);
        }
        assertCommitted(group, 10);
        // The same offsets through RocketMQ's admin (what mqadmin consumerProgress shows).
        var stats = Wait.until("the Kafka group in RocketMQ's consume stats", Duration.ofSeconds(20),
            () -> env.admin().examineConsumeStats(group), st -> st.getOffsetTable().size() == 4);
        stats.getOffsetTable().values().forEach(w -> {
            assertEquals(10L, w.getConsumerOffset(), "consumer offset as RocketMQ sees it");
            assertEquals(10L, w.getBrokerOffset());
        });
        assertEquals(0L, stats.computeTotalDiff(), "no lag");
        // Committed offsets survive a restart of the broker.
        assertEquals(0, env.stopBroker(), "clean stop");
        env.startBroker();
        assertCommitted(group, 10);
        try (KafkaProducer<byte[], byte[]> p = producer("gzip")) {
            for (int i = 0; i < 40; i++) {
                p.send(new ProducerRecord<>(topic, i % 4, null, utf8("b" + i)));
            }
            p.flush();
        }
        KafkaConsumer<byte[], byte[]> c1 = consumer(group);
        KafkaConsumer<byte[], byte[]> c2 = consumer(group);
        try {
            c1.subscribe(List.of(topic));
            c2.subscribe(List.of(topic));
            List<String> values = new ArrayList<>();
            long deadline = System.nanoTime() + Duration.ofSeconds(90).toNanos();
            while ((values.size() < 40 || c1.assignment().size() + c2.assignment().size() < 4
                    || c1.assignment().isEmpty() || c2.assignment().isEmpty()) && System.nanoTime() < deadline) {
                for (KafkaConsumer<byte[], byte[]> c : List.of(c1, c2)) {
                    c.poll(Duration.ofMillis(100)).forEach(r -> values.add(new String(r.value(), StandardCharsets.UTF_8)));
                }
            }
            assertEquals(2, c1.assignment().size(), "partitions of member 1: " + c1.assignment());
            assertEquals(2, c2.assignment().size(), "partitions of member 2: " + c2.assignment());
            assertTrue(values.stream().allMatch(v -> v.startsWith("b")), "resumed after the committed offsets: " + values);
            assertEquals(40, new HashSet<>(values).size(), "each new record once: " + values);
            try (Admin admin = admin()) {
                var described = admin.describeConsumerGroups(List.of(group)).all().get().get(group);
                assertEquals("STABLE", described.state().toString().toUpperCase(java.util.Locale.ROOT));
                assertEquals(2, described.members().size(), described.toString());
                described.members().forEach(m -> assertEquals(2, m.assignment().topicPartitions().size(), m.toString()));
                assertTrue(admin.listConsumerGroups().all().get().stream().anyMatch(g -> g.groupId().equals(group)),
                    "listConsumerGroups names the group");
            }
            report("group resumed at the offsets committed before a broker restart; two members got 2 + 2 partitions");
        } finally {
            c1.close(Duration.ofSeconds(5));
            c2.close(Duration.ofSeconds(5));
        }
        try (Admin admin = admin()) {
            Wait.until("the group Empty after both members left", Duration.ofSeconds(20),
                () -> admin.describeConsumerGroups(List.of(group)).all().get().get(group).state().toString(),
                st -> st.equalsIgnoreCase("EMPTY"));
            admin.deleteConsumerGroups(List.of(group)).all().get();
            assertTrue(admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get().isEmpty(),
                "a deleted group has no committed offsets");
        }
    }

    /** Offsets and metadata of `group`, read by the AdminClient: `offset` and "checkpoint-<partition>" each. */
    void assertCommitted(String group, long offset) throws Exception {
        try (Admin admin = admin()) {
            Map<TopicPartition, OffsetAndMetadata> committed =
                admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get();
            assertEquals(4, committed.size());
            committed.forEach((tp, o) -> {
                assertEquals(offset, o.offset(), "next offset committed on " + tp);
                assertEquals("checkpoint-" + tp.partition(), o.metadata(), "commit metadata of " + tp);
            });
        }
    }

    @Test
    void admin_describes_the_node_and_manages_topics() throws Exception {
        String topic = Compat.unique("k-admin").replace('%', '-');
        try (Admin admin = admin()) {
            Collection<org.apache.kafka.common.Node> nodes = admin.describeCluster().nodes().get();
            assertEquals(1, nodes.size());
            assertEquals(bootstrap, nodes.iterator().next().host() + ":" + nodes.iterator().next().port());
            admin.createTopics(List.of(new NewTopic(topic, 3, (short) 1))).all().get();
            assertEquals(3, admin.describeTopics(List.of(topic)).allTopicNames().get().get(topic).partitions().size());
            assertTrue(admin.listTopics().names().get().contains(topic));
            assertTrue(admin.listTopics().names().get().stream().noneMatch(t -> t.startsWith("rmq_sys_") || t.equals("TBW102")),
                "system topics are hidden");
            ExecutionException e = assertThrows(ExecutionException.class,
                () -> admin.createTopics(List.of(new NewTopic(topic + "-rf3", 1, (short) 3))).all().get());
            assertTrue(e.getCause() instanceof InvalidReplicationFactorException, e.toString());
            // A compacted topic (what every Kafka Streams state store's changelog asks for) is kept.
            admin.createTopics(List.of(
                new NewTopic(topic + "-compact", 1, (short) 1).configs(Map.of("cleanup.policy", "compact")))).all().get();
            org.apache.kafka.common.config.ConfigResource compacted = new org.apache.kafka.common.config.ConfigResource(
                org.apache.kafka.common.config.ConfigResource.Type.TOPIC, topic + "-compact");
            assertEquals("compact", admin.describeConfigs(List.of(compacted)).all().get().get(compacted)
                .get("cleanup.policy").value());
            admin.deleteTopics(List.of(topic + "-compact")).all().get();
            admin.deleteTopics(List.of(topic)).all().get();
            Wait.until("the deleted topic gone from listTopics", Duration.ofSeconds(10),
                () -> !admin.listTopics().names().get().contains(topic));
        }
        report("describeCluster, createTopics, describeTopics, listTopics, deleteTopics");
    }

    @Test
    void a_kip848_consumer_fails_fast_with_a_clear_error() throws Exception {
        String topic = Compat.unique("k-848").replace('%', '-');
        createTopic(topic, 1);
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.GROUP_ID_CONFIG, Compat.unique("k-848-g"));
        p.put("group.protocol", "consumer");
        long start = System.nanoTime();
        try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(p, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
            c.subscribe(List.of(topic));
            KafkaException e = assertThrows(KafkaException.class, () -> {
                long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
                while (System.nanoTime() < deadline) {
                    c.poll(Duration.ofMillis(200));
                }
            });
            long ms = (System.nanoTime() - start) / 1_000_000;
            report("a group.protocol=consumer poll failed after %d ms: %s", ms, e);
            assertTrue(ms < 20_000, "failed fast: " + ms + " ms");
            assertTrue(e.toString().contains("ConsumerGroupHeartbeat") || e.toString().contains("group protocol")
                || e.toString().contains("not support"), e.toString());
        }
    }
}
