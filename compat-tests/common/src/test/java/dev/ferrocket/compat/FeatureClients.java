package dev.ferrocket.compat;

import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.stream.Collectors;
import org.apache.rocketmq.client.consumer.DefaultMQPullConsumer;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.PullResult;
import org.apache.rocketmq.client.consumer.PullStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerOrderly;
import org.apache.rocketmq.client.consumer.rebalance.AllocateMessageQueueAveragely;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;

/**
 * Official clients and small client-side helpers for the feature tests (ordered consumption,
 * delays, retries, admin, multi-master) that {@link Clients} does not provide.
 */
public final class FeatureClients {
    private FeatureClients() {
    }

    /** A producer with its own group and instance whose route refresh runs every {@code pollMillis}. */
    public static DefaultMQProducer producer(String namesrvAddr, String label, int pollMillis) throws Exception {
        Compat.init();
        DefaultMQProducer p = new DefaultMQProducer(Compat.unique("pg-" + label), new RecordingRpcHook("producer " + label));
        p.setNamesrvAddr(namesrvAddr);
        p.setInstanceName(Compat.unique("producer-" + label));
        p.setPollNameServerInterval(pollMillis);
        p.start();
        return p;
    }

    /** An orderly push consumer (clustering, from the first offset, one message per call), not yet started. */
    public static DefaultMQPushConsumer orderly(String namesrvAddr, String group, String label, String topic,
                                                String subExpression, MessageListenerOrderly listener) throws Exception {
        Compat.init();
        DefaultMQPushConsumer c = new DefaultMQPushConsumer(group, new RecordingRpcHook("orderly " + label),
            new AllocateMessageQueueAveragely());
        c.setNamesrvAddr(namesrvAddr);
        c.setInstanceName(Compat.unique("orderly-" + label));
        c.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        c.subscribe(topic, subExpression);
        c.registerMessageListener(listener);
        return c;
    }

    /** The client id the consumer's MQClientInstance registers with (started consumers only). */
    public static String clientId(DefaultMQPushConsumer c) {
        return c.getDefaultMQPushConsumerImpl().getmQClientFactory().getClientId();
    }

    public static String clientId(DefaultMQProducer p) {
        return p.getDefaultMQProducerImpl().getmQClientFactory().getClientId();
    }

    /** Sends the consumer's heartbeat to all brokers it knows now (what the periodic task does). */
    public static void heartbeat(DefaultMQPushConsumer c) {
        c.getDefaultMQPushConsumerImpl().getmQClientFactory().sendHeartbeatToAllBrokerWithLock();
    }

    /** Sends the producer's heartbeat to all brokers it knows now (what the periodic task does every 30 s). */
    public static void heartbeat(DefaultMQProducer p) {
        p.getDefaultMQProducerImpl().getmQClientFactory().sendHeartbeatToAllBrokerWithLock();
    }

    /**
     * Commits the consumer's offsets to the broker now (what its periodic task does every 5 s, first
     * 10 s after start; pulls carry them too, but a pull may be held by the broker for 15 s).
     */
    public static void persistOffsets(DefaultMQPushConsumer c) {
        c.getDefaultMQPushConsumerImpl().persistConsumerOffset();
    }

    /** Wakes the consumer's rebalance service now instead of at its next 20 s tick. */
    public static void rebalanceNow(DefaultMQPushConsumer c) {
        c.getDefaultMQPushConsumerImpl().getmQClientFactory().rebalanceImmediately();
    }

    /** Queue ids (per broker name) a push consumer holds for {@code topic}, as "broker:queue" strings. */
    public static Set<String> held(DefaultMQPushConsumer c, String topic) {
        return Clients.allocated(c, topic).stream().map(mq -> mq.getBrokerName() + ":" + mq.getQueueId())
            .collect(Collectors.toCollection(TreeSet::new));
    }

    /**
     * Queues an orderly consumer holds for {@code topic} and has locked on the broker (the lock it
     * needs before consuming), as "broker:queue" strings.
     */
    public static Set<String> lockedQueues(DefaultMQPushConsumer c, String topic) {
        Set<String> mine = new TreeSet<>();
        c.getDefaultMQPushConsumerImpl().getRebalanceImpl().getProcessQueueTable().forEach((mq, pq) -> {
            if (mq.getTopic().equals(topic) && !pq.isDropped() && pq.isLocked() && !pq.isLockExpired()) {
                mine.add(mq.getBrokerName() + ":" + mq.getQueueId());
            }
        });
        return mine;
    }

    /** Fails unless the send answered SEND_OK; returns the result. */
    public static SendResult ok(SendResult r, String what) {
        if (r.getSendStatus() != SendStatus.SEND_OK) {
            throw new AssertionError(what + ": " + r);
        }
        return r;
    }

    /** Every message of {@code mq}, pulled from offset 0 until the end (no new message). */
    public static List<MessageExt> readQueue(DefaultMQPullConsumer reader, MessageQueue mq) throws Exception {
        List<MessageExt> out = new CopyOnWriteArrayList<>();
        long offset = 0;
        while (true) {
            PullResult r = reader.pull(mq, "*", offset, 32);
            if (r.getPullStatus() != PullStatus.FOUND) {
                return out;
            }
            out.addAll(r.getMsgFoundList());
            offset = r.getNextBeginOffset();
        }
    }

    /** Every message of every read queue of {@code topic}. */
    public static List<MessageExt> readTopic(DefaultMQPullConsumer reader, String topic) throws Exception {
        List<MessageExt> out = new CopyOnWriteArrayList<>();
        Set<MessageQueue> queues = new HashSet<>(reader.fetchSubscribeMessageQueues(topic));
        for (MessageQueue mq : queues) {
            out.addAll(readQueue(reader, mq));
        }
        return out;
    }
}
