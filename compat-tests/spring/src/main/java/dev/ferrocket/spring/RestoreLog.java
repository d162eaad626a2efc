package dev.ferrocket.spring;

import java.util.Map;
import java.util.TreeMap;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.streams.processor.StateRestoreListener;
import org.springframework.stereotype.Component;

/** Kafka Streams' restore events: how many records each state store got back from its changelog. */
@Component
public class RestoreLog implements StateRestoreListener {
    private final Map<String, Long> restored = new TreeMap<>();

    @Override
    public void onRestoreStart(TopicPartition partition, String store, long startOffset, long endOffset) {
    }

    @Override
    public void onBatchRestored(TopicPartition partition, String store, long batchEndOffset, long numRestored) {
    }

    @Override
    public synchronized void onRestoreEnd(TopicPartition partition, String store, long totalRestored) {
        restored.merge(store, totalRestored, Long::sum);
    }

    /** Records restored per store since this app started (a store absent: no restore ended). */
    public synchronized Map<String, Long> restored() {
        return new TreeMap<>(restored);
    }
}
