package dev.ferrocket.compat;

import java.io.IOException;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.rocketmq.common.BrokerConfig;
import org.apache.rocketmq.common.MQVersion;
import org.apache.rocketmq.common.TopicConfig;
import org.apache.rocketmq.common.message.MessageAccessor;
import org.apache.rocketmq.common.message.MessageDecoder;
import org.apache.rocketmq.common.message.MessageExtBrokerInner;
import org.apache.rocketmq.remoting.protocol.DataVersion;
import org.apache.rocketmq.remoting.protocol.body.RegisterBrokerBody;
import org.apache.rocketmq.remoting.protocol.body.TopicConfigAndMappingSerializeWrapper;
import org.apache.rocketmq.remoting.protocol.body.TopicConfigSerializeWrapper;
import org.apache.rocketmq.store.DefaultMessageStore;
import org.apache.rocketmq.store.MessageArrivingListener;
import org.apache.rocketmq.store.PutMessageResult;
import org.apache.rocketmq.store.config.MessageStoreConfig;
import org.apache.rocketmq.store.queue.ConsumeQueueInterface;
import org.apache.rocketmq.store.queue.CqUnit;
import org.apache.rocketmq.store.stats.BrokerStatsManager;
import org.apache.rocketmq.tools.admin.DefaultMQAdminExt;

/** RocketMQ 5.3.1: protocol classes under {@code org.apache.rocketmq.remoting.protocol}. */
public final class ClientGeneration implements Generation {

    @Override
    public String clientVersion() {
        return MQVersion.getVersionDesc(MQVersion.CURRENT_VERSION);
    }

    @Override
    public String tag() {
        return "v5";
    }

    @Override
    public String protocolPackage() {
        return "org.apache.rocketmq.remoting.protocol";
    }

    @Override
    public void deleteTopicInNameServer(DefaultMQAdminExt admin, String namesrvAddr, String cluster, String topic)
        throws Exception {
        admin.deleteTopicInNameServer(Set.of(namesrvAddr), cluster, topic);
    }

    @Override
    public byte[] registerBrokerBody(Map<String, TopicConfig> topics, long dataVersionCounter, long dataVersionTimestamp) {
        // Mirrors BrokerOuterAPI.registerBrokerAll of 5.3.1: the wrapper carries (empty) static-topic mapping data.
        DataVersion dataVersion = new DataVersion();
        dataVersion.getCounter().set(dataVersionCounter);
        dataVersion.setTimestamp(dataVersionTimestamp);
        TopicConfigSerializeWrapper wrapper = new TopicConfigSerializeWrapper();
        wrapper.setTopicConfigTable(new ConcurrentHashMap<>(topics));
        wrapper.setDataVersion(dataVersion);

        RegisterBrokerBody body = new RegisterBrokerBody();
        TopicConfigAndMappingSerializeWrapper withMapping = TopicConfigAndMappingSerializeWrapper.from(wrapper);
        // The mapping data version is new on every call; pin its time so golden frames are stable.
        withMapping.getMappingDataVersion().setTimestamp(dataVersionTimestamp);
        body.setTopicConfigSerializeWrapper(withMapping);
        body.setFilterServerList(List.of());
        return body.encode(false);
    }

    @Override
    public Map<String, String> registerBrokerHeaderExtras() {
        // 5.x brokers send enableActingMaster (false unless slave-acting-master mode).
        return Map.of("enableActingMaster", "false");
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
        return new DefaultMessageStore(storeConfig, stats, listener, brokerConfig, new ConcurrentHashMap<>());
    }

    @Override
    public long[] consumeQueueUnit(DefaultMessageStore store, String topic, int queueId, long index) {
        ConsumeQueueInterface queue = store.getConsumeQueue(topic, queueId);
        CqUnit unit = queue == null ? null : queue.get(index);
        return unit == null ? null : new long[] {unit.getPos(), unit.getSize(), unit.getTagsCode()};
    }

    @Override
    public boolean storeSupportsMessageVersionV2() {
        return true;
    }

    @Override
    public long deliverTimestamp(DefaultMessageStore store, int delayLevel, long storeTimestamp) {
        return store.computeDeliverTimestamp(Math.min(delayLevel, store.getMaxDelayLevel()), storeTimestamp);
    }
}
