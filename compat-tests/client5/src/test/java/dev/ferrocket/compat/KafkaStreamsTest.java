package dev.ferrocket.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.LongDeserializer;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Kafka Streams 4.1 (issue 27): a stateful word count (a state store whose changelog is a
 * compacted topic, a repartition topic Streams purges with DeleteRecords) under
 * {@code at_least_once} and {@code exactly_once_v2} (transactions, read_committed), then a restart
 * with the local state wiped, restored from the changelog. The counts read back with a
 * read_committed consumer must be exactly what the input implies.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@ExtendWith(BrokerLogsOnFailure.class)
class KafkaStreamsTest {
    BrokerDeployment env;
    String bootstrap;

    @BeforeAll
    void setUp() throws Exception {
        int port = Ports.free();
        env = BrokerDeployment.start(BrokerDeployment.Mode.STANDALONE, "kafka-streams",
            Map.of("kafkaListenPort", Integer.toString(port), "kafkaAdvertisedAddress", "127.0.0.1:" + port,
                "kafkaGroupInitialRebalanceDelayMs", "0", "compactionScheduleInternal", "500"));
        bootstrap = "127.0.0.1:" + port;
    }

    @AfterAll
    void tearDown() {
        if (env != null) {
            env.close();
        }
    }

    KafkaStreams start(String app, String in, String out, String guarantee, Path state) {
        StreamsBuilder b = new StreamsBuilder();
        b.stream(in, Consumed.with(Serdes.String(), Serdes.String()))
            .flatMapValues(line -> Arrays.asList(line.toLowerCase().split(" ")))
            .groupBy((k, word) -> word, Grouped.with(Serdes.String(), Serdes.String()))
            .count(Materialized.as("counts"))
            .toStream()
            .to(out, Produced.with(Serdes.String(), Serdes.Long()));
        Properties p = new Properties();
        p.put(StreamsConfig.APPLICATION_ID_CONFIG, app);
        p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, guarantee);
        p.put(StreamsConfig.STATE_DIR_CONFIG, state.toString());
        p.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, "200");
        p.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, "0");
        p.put(StreamsConfig.consumerPrefix(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG), "earliest");
        // Streams does not leave its group on close (as against Apache Kafka): the restarted
        // instance waits for the old member's session to end, so keep it short.
        p.put(StreamsConfig.consumerPrefix(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG), "6000");
        p.put(StreamsConfig.consumerPrefix(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG), "1000");
        KafkaStreams s = new KafkaStreams(b.build(), p);
        s.start();
        Wait.until(app + " RUNNING", Duration.ofSeconds(60), s::state, st -> st == KafkaStreams.State.RUNNING);
        return s;
    }

    void send(String topic, List<String> lines) throws Exception {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        try (KafkaProducer<String, String> prod = new KafkaProducer<>(p, new StringSerializer(), new StringSerializer())) {
            for (String line : lines) {
                prod.send(new ProducerRecord<>(topic, line, line)).get();
            }
        }
    }

    /** The last count per word in `out`, read committed, once it equals `expected`. */
    Map<String, Long> counts(String out, Map<String, Long> expected) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.GROUP_ID_CONFIG, Compat.unique("verify"));
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        Map<String, Long> last = new TreeMap<>();
        try (KafkaConsumer<String, Long> c = new KafkaConsumer<>(p, new StringDeserializer(), new LongDeserializer())) {
            c.subscribe(List.of(out));
            return Wait.until("word counts in " + out + " = " + expected, Duration.ofSeconds(60), () -> {
                for (ConsumerRecord<String, Long> r : c.poll(Duration.ofMillis(200))) {
                    last.put(r.key(), r.value());
                }
                return new TreeMap<>(last);
            }, m -> m.equals(expected));
        }
    }

    static Map<String, Long> expected(List<String> lines) {
        Map<String, Long> m = new TreeMap<>();
        for (String line : lines) {
            for (String w : line.toLowerCase().split(" ")) {
                m.merge(w, 1L, Long::sum);
            }
        }
        return m;
    }

    @ParameterizedTest
    @ValueSource(strings = {StreamsConfig.AT_LEAST_ONCE, StreamsConfig.EXACTLY_ONCE_V2})
    void a_stateful_word_count_counts_exactly_and_restores_its_wiped_state(String guarantee) throws Exception {
        String app = Compat.unique("wordcount");
        String in = Compat.unique("lines");
        String out = Compat.unique("counts");
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, (Object) bootstrap))) {
            admin.createTopics(List.of(new NewTopic(in, 2, (short) 1), new NewTopic(out, 2, (short) 1))).all().get();
        }
        Path state = Files.createTempDirectory("streams-state");
        List<String> first = List.of("the quick brown fox", "jumps over the lazy dog", "The dog barks", "a fox");
        send(in, first);
        KafkaStreams s = start(app, in, out, guarantee, state);
        try {
            counts(out, expected(first));
        } finally {
            s.close(Duration.ofSeconds(30));
        }
        // The changelog Streams created is a compacted topic, kept as such.
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, (Object) bootstrap))) {
            ConfigResource changelog = new ConfigResource(ConfigResource.Type.TOPIC, app + "-counts-changelog");
            assertEquals("compact", admin.describeConfigs(List.of(changelog)).all().get().get(changelog)
                .get("cleanup.policy").value());
        }
        // Wipe the local state: the store comes back from its changelog, and counting goes on.
        s.cleanUp();
        List<String> second = List.of("the end of the fox");
        send(in, second);
        KafkaStreams again = start(app, in, out, guarantee, state);
        try {
            List<String> all = new java.util.ArrayList<>(first);
            all.addAll(second);
            Map<String, Long> seen = counts(out, expected(all));
            Map<String, Long> want = new HashMap<>(expected(all));
            assertEquals(want, seen);
        } finally {
            again.close(Duration.ofSeconds(30));
        }
    }
}
