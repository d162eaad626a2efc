package dev.ferrocket.compat;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.rocketmq.common.BrokerConfig;
import org.apache.rocketmq.common.DataVersion;
import org.apache.rocketmq.common.MQVersion;
import org.apache.rocketmq.common.TopicConfig;
import org.apache.rocketmq.common.message.MessageAccessor;
import org.apache.rocketmq.common.message.MessageDecoder;
import org.apache.rocketmq.common.protocol.body.RegisterBrokerBody;
import org.apache.rocketmq.common.protocol.body.TopicConfigSerializeWrapper;
import org.apache.rocketmq.store.ConsumeQueue;
import org.apache.rocketmq.store.DefaultMessageStore;
import org.apache.rocketmq.store.MessageArrivingListener;
import org.apache.rocketmq.store.MessageExtBrokerInner;
import org.apache.rocketmq.store.PutMessageResult;
import org.apache.rocketmq.store.SelectMappedBufferResult;
import org.apache.rocketmq.store.config.MessageStoreConfig;
import org.apache.rocketmq.store.schedule.ScheduleMessageService;
import org.apache.rocketmq.store.stats.BrokerStatsManager;
import org.apache.rocketmq.tools.admin.DefaultMQAdminExt;

/** RocketMQ 4.9.8: protocol classes under {@code org.apache.rocketmq.common.protocol}. */
public final class ClientGeneration implements Generation {

    @Override
    public String clientVersion() {
        return MQVersion.getVersionDesc(MQVersion.CURRENT_VERSION);
    }

    @Override
    public String tag() {
        return "v4";
    }

    @Override
    public String protocolPackage() {
        return "org.apache.rocketmq.common.protocol";
    }

    @Override
    public void deleteTopicInNameServer(DefaultMQAdminExt admin, String namesrvAddr, String cluster, String topic)
        throws Exception {
        admin.deleteTopicInNameServer(Set.of(namesrvAddr), topic, cluster);
    }

    @Override
    public byte[] registerBrokerBody(Map<String, TopicConfig> topics, long dataVersionCounter, long dataVersionTimestamp) {
        // Mirrors BrokerOuterAPI.registerBrokerAll of 4.9.x: a plain TopicConfigSerializeWrapper.
        DataVersion dataVersion = new DataVersion();
        dataVersion.getCounter().set(dataVersionCounter);
        dataVersion.setTimestamp(dataVersionTimestamp);
        TopicConfigSerializeWrapper wrapper = new TopicConfigSerializeWrapper();
        wrapper.setTopicConfigTable(new ConcurrentHashMap<>(topics));
        wrapper.setDataVersion(dataVersion);

        RegisterBrokerBody body = new RegisterBrokerBody();
        body.setTopicConfigSerializeWrapper(wrapper);
        body.setFilterServerList(List.of());
        return body.encode(false);
    }

    @Override
    public Map<String, String> registerBrokerHeaderExtras() {
        // 4.9 brokers send no enableActingMaster and no heartbeatTimeoutMillis.
        return Map.of();
    }

    @Override
    public PutMessageResult putMessage(DefaultMessageStore store, StoreMessage message) {
        MessageExtBrokerInner inner = new MessageExtBrokerInner();
        inner.setTopic(message.topic());
        inner.setQueueId(message.queueId());
        inner.setFlag(message.flag());
        inner.setBody(message.body());
        message.properties().forEach((k, v) -> MessageAccessor.putProperty(inner, k, v));
        inner.setPropertiesString(MessageDecoder.messageProperties2String(inner.getProperties()));
        inner.setTagsCode(MessageExtBrokerInner.tagsString2tagsCode(inner.getTags()));
        inner.setBornTimestamp(message.bornTimestamp());
        inner.setBornHost(message.bornHost());
        inner.setStoreHost(message.storeHost());
        inner.setSysFlag(message.sysFlag());
        inner.setReconsumeTimes(message.reconsumeTimes());
        inner.setPreparedTransactionOffset(message.preparedTransactionOffset());
        return store.putMessage(inner);
    }

    @Override
    public long tagsCode(String tags) {
        return MessageExtBrokerInner.tagsString2tagsCode(tags);
    }

    @Override
    public DefaultMessageStore newMessageStore(MessageStoreConfig storeConfig, BrokerStatsManager stats,
        MessageArrivingListener listener, BrokerConfig brokerConfig) throws IOException {
        return new DefaultMessageStore(storeConfig, stats, listener, brokerConfig);
    }

    @Override
    public long[] consumeQueueUnit(DefaultMessageStore store, String topic, int queueId, long index) {
        ConsumeQueue queue = store.getConsumeQueue(topic, queueId);
        SelectMappedBufferResult units = queue == null ? null : queue.getIndexBuffer(index);
        if (units == null) {
            return null;
        }
        try {
            ByteBuffer unit = units.getByteBuffer();
            return unit.remaining() < ConsumeQueue.CQ_STORE_UNIT_SIZE
                ? null
                : new long[] {unit.getLong(), unit.getInt(), unit.getLong()};
        } finally {
            units.release();
        }
    }

    @Override
    public boolean storeSupportsMessageVersionV2() {
        return false;
    }

    @Override
    public long deliverTimestamp(DefaultMessageStore store, int delayLevel, long storeTimestamp) {
        ScheduleMessageService schedule = store.getScheduleMessageService();
        return schedule.computeDeliverTimestamp(Math.min(delayLevel, schedule.getMaxDelayLevel()), storeTimestamp);
    }
}
