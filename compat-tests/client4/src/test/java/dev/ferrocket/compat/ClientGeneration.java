package dev.ferrocket.compat;

import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.rocketmq.common.DataVersion;
import org.apache.rocketmq.common.MQVersion;
import org.apache.rocketmq.common.TopicConfig;
import org.apache.rocketmq.common.protocol.body.RegisterBrokerBody;
import org.apache.rocketmq.common.protocol.body.TopicConfigSerializeWrapper;
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
}
