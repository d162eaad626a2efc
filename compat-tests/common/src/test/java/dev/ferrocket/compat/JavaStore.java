package dev.ferrocket.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;
import org.apache.rocketmq.common.BrokerConfig;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageAccessor;
import org.apache.rocketmq.common.message.MessageDecoder;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageExtBatch;
import org.apache.rocketmq.store.ConsumeQueueExt;
import org.apache.rocketmq.store.DefaultMessageStore;
import org.apache.rocketmq.store.GetMessageResult;
import org.apache.rocketmq.store.GetMessageStatus;
import org.apache.rocketmq.store.MessageFilter;
import org.apache.rocketmq.store.PutMessageResult;
import org.apache.rocketmq.store.PutMessageStatus;
import org.apache.rocketmq.store.QueryMessageResult;
import org.apache.rocketmq.store.config.FlushDiskType;
import org.apache.rocketmq.store.config.MessageStoreConfig;
import org.apache.rocketmq.store.stats.BrokerStatsManager;

/**
 * The official Java {@link DefaultMessageStore} of the module's release, alone (no broker), on a
 * directory: {@code load()} then {@code start()}; {@link #close()} is the orderly shutdown.
 */
public final class JavaStore implements AutoCloseable {
    /** The four sizes both stores must agree on; they are also ferrocket's {@code store} flags. */
    public record Sizes(int commitLogFileSize, int consumeQueueFileSize, int maxHashSlotNum, int maxIndexNum) {
        public List<String> ferrocketFlags() {
            return List.of("--commit-log-file-size", Integer.toString(commitLogFileSize),
                "--consume-queue-file-size", Integer.toString(consumeQueueFileSize),
                "--max-hash-slot-num", Integer.toString(maxHashSlotNum),
                "--max-index-num", Integer.toString(maxIndexNum));
        }
    }

    private static final String GROUP = "compat-store-reader";
    /** Accepts everything, like a consumer subscribed to "*". */
    private static final MessageFilter ALL = new MessageFilter() {
        @Override
        public boolean isMatchedByConsumeQueue(Long tagsCode, ConsumeQueueExt.CqExtUnit cqExtUnit) {
            return true;
        }

        @Override
        public boolean isMatchedByCommitLog(ByteBuffer msgBuffer, Map<String, String> properties) {
            return true;
        }
    };

    private final DefaultMessageStore store;
    private final BrokerStatsManager stats;
    private final Path dir;
    private boolean closed;

    private JavaStore(DefaultMessageStore store, BrokerStatsManager stats, Path dir) {
        this.store = store;
        this.stats = stats;
        this.dir = dir;
    }

    /**
     * Opens (or creates) the store at {@code dir}: {@code load()} (an AssertionError if it refuses
     * the files), then {@code start()}, which takes the lock file (its exceptions pass through).
     */
    public static JavaStore open(Path dir, Sizes sizes, FlushDiskType flushDiskType) throws Exception {
        Compat.init();
        MessageStoreConfig config = new MessageStoreConfig();
        config.setStorePathRootDir(dir.toString());
        config.setStorePathCommitLog(dir.resolve("commitlog").toString());
        config.setMappedFileSizeCommitLog(sizes.commitLogFileSize());
        config.setMappedFileSizeConsumeQueue(sizes.consumeQueueFileSize());
        config.setMaxHashSlotNum(sizes.maxHashSlotNum());
        config.setMaxIndexNum(sizes.maxIndexNum());
        config.setTransientStorePoolEnable(false);
        config.setFlushDiskType(flushDiskType);
        // The store starts its HA server even without slaves: keep it off the default 10912.
        config.setHaListenPort(Ports.free());

        BrokerConfig brokerConfig = new BrokerConfig();
        brokerConfig.setBrokerIP1("127.0.0.1");
        brokerConfig.setBrokerClusterName("compat-cluster");
        brokerConfig.setBrokerName("compat-store");
        BrokerStatsManager stats = new BrokerStatsManager("compat-cluster", true);
        DefaultMessageStore store = Generation.current().newMessageStore(config, stats,
            (topic, queueId, logicOffset, tagsCode, msgStoreTime, filterBitMap, properties) -> { }, brokerConfig);
        if (!store.load()) {
            store.shutdown();
            stats.shutdown();
            throw new AssertionError("the Java DefaultMessageStore refused the directory " + dir
                + " (load() returned false; see java.log)");
        }
        try {
            store.start();
        } catch (Exception e) {
            // e.g. "Lock failed,MQ already started": release what load() and start() opened
            try {
                store.shutdown();
            } catch (RuntimeException ignored) {
                // services that never started
            }
            stats.shutdown();
            throw e;
        }
        return new JavaStore(store, stats, dir);
    }

    public DefaultMessageStore store() {
        return store;
    }

    public Path dir() {
        return dir;
    }

    /** putMessage; fails unless PUT_OK. */
    public PutMessageResult put(StoreMessage m) {
        PutMessageResult r = Generation.current().putMessage(store, m);
        assertEquals(PutMessageStatus.PUT_OK, r.getPutMessageStatus(), "Java putMessage of " + m.id() + ": " + r);
        return r;
    }

    /**
     * putMessages of a MessageExtBatch built like the broker's SendMessageProcessor.sendBatchMessage:
     * the body is {@code MessageDecoder.encodeMessages} of the client messages (flag, body,
     * properties each); topic, queue, sysFlag, born time and hosts, reconsumeTimes come from the
     * first message; {@code batchProperties} (the broker adds CLUSTER) are appended to every
     * message's properties by the store.
     */
    public PutMessageResult putBatch(List<StoreMessage> batch, Map<String, String> batchProperties) {
        StoreMessage first = batch.get(0);
        List<Message> client = new ArrayList<>();
        for (StoreMessage m : batch) {
            Message msg = new Message();
            msg.setTopic(m.topic());
            msg.setFlag(m.flag());
            msg.setBody(m.body());
            m.properties().forEach((k, v) -> MessageAccessor.putProperty(msg, k, v));
            client.add(msg);
        }
        MessageExtBatch ext = new MessageExtBatch();
        ext.setTopic(first.topic());
        ext.setQueueId(first.queueId());
        ext.setSysFlag(first.sysFlag());
        ext.setFlag(first.flag());
        batchProperties.forEach((k, v) -> MessageAccessor.putProperty(ext, k, v));
        ext.setBody(MessageDecoder.encodeMessages(client));
        ext.setBornTimestamp(first.bornTimestamp());
        ext.setBornHost(first.bornHost());
        ext.setStoreHost(first.storeHost());
        ext.setReconsumeTimes(first.reconsumeTimes());
        PutMessageResult r = store.putMessages(ext);
        assertEquals(PutMessageStatus.PUT_OK, r.getPutMessageStatus(), "Java putMessages of a batch of "
            + batch.size() + " into " + first.topic() + "/" + first.queueId() + ": " + r);
        assertEquals(batch.size(), r.getAppendMessageResult().getMsgNum(), "messages in the appended batch");
        return r;
    }

    /** Waits until the ReputMessageService has built the ConsumeQueues and index of everything. */
    public void awaitDispatched() {
        Wait.until("the Java store to dispatch every CommitLog record", Duration.ofSeconds(10),
            () -> store.dispatchBehindBytes(), behind -> behind == 0);
    }

    /** (topic, queueId) of every ConsumeQueue the store knows, sorted. */
    public TreeMap<String, TreeSet<Integer>> queues() {
        TreeMap<String, TreeSet<Integer>> out = new TreeMap<>();
        var table = store.getConsumeQueueTable();
        table.forEach((topic, byId) -> out.put(topic, new TreeSet<>(byId.keySet())));
        return out;
    }

    /**
     * Every message of a queue through {@code getMessage}, from the min offset to the max; fails on
     * any status other than FOUND before the max is reached.
     */
    public List<MessageExt> readQueue(String topic, int queueId) {
        long min = store.getMinOffsetInQueue(topic, queueId);
        long max = store.getMaxOffsetInQueue(topic, queueId);
        List<MessageExt> out = new ArrayList<>();
        long offset = min;
        while (offset < max) {
            GetMessageResult r = store.getMessage(GROUP, topic, queueId, offset, 32, ALL);
            assertNotNull(r, "getMessage(" + topic + ", " + queueId + ", " + offset + ")");
            try {
                assertEquals(GetMessageStatus.FOUND, r.getStatus(), "getMessage(" + topic + ", " + queueId + ", "
                    + offset + ") with min " + min + ", max " + max + "; next begin " + r.getNextBeginOffset());
                for (ByteBuffer b : r.getMessageBufferList()) {
                    out.add(decode(b, topic + "/" + queueId + " from offset " + offset));
                }
                assertTrue(r.getNextBeginOffset() > offset, "getMessage made no progress at " + topic + "/"
                    + queueId + "@" + offset + ": next begin " + r.getNextBeginOffset());
                offset = r.getNextBeginOffset();
            } finally {
                r.release();
            }
        }
        return out;
    }

    /** lookMessageByOffset(commitLogOffset), or null. */
    public MessageExt lookMessageByOffset(long commitLogOffset) {
        return store.lookMessageByOffset(commitLogOffset);
    }

    /** queryMessage(topic, key, maxNum, 0, Long.MAX_VALUE): what "query by key" returns. */
    public List<MessageExt> queryByKey(String topic, String key, int maxNum) {
        QueryMessageResult r = store.queryMessage(topic, key, maxNum, 0, Long.MAX_VALUE);
        try {
            List<MessageExt> out = new ArrayList<>();
            for (ByteBuffer b : r.getMessageBufferList()) {
                out.add(decode(b, "queryMessage(" + topic + ", " + key + ")"));
            }
            return out;
        } finally {
            r.release();
        }
    }

    private static MessageExt decode(ByteBuffer b, String where) {
        MessageExt m = MessageDecoder.decode(b.slice(), true, false);
        assertNotNull(m, "MessageDecoder.decode failed on a record returned for " + where);
        return m;
    }

    @Override
    public synchronized void close() {
        if (!closed) {
            closed = true;
            store.shutdown();
            stats.shutdown();
        }
    }
}
