package dev.ferrocket.spring;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ferrocket.compat.SpringCompatBroker;
import dev.ferrocket.compat.TestDirs;
import dev.ferrocket.compat.Wait;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.UUID;
import java.util.stream.Stream;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.config.ConfigResource;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.extension.TestWatcher;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.kafka.core.KafkaAdmin;

/**
 * Issue 27's "done when": {@link WordCountApplication}, a Spring Boot 4.0 app with
 * {@code @EnableKafkaStreams} (stateful, {@code exactly_once_v2}), a transactional KafkaTemplate and
 * a read_committed {@code @KafkaListener}, runs unchanged against ferrocket and counts exactly.
 *
 * <p>The broker is a ferrocket this test starts, or with {@code -Dspring.compat.bootstrap=host:port}
 * any running Kafka broker (Apache Kafka for the reference run); names carry a run id, so a broker
 * can serve several runs. The app is started with command-line arguments only (bootstrap servers,
 * state directory, the run's names), as an operator would start it.
 */
class SpringKafkaStreamsTest {
    static final Duration DEADLINE = Duration.ofSeconds(60);
    static final List<String> FIRST = List.of("the quick brown fox", "jumps over the lazy dog", "The dog barks",
        "a fox");
    /** Rolled back: neither Kafka Streams (read_committed under EOS) nor the listener may see it. */
    static final List<String> ABORTED = List.of("fox fox aborted", "the dog");
    static final List<String> SECOND = List.of("the end of the fox");

    static SpringCompatBroker broker;
    static String bootstrap;

    @RegisterExtension
    final TestWatcher logsOnFailure = new TestWatcher() {
        @Override
        public void testFailed(ExtensionContext context, Throwable cause) {
            if (broker != null) {
                System.err.println("[compat] " + context.getDisplayName() + " failed: " + cause + "\n"
                    + broker + "\n" + broker.logTail(80));
            }
        }
    };

    @BeforeAll
    static void startBroker() throws Exception {
        String given = System.getProperty("spring.compat.bootstrap", "").trim();
        if (!given.isEmpty()) {
            bootstrap = given;
            System.out.println("[compat] against the Kafka broker at " + bootstrap + " (-Dspring.compat.bootstrap)");
            return;
        }
        broker = SpringCompatBroker.start("spring-wordcount", Map.of("kafkaGroupInitialRebalanceDelayMs", "0",
            // Compaction passes every 0.5 s (Kafka's cleaner would run on its own schedule).
            "compactionScheduleInternal", "500"));
        bootstrap = broker.bootstrap();
    }

    @AfterAll
    static void stopBroker() throws Exception {
        if (broker != null) {
            int exit = broker.stop();
            assertEquals(0, exit, "ferrocket's exit code on SIGTERM\n" + broker.logTail(40));
            assertEquals(List.of(), broker.errorLines(), "ERROR lines in the ferrocket log of " + broker);
        }
    }

    /** The app, started as {@code java -jar app.jar --spring.kafka.bootstrap-servers=… …} would be. */
    static ConfigurableApplicationContext startApp(String run, Path stateDir) {
        return new SpringApplicationBuilder(WordCountApplication.class).main(WordCountApplication.class).run(
            "--spring.kafka.bootstrap-servers=" + bootstrap,
            "--spring.kafka.streams.application-id=wordcount-" + run,
            "--spring.kafka.streams.state-dir=" + stateDir,
            "--spring.kafka.producer.transaction-id-prefix=wordcount-tx-" + run + "-",
            "--spring.kafka.consumer.group-id=wordcount-view-" + run,
            "--wordcount.input-topic=lines-" + run,
            "--wordcount.output-topic=word-counts-" + run,
            "--spring.main.banner-mode=off",
            "--logging.level.org.apache.kafka=WARN");
    }

    /** Word → the counts Streams must emit for it, in order, when {@code lines} follow {@code before}. */
    static Map<String, List<Long>> updates(List<String> before, List<String> lines) {
        Map<String, Long> count = new HashMap<>();
        words(before).forEach(w -> count.merge(w, 1L, Long::sum));
        Map<String, List<Long>> out = new TreeMap<>();
        words(lines).forEach(w -> out.computeIfAbsent(w, k -> new ArrayList<>()).add(count.merge(w, 1L, Long::sum)));
        return out;
    }

    static List<String> words(List<String> lines) {
        return lines.stream().flatMap(l -> Stream.of(l.toLowerCase(Locale.ROOT).split("\\W+")))
            .filter(w -> !w.isEmpty()).toList();
    }

    @SafeVarargs
    static List<String> sorted(List<String>... lists) {
        return Stream.of(lists).flatMap(List::stream).sorted().toList();
    }

    /** Every value on {@code topic}, sorted, read at this isolation level up to its end offsets. */
    static List<String> inputLines(String topic, String isolation) {
        Map<String, Object> config = Map.of(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap,
            ConsumerConfig.ISOLATION_LEVEL_CONFIG, isolation, ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        try (KafkaConsumer<String, String> c = new KafkaConsumer<>(config, new StringDeserializer(),
                new StringDeserializer())) {
            List<TopicPartition> partitions = c.partitionsFor(topic).stream()
                .map(p -> new TopicPartition(topic, p.partition())).toList();
            c.assign(partitions);
            c.seekToBeginning(partitions);
            // read_committed: the last stable offset; read_uncommitted: the high watermark.
            Map<TopicPartition, Long> end = c.endOffsets(partitions);
            List<String> seen = new ArrayList<>();
            Wait.until(isolation + " reader of " + topic + " to reach " + end, DEADLINE, () -> {
                c.poll(Duration.ofMillis(200)).forEach(r -> seen.add(r.value()));
                return partitions.stream().allMatch(p -> c.position(p) >= end.get(p));
            });
            return seen.stream().sorted().toList();
        }
    }

    Map<String, List<Long>> awaitUpdates(ConfigurableApplicationContext app, Map<String, List<Long>> want) {
        CountView view = app.getBean(CountView.class);
        return Wait.until("the listener to get exactly " + want, DEADLINE, () -> {
            if (broker != null) {
                broker.assertAlive();
            }
            return view.updates();
        }, want::equals);
    }

    @Test
    void a_spring_boot_kafka_streams_app_counts_exactly_once_and_restores_its_wiped_state() throws Exception {
        String run = UUID.randomUUID().toString().substring(0, 8);
        Path stateDir = TestDirs.fresh("spring-streams-state");
        Path appState = stateDir.resolve("wordcount-" + run);

        // 1. Fresh app: a committed batch and an aborted one; each word's counts 1, 2, … once each.
        Map<String, List<Long>> firstUpdates = updates(List.of(), FIRST);
        try (ConfigurableApplicationContext app = startApp(run, stateDir)) {
            LineSender sender = app.getBean(LineSender.class);
            CountView view = app.getBean(CountView.class);
            sender.sendCommitted(FIRST);
            assertThrows(LineSender.Aborted.class, () -> sender.sendAborted(ABORTED));
            // The aborted lines did reach the topic: read_uncommitted sees them, read_committed not.
            assertEquals(sorted(FIRST, ABORTED), inputLines("lines-" + run, "read_uncommitted"));
            assertEquals(sorted(FIRST), inputLines("lines-" + run, "read_committed"));
            awaitUpdates(app, firstUpdates);
            System.out.println("[compat] first run, the listener got " + view.updates());

            // The store's changelog, created by Streams, is compacted.
            try (Admin admin = Admin.create(app.getBean(KafkaAdmin.class).getConfigurationProperties())) {
                ConfigResource changelog = new ConfigResource(ConfigResource.Type.TOPIC,
                    "wordcount-" + run + "-" + WordCountApplication.STORE + "-changelog");
                assertEquals("compact", admin.describeConfigs(List.of(changelog)).all().get().get(changelog)
                    .get("cleanup.policy").value());
            }
            assertTrue(Files.isDirectory(appState), "Streams keeps its local state in " + appState);
            // Closing the context stops the listener after its last batch: nothing more arrived.
            app.close();
            assertEquals(firstUpdates, view.updates());
        }

        // 2. The local state wiped: the restarted app restores the store from the changelog and
        // counts on; the listener (same group) resumes after its committed offsets.
        try (Stream<Path> paths = Files.walk(appState)) {
            for (Path p : paths.sorted(Comparator.reverseOrder()).toList()) {
                Files.delete(p);
            }
        }
        assertFalse(Files.exists(appState));
        Map<String, List<Long>> secondUpdates = updates(FIRST, SECOND);
        try (ConfigurableApplicationContext app = startApp(run, stateDir)) {
            CountView view = app.getBean(CountView.class);
            app.getBean(LineSender.class).sendCommitted(SECOND);
            awaitUpdates(app, secondUpdates);
            System.out.println("[compat] after the wiped restart, the listener got " + view.updates()
                + "; restored " + app.getBean(RestoreLog.class).restored());
            long restored = app.getBean(RestoreLog.class).restored().getOrDefault(WordCountApplication.STORE, 0L);
            // At least the last count of each of the first run's words, at most every update.
            long distinct = firstUpdates.size();
            long all = firstUpdates.values().stream().mapToLong(List::size).sum();
            assertTrue(restored >= distinct && restored <= all,
                "records restored into " + WordCountApplication.STORE + ": " + restored + ", expected "
                    + distinct + ".." + all);
            app.close();
            assertEquals(secondUpdates, view.updates());
        }
    }
}
