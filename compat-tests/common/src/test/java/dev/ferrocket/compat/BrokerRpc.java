package dev.ferrocket.compat;

import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;
import org.apache.rocketmq.remoting.netty.NettyClientConfig;
import org.apache.rocketmq.remoting.netty.NettyRemotingClient;
import org.apache.rocketmq.remoting.protocol.RemotingCommand;

/**
 * Raw requests to a broker over the official {@link NettyRemotingClient}: a request code, ext
 * fields given as strings (exactly what goes on the wire, so required fields can be left out) and
 * an optional body. Used for malformed requests and for reading what the broker itself stores
 * (QUERY_CONSUMER_OFFSET) without joining a consumer group.
 */
public final class BrokerRpc implements AutoCloseable {
    public static final int SEND_MESSAGE_V2 = 310;
    public static final int PULL_MESSAGE = 11;
    public static final int QUERY_CONSUMER_OFFSET = 14;

    private static final long TIMEOUT_MILLIS = 5_000;
    private final NettyRemotingClient client;

    public BrokerRpc() {
        Compat.init();
        client = new NettyRemotingClient(new NettyClientConfig());
        client.start();
    }

    public RemotingCommand invoke(String addr, int code, Map<String, String> extFields, byte[] body) throws Exception {
        RemotingCommand request = RemotingCommand.createRequestCommand(code, null);
        request.setExtFields(new HashMap<>(extFields));
        request.setBody(body);
        return client.invokeSync(addr, request, TIMEOUT_MILLIS);
    }

    /**
     * QUERY_CONSUMER_OFFSET (14) with {@code setZeroIfNotFound=false}: the offset the broker has
     * stored for the group, or null when it answers QUERY_NOT_FOUND (22). Other answers fail.
     */
    public Long committedOffset(String addr, String group, String topic, int queueId) throws Exception {
        Map<String, String> ext = new HashMap<>();
        ext.put("consumerGroup", group);
        ext.put("topic", topic);
        ext.put("queueId", Integer.toString(queueId));
        ext.put("setZeroIfNotFound", "false");
        RemotingCommand response = invoke(addr, QUERY_CONSUMER_OFFSET, ext, null);
        if (response.getCode() == 22) {
            return null;
        }
        if (response.getCode() != 0) {
            throw new AssertionError("QUERY_CONSUMER_OFFSET " + ext + " answered " + response.getCode() + " "
                + response.getRemark());
        }
        String offset = response.getExtFields() == null ? null : response.getExtFields().get("offset");
        if (offset == null) {
            throw new AssertionError("QUERY_CONSUMER_OFFSET " + ext + " answered SUCCESS without an offset: "
                + response.getExtFields());
        }
        return Long.parseLong(offset);
    }

    /** {@link #committedOffset} of queues {@code 0..queues-1}; null entries where none is stored. */
    public Map<Integer, Long> committedOffsets(String addr, String group, String topic, int queues) throws Exception {
        Map<Integer, Long> out = new LinkedHashMap<>();
        for (int q = 0; q < queues; q++) {
            out.put(q, committedOffset(addr, group, topic, q));
        }
        return out;
    }

    /**
     * The ext fields of a complete SEND_MESSAGE_V2 request as {@code DefaultMQProducer} builds it
     * (SendMessageRequestHeaderV2: a=producerGroup, b=topic, c=defaultTopic, d=defaultTopicQueueNums,
     * e=queueId, f=sysFlag, g=bornTimestamp, h=flag, i=properties, j=reconsumeTimes, k=unitMode,
     * m=batch).
     */
    public static Map<String, String> sendV2Fields(String topic, int queueId, String key) {
        Map<String, String> ext = new HashMap<>();
        ext.put("a", "compat-raw-producer");
        ext.put("b", topic);
        ext.put("c", "TBW102");
        ext.put("d", "4");
        ext.put("e", Integer.toString(queueId));
        ext.put("f", "0");
        ext.put("g", Long.toString(System.currentTimeMillis()));
        ext.put("h", "0");
        // MessageDecoder.messageProperties2String: name \u0001 value \u0002
        ext.put("i", "KEYS\u0001" + key + "\u0002WAIT\u0001true\u0002");
        ext.put("j", "0");
        ext.put("k", "false");
        ext.put("m", "false");
        return ext;
    }

    public static byte[] utf8(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    @Override
    public void close() {
        Clients.shutdownInBackground("raw remoting client", client::shutdown);
    }
}
