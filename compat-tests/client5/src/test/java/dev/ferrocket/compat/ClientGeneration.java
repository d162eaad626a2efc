package dev.ferrocket.compat;

import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.rocketmq.common.MQVersion;
import org.apache.rocketmq.common.TopicConfig;
import org.apache.rocketmq.remoting.protocol.DataVersion;
import org.apache.rocketmq.remoting.protocol.body.RegisterBrokerBody;
import org.apache.rocketmq.remoting.protocol.body.TopicConfigAndMappingSerializeWrapper;
import org.apache.rocketmq.remoting.protocol.body.TopicConfigSerializeWrapper;
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
}
