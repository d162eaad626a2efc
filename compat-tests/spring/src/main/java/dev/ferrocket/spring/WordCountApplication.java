package dev.ferrocket.spring;

import java.util.Arrays;
import java.util.Locale;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.context.annotation.Bean;
import org.springframework.kafka.annotation.EnableKafkaStreams;
import org.springframework.kafka.config.StreamsBuilderFactoryBeanConfigurer;
import org.springframework.kafka.config.TopicBuilder;

/**
 * A Spring Boot word count: lines come in on {@code wordcount.input-topic} (sent by {@link LineSender}
 * in Kafka transactions), Kafka Streams counts the words in a state store ({@value #STORE}, backed by
 * a compacted changelog topic) and writes each new count to {@code wordcount.output-topic}, where
 * {@link CountView}'s read_committed {@code @KafkaListener} collects them. The guarantee
 * ({@code exactly_once_v2}) and every client setting come from {@code spring.kafka.*} properties.
 */
@SpringBootApplication
@EnableKafkaStreams
public class WordCountApplication {
    /** The state store holding the counts (its changelog: {@code <application-id>-word-counts-changelog}). */
    public static final String STORE = "word-counts";

    public static void main(String[] args) {
        SpringApplication.run(WordCountApplication.class, args);
    }

    /** Created by Boot's KafkaAdmin at startup (kept when it exists). */
    @Bean
    NewTopic lines(@Value("${wordcount.input-topic}") String topic, @Value("${wordcount.partitions}") int partitions) {
        return TopicBuilder.name(topic).partitions(partitions).replicas(1).build();
    }

    @Bean
    NewTopic wordCounts(@Value("${wordcount.output-topic}") String topic,
                        @Value("${wordcount.partitions}") int partitions) {
        return TopicBuilder.name(topic).partitions(partitions).replicas(1).build();
    }

    /** The topology, on the StreamsBuilder of spring-kafka's StreamsBuilderFactoryBean. */
    @Bean
    KStream<String, String> wordCount(StreamsBuilder builder, @Value("${wordcount.input-topic}") String in,
                                      @Value("${wordcount.output-topic}") String out) {
        KStream<String, String> lines = builder.stream(in, Consumed.with(Serdes.String(), Serdes.String()));
        lines.flatMapValues(line -> Arrays.asList(line.toLowerCase(Locale.ROOT).split("\\W+")))
            .filter((key, word) -> !word.isEmpty())
            .groupBy((key, word) -> word, Grouped.with(Serdes.String(), Serdes.String()))
            .count(Materialized.as(STORE))
            .toStream()
            .to(out, Produced.with(Serdes.String(), Serdes.Long()));
        return lines;
    }

    /**
     * Leave the group on close (Streams removes its static members, {@code group.instance.id}, with
     * the admin client), so the next start rebalances at once; record restores.
     */
    @Bean
    StreamsBuilderFactoryBeanConfigurer streamsLifecycle(RestoreLog restores) {
        return factory -> {
            factory.setLeaveGroupOnClose(true);
            factory.setStateRestoreListener(restores);
        };
    }
}
