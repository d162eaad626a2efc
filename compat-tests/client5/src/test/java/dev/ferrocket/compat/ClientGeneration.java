package dev.ferrocket.compat;

import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.rocketmq.common.MQVersion;
import org.apache.rocketmq.common.TopicConfig;
import org.apache.rocketmq.common.UtilAll;
import org.apache.rocketmq.remoting.protocol.DataVersion;
import org.apache.rocketmq.remoting.protocol.RemotingCommand;
import org.apache.rocketmq.remoting.protocol.RequestCode;
import org.apache.rocketmq.remoting.protocol.body.RegisterBrokerBody;
import org.apache.rocketmq.remoting.protocol.body.TopicConfigAndMappingSerializeWrapper;
import org.apache.rocketmq.remoting.protocol.body.TopicConfigSerializeWrapper;
import org.apache.rocketmq.remoting.protocol.header.namesrv.RegisterBrokerRequestHeader;
import org.apache.rocketmq.remoting.protocol.header.namesrv.RegisterBrokerResponseHeader;
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
    public RemotingCommand registerBrokerRequest(BrokerIdentity broker, Map<String, TopicConfig> topics,
                                                 long dataVersionCounter, long dataVersionTimestamp) {
        // Mirrors BrokerOuterAPI.registerBrokerAll of 5.3.1.
        RegisterBrokerRequestHeader header = new RegisterBrokerRequestHeader();
        header.setBrokerAddr(broker.brokerAddr());
        header.setBrokerId(broker.brokerId());
        header.setBrokerName(broker.brokerName());
        header.setClusterName(broker.cluster());
        header.setHaServerAddr(broker.haServerAddr());
        header.setEnableActingMaster(false);
        header.setCompressed(false);

        DataVersion dataVersion = new DataVersion();
        dataVersion.getCounter().set(dataVersionCounter);
        dataVersion.setTimestamp(dataVersionTimestamp);
        TopicConfigSerializeWrapper wrapper = new TopicConfigSerializeWrapper();
        wrapper.setTopicConfigTable(new ConcurrentHashMap<>(topics));
        wrapper.setDataVersion(dataVersion);

        RegisterBrokerBody body = new RegisterBrokerBody();
        body.setTopicConfigSerializeWrapper(TopicConfigAndMappingSerializeWrapper.from(wrapper));
        body.setFilterServerList(List.of());
        byte[] bytes = body.encode(false);
        header.setBodyCrc32(UtilAll.crc32(bytes));

        RemotingCommand request = RemotingCommand.createRequestCommand(RequestCode.REGISTER_BROKER, header);
        request.setBody(bytes);
        return request;
    }

    @Override
    public RegisterResult decodeRegisterResponse(RemotingCommand response) throws Exception {
        RegisterBrokerResponseHeader header = response.decodeCommandCustomHeader(RegisterBrokerResponseHeader.class);
        return new RegisterResult(header.getMasterAddr(), header.getHaServerAddr());
    }

}
