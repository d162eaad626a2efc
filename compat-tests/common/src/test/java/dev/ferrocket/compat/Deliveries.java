package dev.ferrocket.compat;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.function.Predicate;
import java.util.stream.Collectors;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.common.message.MessageClientExt;
import org.apache.rocketmq.common.message.MessageExt;

/** Everything consumers received, one {@link Delivery} per message per delivery (duplicates kept). */
public final class Deliveries {
    /** One message as a consumer saw it. */
    public record Delivery(String consumer, String topic, String key, String tags, String body, int queueId,
                           long queueOffset, String msgId, String offsetMsgId, int reconsumeTimes, long storeTimestamp,
                           Map<String, String> properties) {
        static Delivery of(String consumer, MessageExt m) {
            String offsetMsgId = m instanceof MessageClientExt c ? c.getOffsetMsgId() : m.getMsgId();
            return new Delivery(consumer, m.getTopic(), m.getKeys(), m.getTags(),
                m.getBody() == null ? null : new String(m.getBody(), StandardCharsets.UTF_8), m.getQueueId(),
                m.getQueueOffset(), m.getMsgId(), offsetMsgId, m.getReconsumeTimes(), m.getStoreTimestamp(),
                m.getProperties() == null ? Map.of() : new TreeMap<>(m.getProperties()));
        }
    }

    /** What a test sent: key (unique per test), tags and body. */
    public record Sent(String topic, String key, String tags, String body) {
    }

    private final ConcurrentLinkedQueue<Delivery> all = new ConcurrentLinkedQueue<>();

    /** A listener that records every message under {@code consumer} and acknowledges it. */
    public MessageListenerConcurrently listener(String consumer) {
        return (msgs, context) -> {
            for (MessageExt m : msgs) {
                all.add(Delivery.of(consumer, m));
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        };
    }

    public void add(String consumer, Collection<MessageExt> msgs) {
        for (MessageExt m : msgs) {
            all.add(Delivery.of(consumer, m));
        }
    }

    public List<Delivery> all() {
        return new ArrayList<>(all);
    }

    public List<Delivery> of(String consumer) {
        return all.stream().filter(d -> d.consumer().equals(consumer)).toList();
    }

    public List<Delivery> matching(Predicate<Delivery> p) {
        return all.stream().filter(p).toList();
    }

    public Set<String> keys() {
        return all.stream().map(Delivery::key).collect(Collectors.toCollection(TreeSet::new));
    }

    public Set<String> keysOf(String consumer) {
        return of(consumer).stream().map(Delivery::key).collect(Collectors.toCollection(TreeSet::new));
    }

    public int size() {
        return all.size();
    }

    /** Whether every key of {@code sent} has been delivered (to anyone, or to {@code consumer} if not null). */
    public boolean hasAll(Collection<Sent> sent, String consumer) {
        Set<String> got = consumer == null ? keys() : keysOf(consumer);
        return sent.stream().allMatch(s -> got.contains(s.key()));
    }

    /**
     * Asserts that {@code deliveries} hold exactly the messages of {@code sent} (by key), each with the
     * topic, tags and body it was sent with; returns the number of duplicate deliveries.
     */
    public static int assertExactly(String what, Collection<Sent> sent, List<Delivery> deliveries) {
        Map<String, Sent> byKey = new TreeMap<>();
        sent.forEach(s -> byKey.put(s.key(), s));
        Set<String> got = deliveries.stream().map(Delivery::key).collect(Collectors.toCollection(TreeSet::new));
        Set<String> missing = new TreeSet<>(byKey.keySet());
        missing.removeAll(got);
        Set<String> unexpected = new TreeSet<>(got);
        unexpected.removeAll(byKey.keySet());
        List<String> wrong = new ArrayList<>();
        for (Delivery d : deliveries) {
            Sent s = byKey.get(d.key());
            if (s != null && !(s.topic().equals(d.topic()) && java.util.Objects.equals(s.tags(), d.tags())
                && s.body().equals(d.body()))) {
                wrong.add(d.key() + ": sent " + s + ", received " + d);
            }
        }
        StringBuilder problems = new StringBuilder();
        if (!missing.isEmpty()) {
            problems.append(missing.size()).append(" of ").append(byKey.size()).append(" sent messages never delivered: ")
                .append(abbreviate(missing)).append(". ");
        }
        if (!unexpected.isEmpty()) {
            problems.append(unexpected.size()).append(" delivered messages that were not expected: ")
                .append(abbreviate(unexpected)).append(". ");
        }
        if (!wrong.isEmpty()) {
            problems.append(wrong.size()).append(" deliveries differ from what was sent: ")
                .append(abbreviate(wrong)).append(". ");
        }
        if (problems.length() > 0) {
            throw new AssertionError(what + ": " + problems);
        }
        return deliveries.size() - got.size();
    }

    static String abbreviate(Collection<?> items) {
        List<?> list = new ArrayList<>(items);
        return list.size() <= 20 ? list.toString() : list.subList(0, 20) + " … (" + list.size() + " in all)";
    }
}
