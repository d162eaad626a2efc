package dev.ferrocket.compat;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.apache.rocketmq.client.consumer.DefaultLitePullConsumer;
import org.apache.rocketmq.client.consumer.DefaultMQPullConsumer;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.consumer.rebalance.AllocateMessageQueueAveragely;
import org.apache.rocketmq.client.exception.MQBrokerException;
import org.apache.rocketmq.client.impl.MQClientManager;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageQueue;
import org.apache.rocketmq.tools.admin.DefaultMQAdminExt;

/**
 * Official clients for the broker tests: each with its own instance name (so each is its own
 * MQClientInstance with its own client id) and a {@link RecordingRpcHook}, so a failure shows what
 * it asked and what ferrocket answered.
 */
public final class Clients {
    private static final List<Thread> STOPPERS = new CopyOnWriteArrayList<>();

    private Clients() {
    }

    public static DefaultMQProducer producer(String namesrvAddr) throws Exception {
        Compat.init();
        DefaultMQProducer p = new DefaultMQProducer(Compat.unique("pg"), new RecordingRpcHook("producer"));
        p.setNamesrvAddr(namesrvAddr);
        p.setInstanceName(Compat.unique("producer"));
        p.start();
        return p;
    }

    /** A push consumer (clustering, from the first offset, one message per call), not yet started. */
    public static DefaultMQPushConsumer push(String namesrvAddr, String group, String label, String topic,
                                             String subExpression, MessageListenerConcurrently listener)
        throws Exception {
        Compat.init();
        DefaultMQPushConsumer c = new DefaultMQPushConsumer(group, new RecordingRpcHook("push " + label),
            new AllocateMessageQueueAveragely());
        c.setNamesrvAddr(namesrvAddr);
        c.setInstanceName(Compat.unique("push-" + label));
        c.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        c.subscribe(topic, subExpression);
        c.registerMessageListener(listener);
        return c;
    }

    public static DefaultMQPullConsumer pull(String namesrvAddr, String group) throws Exception {
        Compat.init();
        DefaultMQPullConsumer c = new DefaultMQPullConsumer(group, new RecordingRpcHook("pull " + group));
        c.setNamesrvAddr(namesrvAddr);
        c.setInstanceName(Compat.unique("pull"));
        c.start();
        return c;
    }

    /** A lite pull consumer, not yet started. */
    public static DefaultLitePullConsumer litePull(String namesrvAddr, String group, String label) {
        Compat.init();
        DefaultLitePullConsumer c = new DefaultLitePullConsumer(group, new RecordingRpcHook("lite " + label));
        c.setNamesrvAddr(namesrvAddr);
        c.setInstanceName(Compat.unique("lite-" + label));
        return c;
    }

    public static Message message(String topic, String tags, String key, String body) {
        return new Message(topic, tags, key, body.getBytes(StandardCharsets.UTF_8));
    }

    /**
     * The queues a push consumer currently holds for {@code topic} (its rebalance result, not dropped).
     * Only used to wait until a rebalance has settled; what is asserted is what the listener received.
     */
    public static Set<MessageQueue> allocated(DefaultMQPushConsumer c, String topic) {
        Set<MessageQueue> mine = new HashSet<>();
        c.getDefaultMQPushConsumerImpl().getRebalanceImpl().getProcessQueueTable().forEach((mq, pq) -> {
            if (mq.getTopic().equals(topic) && !pq.isDropped()) {
                mine.add(mq);
            }
        });
        return mine;
    }

    /**
     * Sends the consumer's heartbeat (its current subscriptions) to the brokers now.
     *
     * <p>Call after a rebalance has settled. A rebalance that changes a consumer's queues gives its
     * subscription a new {@code subVersion} and sends a heartbeat, but only if it gets the client's
     * heartbeat lock: when the periodic heartbeat (first run 1 s after start, 5.x's first rebalance
     * also comes ≥ 1 s after start) holds it with data prepared before the change, the broker keeps
     * the older version and answers the consumer's pulls SUBSCRIPTION_NOT_LATEST (25) until the next
     * periodic heartbeat 30 s later. This is a client race; the Java broker waits for that
     * heartbeat, ferrocket asks the consumer for its subscriptions (GET_CONSUMER_RUNNING_INFO)
     * and serves the pull. Tests that may also run against the Java broker still call this.
     */
    public static void heartbeat(DefaultMQPushConsumer c) {
        c.getDefaultMQPushConsumerImpl().getmQClientFactory().sendHeartbeatToAllBrokerWithLock();
    }

    /**
     * Makes a pull consumer's client heartbeat every broker whose route it has: the client learns a
     * broker's version only from heartbeat answers, and refuses SQL92 pulls to a broker whose version
     * it does not know yet.
     */
    public static void heartbeat(DefaultMQPullConsumer c, String brokerName) {
        var factory = c.getDefaultMQPullConsumerImpl().getRebalanceImpl().getmQClientFactory();
        // The client skips a heartbeat while another is under way (tryLock), so probe until the
        // answer is in.
        Wait.until("the client to learn the version of " + brokerName, java.time.Duration.ofSeconds(10), () -> {
            factory.sendHeartbeatToAllBrokerWithLock();
            var found = factory.findBrokerAddressInSubscribe(brokerName, 0, true);
            return found != null && found.getBrokerVersion() > 0;
        });
    }

    /** Messages a push consumer has pulled but not yet finished consuming, for {@code topic}. */
    public static long pending(DefaultMQPushConsumer c, String topic) {
        long[] n = {0};
        c.getDefaultMQPushConsumerImpl().getRebalanceImpl().getProcessQueueTable().forEach((mq, pq) -> {
            if (mq.getTopic().equals(topic) && !pq.isDropped()) {
                n[0] += pq.getMsgCount().get();
            }
        });
        return n[0];
    }

    /** GET_CONSUMER_LIST_BY_GROUP (38) through the admin client's API; empty when the broker knows none. */
    public static List<String> consumerIds(DefaultMQAdminExt admin, String brokerAddr, String group) throws Exception {
        var api = MQClientManager.getInstance().getOrCreateMQClientInstance(admin).getMQClientAPIImpl();
        try {
            List<String> ids = api.getConsumerIdListByGroup(brokerAddr, group, 3_000);
            return ids == null ? List.of() : new ArrayList<>(ids);
        } catch (MQBrokerException e) {
            // The Java broker answers SYSTEM_ERROR "no consumer for this group" when it has none.
            if (e.getResponseCode() == 1) {
                return List.of();
            }
            throw e;
        }
    }

    /** Per queue id, what {@code admin.maxOffset} says for each queue of {@code topic} on the broker. */
    public static Map<Integer, Long> maxOffsets(DefaultMQAdminExt admin, String brokerName, String topic, int queues)
        throws Exception {
        Map<Integer, Long> out = new TreeMap<>();
        for (int q = 0; q < queues; q++) {
            out.put(q, admin.maxOffset(new MessageQueue(topic, brokerName, q)));
        }
        return out;
    }

    /**
     * Runs a client's shutdown on a daemon thread: a 5.x client's shutdown spends ~3 s stopping
     * Netty after it has unregistered, which the tests need not wait for.
     */
    public static void shutdownInBackground(String what, Runnable shutdown) {
        Thread t = new Thread(() -> {
            try {
                shutdown.run();
            } catch (RuntimeException e) {
                System.err.println("[compat] shutdown of " + what + " threw " + e);
            }
        }, "compat-shutdown-" + what);
        t.setDaemon(true);
        STOPPERS.add(t);
        t.start();
    }

    /** Waits (bounded) for the background shutdowns started so far. */
    public static void awaitBackgroundShutdowns(long timeoutMillis) {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMillis);
        for (Thread t : STOPPERS) {
            long left = TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime());
            if (left <= 0) {
                break;
            }
            try {
                t.join(left);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
            if (!t.isAlive()) {
                STOPPERS.remove(t);
            }
        }
    }

    /** Shuts several clients down at once and waits for all of them. */
    public static void shutdownAll(Collection<Runnable> shutdowns, long timeoutMillis) {
        List<Thread> threads = new ArrayList<>();
        for (Runnable r : shutdowns) {
            Thread t = new Thread(r, "compat-shutdown");
            t.setDaemon(true);
            t.start();
            threads.add(t);
        }
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMillis);
        for (Thread t : threads) {
            try {
                t.join(Math.max(1, TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime())));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
        }
    }
}
