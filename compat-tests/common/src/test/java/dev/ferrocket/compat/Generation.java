package dev.ferrocket.compat;

import java.io.IOException;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.rocketmq.common.BrokerConfig;
import org.apache.rocketmq.common.TopicConfig;
import org.apache.rocketmq.store.DefaultMessageStore;
import org.apache.rocketmq.store.MessageArrivingListener;
import org.apache.rocketmq.store.PutMessageResult;
import org.apache.rocketmq.store.config.MessageStoreConfig;
import org.apache.rocketmq.store.stats.BrokerStatsManager;
import org.apache.rocketmq.tools.admin.DefaultMQAdminExt;

/**
 * What differs between client generations. 4.9.x keeps the protocol classes under
 * {@code org.apache.rocketmq.common.protocol}, 5.x under {@code org.apache.rocketmq.remoting.protocol},
 * and a few admin signatures differ. Everything else (producer, consumer, {@link DefaultMQAdminExt},
 * {@code RemotingCommand}, the broker's config classes, and getters reached through {@code var})
 * is source-compatible, so the shared code calls it directly: it is compiled once per module against
 * that module's jars (see {@link NamesrvQueries}).
 *
 * <p>Each module provides {@code dev.ferrocket.compat.ClientGeneration} implementing this interface;
 * {@link #current()} binds to it at compile time.
 */
public interface Generation {

    static Generation current() {
        return new ClientGeneration();
    }

    /** The client release under test, e.g. {@code V5_3_1}. */
    String clientVersion();

    /** Short tag used in names (topics, golden files): {@code v5} or {@code v4}. */
    String tag();

    /** Root package of the protocol classes (headers, bodies, routes) of this generation. */
    String protocolPackage();

    /** DELETE_TOPIC_IN_NAMESRV through the admin client (the argument order differs). */
    void deleteTopicInNameServer(DefaultMQAdminExt admin, String namesrvAddr, String cluster, String topic)
        throws Exception;

    /**
     * The RegisterBrokerBody of a REGISTER_BROKER request as this generation's broker encodes it
     * ({@code BrokerOuterAPI.registerBrokerAll}): uncompressed JSON, no filter servers.
     */
    byte[] registerBrokerBody(Map<String, TopicConfig> topics, long dataVersionCounter, long dataVersionTimestamp);

    /** Header fields this generation's broker adds to REGISTER_BROKER beyond the common ones. */
    Map<String, String> registerBrokerHeaderExtras();

    // ---- the Java message store (StoreInteropTest) ----

    /**
     * A bare {@link DefaultMessageStore} as the broker builds it; 5.x also takes the broker's topic
     * table (the store only reads it for queue types and cleanup policies).
     */
    DefaultMessageStore newMessageStore(MessageStoreConfig storeConfig, BrokerStatsManager stats,
        MessageArrivingListener listener, BrokerConfig brokerConfig) throws IOException;

    /**
     * {@code putMessage} of a {@code MessageExtBrokerInner} (in {@code org.apache.rocketmq.store}
     * in 4.9, {@code org.apache.rocketmq.common.message} in 5.x) filled the way the broker's
     * SendMessageProcessor fills it: properties string regenerated from the map, tagsCode = Java hash
     * of TAGS.
     */
    PutMessageResult putMessage(DefaultMessageStore store, StoreMessage message);

    /** {@code MessageExtBrokerInner.tagsString2tagsCode(tags)}: what a ConsumeQueue unit holds. */
    long tagsCode(String tags);

    /**
     * The ConsumeQueue unit at logical offset {@code index} as the Java store reads it:
     * {@code {commitLogOffset, size, tagsCode}}, or null if it has none there.
     */
    long[] consumeQueueUnit(DefaultMessageStore store, String topic, int queueId, long index);

    /**
     * The tagsCode the Java store puts in a ConsumeQueue unit of SCHEDULE_TOPIC_XXXX for a message
     * with {@code DELAY=delayLevel} (> 0) stored at {@code storeTimestamp}: the level clamped to the
     * maximum, then {@code computeDeliverTimestamp} (the store's own in 5.x, its
     * ScheduleMessageService's in 4.9): store time + the level's delay, + 1 s for an unknown level.
     */
    long deliverTimestamp(DefaultMessageStore store, int delayLevel, long storeTimestamp);

    /**
     * Whether this release's store writes and reads MessageVersion V2 records (magic 0xDAA320AB,
     * 2-byte topic length) for topics longer than 127 characters: 5.x yes; 4.9 knows only V1 and
     * writes the length of such a topic as a wrapped-around byte.
     */
    boolean storeSupportsMessageVersionV2();

    // ---- version-neutral values ----

    record QueueView(String brokerName, int readQueueNums, int writeQueueNums, int perm, int topicSysFlag) {
    }

    record BrokerView(String cluster, String brokerName, Map<Long, String> brokerAddrs) {
    }

    record Route(List<QueueView> queues, List<BrokerView> brokers) {
        /** The QueueData of {@code brokerName}, or null. */
        public QueueView queueOf(String brokerName) {
            return queues.stream().filter(q -> q.brokerName().equals(brokerName)).findFirst().orElse(null);
        }

        /** The BrokerData of {@code brokerName}, or null. */
        public BrokerView brokerOf(String brokerName) {
            return brokers.stream().filter(b -> b.brokerName().equals(brokerName)).findFirst().orElse(null);
        }
    }

    record Cluster(Map<String, BrokerView> brokers, Map<String, Set<String>> clusters) {
    }

    record TopicSpec(String name, int readQueueNums, int writeQueueNums, int perm) {
    }

    record BrokerIdentity(String cluster, String brokerName, long brokerId, String brokerAddr, String haServerAddr) {
    }

    /** RegisterBrokerResponseHeader fields, and the ORDER_TOPIC_CONFIG KVTable body (null if absent). */
    record RegisterResult(String masterAddr, String haServerAddr, Map<String, String> orderTopicConfig) {
    }
}
