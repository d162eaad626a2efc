package dev.ferrocket.compat;

import java.util.HashMap;
import java.util.Map;
import java.util.TreeMap;
import org.apache.rocketmq.common.TopicConfig;
import org.apache.rocketmq.common.UtilAll;
import org.apache.rocketmq.remoting.protocol.RemotingCommand;
import org.apache.rocketmq.remoting.protocol.RemotingSerializable;

/**
 * REGISTER_BROKER (103) as {@code BrokerOuterAPI.registerBrokerAll} builds it: a
 * RegisterBrokerRequestHeader, the generation's RegisterBrokerBody, and the body's CRC32 in the
 * header; and the RegisterBrokerResponseHeader and ORDER_TOPIC_CONFIG body of the answer.
 */
public final class RegisterBroker {
    public static final int REGISTER_BROKER = 103;

    private RegisterBroker() {
    }

    public static RemotingCommand request(Generation gen, Generation.BrokerIdentity broker,
                                          Map<String, TopicConfig> topics, long dataVersionCounter,
                                          long dataVersionTimestamp) throws Exception {
        byte[] body = gen.registerBrokerBody(topics, dataVersionCounter, dataVersionTimestamp);
        Map<String, String> header = new HashMap<>();
        header.put("brokerAddr", broker.brokerAddr());
        header.put("brokerId", Long.toString(broker.brokerId()));
        header.put("brokerName", broker.brokerName());
        header.put("clusterName", broker.cluster());
        header.put("haServerAddr", broker.haServerAddr());
        header.put("compressed", "false");
        header.put("bodyCrc32", Integer.toString(UtilAll.crc32(body)));
        header.putAll(gen.registerBrokerHeaderExtras());
        RemotingCommand request = RemotingCommand.createRequestCommand(REGISTER_BROKER,
            Protocol.header("header.namesrv.RegisterBrokerRequestHeader", header));
        request.setBody(body);
        return request;
    }

    /** The RegisterBrokerResponseHeader and KVTable body of an answer, read with the official decoders. */
    public static Generation.RegisterResult decodeResponse(RemotingCommand response) throws Exception {
        Map<String, String> fields = Protocol.decodeHeader(response, "header.namesrv.RegisterBrokerResponseHeader");
        Map<String, String> orderTopicConfig = null;
        if (response.getBody() != null) {
            // BrokerOuterAPI: KVTable.decode(response.getBody(), KVTable.class)
            Object table = RemotingSerializable.decode(response.getBody(), Protocol.typeOrNull("body.KVTable"));
            @SuppressWarnings("unchecked")
            Map<String, String> entries = (Map<String, String>) table.getClass().getMethod("getTable").invoke(table);
            orderTopicConfig = entries == null ? Map.of() : new TreeMap<>(entries);
        }
        return new Generation.RegisterResult(fields.get("masterAddr"), fields.get("haServerAddr"), orderTopicConfig);
    }
}
