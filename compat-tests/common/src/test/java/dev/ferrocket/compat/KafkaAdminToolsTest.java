package dev.ferrocket.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewPartitions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Test;

/**
 * Issue #28 item 5 judged by the real Apache Kafka 4.1.1 command-line tools (run from the
 * benchmarks/kafka-broker classpath, as {@link KafkaRetentionTest#tool}) and the AdminClient:
 * {@code kafka-topics --alter --partitions} and {@code --describe} (CreatePartitions,
 * DescribeTopicPartitions), {@code --list} without RocketMQ's own topics, {@code kafka-configs}
 * for topics (Kafka's key set with synonyms) and groups, {@code kafka-log-dirs --describe},
 * {@code kafka-consumer-groups --delete-offsets} and {@code --list --type} (ListGroups v5), and a
 * Kafka cluster id.
 */
class KafkaAdminToolsTest extends KafkaBrokerTest {
    KafkaAdminToolsTest() {
        super("kafka-admin-tools", Map.of());
    }

    static String topic(String base) {
        return Compat.unique(base).replace('%', '-');
    }

    static String tool(String mainClass, String... args) throws Exception {
        return KafkaRetentionTest.tool(mainClass, args);
    }

    @Test
    void kafka_topics_alters_partitions_describes_and_lists_only_kafka_topics() throws Exception {
        String topic = topic("adm-grow");
        try (Admin admin = admin()) {
            admin.createTopics(List.of(new NewTopic(topic, 1, (short) 1))).all().get();
            String out = tool("org.apache.kafka.tools.TopicCommand", "--bootstrap-server", bootstrap,
                "--alter", "--topic", topic, "--partitions", "3");
            assertEquals(3, admin.describeTopics(List.of(topic)).allTopicNames().get().get(topic).partitions().size(), out);
            out = tool("org.apache.kafka.tools.TopicCommand", "--bootstrap-server", bootstrap, "--describe", "--topic", topic);
            assertTrue(out.contains("PartitionCount: 3"), out);
            assertTrue(out.contains("Partition: 2"), out);
            // Shrinking is refused, as by Kafka.
            Exception refused = org.junit.jupiter.api.Assertions.assertThrows(Exception.class,
                () -> admin.createPartitions(Map.of(topic, NewPartitions.increaseTo(2))).all().get());
            assertTrue(String.valueOf(refused.getMessage()).contains("would not be an increase"), refused.toString());

            out = tool("org.apache.kafka.tools.TopicCommand", "--bootstrap-server", bootstrap, "--list");
            assertTrue(out.lines().anyMatch(topic::equals), out);
            assertFalse(out.contains("REPLY_TOPIC") || out.contains("RMQ_SYS_") || out.contains("rmq_sys_")
                || out.lines().anyMatch(l -> l.equals("DefaultCluster") || l.equals("TBW102")), out);

            String clusterId = admin.describeCluster().clusterId().get();
            assertEquals(22, clusterId.length(), clusterId);
            assertEquals(16, java.util.Base64.getUrlDecoder().decode(clusterId).length, clusterId);
        }
    }

    @Test
    void kafka_configs_alters_and_describes_topics_and_groups() throws Exception {
        String topic = topic("adm-cfg");
        try (Admin admin = admin()) {
            admin.createTopics(List.of(new NewTopic(topic, 1, (short) 1))).all().get();
        }
        String out = tool("kafka.admin.ConfigCommand", "--bootstrap-server", bootstrap, "--alter",
            "--entity-type", "topics", "--entity-name", topic, "--add-config", "retention.ms=60000");
        assertTrue(out.contains("Completed updating config for topic " + topic), out);
        out = tool("kafka.admin.ConfigCommand", "--bootstrap-server", bootstrap, "--describe", "--all",
            "--entity-type", "topics", "--entity-name", topic);
        assertTrue(out.contains("DYNAMIC_TOPIC_CONFIG:retention.ms=60000"), out);
        for (String key : List.of("compression.type=producer", "unclean.leader.election.enable=false",
            "remote.storage.enable=false", "segment.index.bytes=10485760", "cleanup.policy=delete")) {
            assertTrue(out.contains(key), key + " in " + out);
        }
        out = tool("kafka.admin.ConfigCommand", "--bootstrap-server", bootstrap, "--describe", "--all",
            "--entity-type", "groups", "--entity-name", "adm-some-group");
        assertTrue(out.contains("consumer.session.timeout.ms=45000"), out);
    }

    @Test
    void kafka_log_dirs_describes_the_partitions() throws Exception {
        String topic = topic("adm-logdirs");
        try (Admin admin = admin()) {
            admin.createTopics(List.of(new NewTopic(topic, 2, (short) 1))).all().get();
        }
        String out = tool("org.apache.kafka.tools.LogDirsCommand", "--bootstrap-server", bootstrap, "--describe",
            "--topic-list", topic);
        assertTrue(out.contains("\"partition\":\"" + topic + "-0\""), out);
        assertTrue(out.contains("\"partition\":\"" + topic + "-1\""), out);
        assertTrue(out.contains("commitlog"), out);
    }

    @Test
    void kafka_consumer_groups_deletes_offsets_and_lists_types() throws Exception {
        String topic = topic("adm-offsets");
        String group = Compat.unique("adm-group").replace('%', '-');
        TopicPartition p0 = new TopicPartition(topic, 0);
        TopicPartition p1 = new TopicPartition(topic, 1);
        try (Admin admin = admin()) {
            admin.createTopics(List.of(new NewTopic(topic, 2, (short) 1))).all().get();
            admin.alterConsumerGroupOffsets(group, Map.of(p0, new OffsetAndMetadata(0), p1, new OffsetAndMetadata(0)))
                .all().get();
            String out = tool("org.apache.kafka.tools.consumer.group.ConsumerGroupCommand", "--bootstrap-server",
                bootstrap, "--delete-offsets", "--group", group, "--topic", topic + ":0");
            assertTrue(out.contains("Successful"), out);
            Map<TopicPartition, OffsetAndMetadata> left =
                admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get();
            assertEquals(List.of(p1), left.keySet().stream().filter(tp -> left.get(tp) != null).toList(), left.toString());

            out = tool("org.apache.kafka.tools.consumer.group.ConsumerGroupCommand", "--bootstrap-server",
                bootstrap, "--list", "--type");
            String line = out.lines().filter(l -> l.startsWith(group + " ")).findFirst().orElse("");
            assertTrue(line.toLowerCase(java.util.Locale.ROOT).contains("classic"), out);
        }
    }
}
