package dev.ferrocket.spring;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.stereotype.Component;

/**
 * Reads the output topic with a read_committed {@code @KafkaListener} (isolation level from
 * {@code spring.kafka.consumer.isolation-level}; Boot runs it inside Kafka transactions since a
 * KafkaTransactionManager exists) and keeps every count update per word, in arrival order.
 */
@Component
public class CountView {
    private final Map<String, List<Long>> updates = new TreeMap<>();

    @KafkaListener(id = "wordcount-view", topics = "${wordcount.output-topic}")
    void onCount(ConsumerRecord<String, Long> record) {
        synchronized (updates) {
            updates.computeIfAbsent(record.key(), k -> new ArrayList<>()).add(record.value());
        }
    }

    /** A copy of the updates seen so far: word → counts in the order they arrived. */
    public Map<String, List<Long>> updates() {
        synchronized (updates) {
            Map<String, List<Long>> copy = new TreeMap<>();
            updates.forEach((word, counts) -> copy.put(word, List.copyOf(counts)));
            return copy;
        }
    }
}
