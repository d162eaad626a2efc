package dev.ferrocket.spring;

import java.util.List;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.kafka.core.KafkaTemplate;
import org.springframework.stereotype.Component;

/** Sends lines of text to the input topic, each batch in one Kafka transaction of the KafkaTemplate. */
@Component
public class LineSender {
    private final KafkaTemplate<String, String> template;
    private final String topic;

    LineSender(KafkaTemplate<String, String> template, @Value("${wordcount.input-topic}") String topic) {
        this.template = template;
        this.topic = topic;
    }

    /** Sends {@code lines} (key = the line) in one transaction and commits it. */
    public void sendCommitted(List<String> lines) {
        template.executeInTransaction(ops -> {
            lines.forEach(line -> ops.send(topic, line, line));
            return null;
        });
    }

    /**
     * Sends {@code lines} in one transaction, flushes them to the broker, and then fails: the
     * template aborts the transaction and this throws {@link Aborted}. Read committed, nobody sees them.
     */
    public void sendAborted(List<String> lines) {
        template.executeInTransaction(ops -> {
            lines.forEach(line -> ops.send(topic, line, line));
            ops.flush();
            throw new Aborted(lines.size());
        });
    }

    /** The failure that made {@link #sendAborted} roll its transaction back. */
    public static final class Aborted extends RuntimeException {
        Aborted(int lines) {
            super("rolled back a transaction of " + lines + " line(s)");
        }
    }
}
