package dev.ferrocket.compat;

import static org.junit.jupiter.api.Assertions.assertFalse;

import com.alibaba.fastjson.serializer.SerializerFeature;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import org.apache.rocketmq.common.MQVersion;
import org.apache.rocketmq.common.TopicConfig;
import org.apache.rocketmq.common.help.FAQUrl;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageConst;
import org.apache.rocketmq.common.message.MessageDecoder;
import org.apache.rocketmq.remoting.CommandCustomHeader;
import org.apache.rocketmq.remoting.protocol.RemotingCommand;
import org.apache.rocketmq.remoting.protocol.RemotingSerializable;
import org.apache.rocketmq.remoting.protocol.SerializeType;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;

/**
 * Golden frames for ferrocket's codec tests, produced by the official encoder of this module's
 * RocketMQ release. Runs only with {@code -Dgolden.out=<dir>}:
 *
 * <pre>mvn -f compat-tests -B test -Dtest=GoldenFramesTest -Dgolden.out=$PWD/testdata/frames</pre>
 *
 * <p>Every value is fixed (opaque, timestamps, ids), so a rerun writes the same bytes, except the
 * REGISTER_BROKER body, whose topic table comes from a freshly initialized broker of this release.
 */
@EnabledIfSystemProperty(named = "golden.out", matches = ".+")
class GoldenFramesTest {
    private static final String TOPIC = "TopicTest";
    private static final String BROKER = "broker-a";
    private static final String CLUSTER = "DefaultCluster";
    private static final long BORN = 1_700_000_000_000L;
    private static final String UNIQ_KEY = "7F0000010F2C18B4AAC2650B9F800000";

    private final Generation gen = Generation.current();
    private int opaque = 100;

    /** A request (or response) with fixed opaque and version, in the given serialize type. */
    private RemotingCommand request(int code, CommandCustomHeader header, SerializeType type) {
        RemotingCommand cmd = RemotingCommand.createRequestCommand(code, header);
        cmd.setOpaque(++opaque);
        cmd.setVersion(MQVersion.CURRENT_VERSION);
        cmd.setSerializeTypeCurrentRPC(type);
        return cmd;
    }

    private RemotingCommand response(int code, String remark, CommandCustomHeader header, SerializeType type) {
        RemotingCommand cmd = RemotingCommand.createResponseCommand(code, remark);
        if (header != null) {
            cmd.writeCustomHeader(header);
        }
        cmd.setOpaque(++opaque);
        cmd.setVersion(MQVersion.CURRENT_VERSION);
        cmd.setSerializeTypeCurrentRPC(type);
        return cmd;
    }

    private static String suffix(SerializeType type) {
        return type == SerializeType.JSON ? "json" : "rocketmq";
    }

    @Test
    void writeGoldenFrames() throws Exception {
        Compat.init();
        GoldenFrames out = new GoldenFrames(Path.of(System.getProperty("golden.out")).toAbsolutePath(), gen.tag());

        for (SerializeType type : SerializeType.values()) {
            out.write("get_routeinfo_" + suffix(type), "GET_ROUTEINFO_BY_TOPIC (105) request as MQClientAPIImpl sends it",
                request(105, Protocol.header("header.namesrv.GetRouteInfoRequestHeader", Map.of("topic", TOPIC)), type));

            Map<String, String> sendResult = new HashMap<>(Map.of(
                "msgId", "7F00000100002A9F0000000000000FA0", "queueId", "1", "queueOffset", "42",
                "transactionId", UNIQ_KEY));
            RemotingCommand answer = response(10, "flush disk timeout, stored but not yet on disk",
                Protocol.header("header.SendMessageResponseHeader", sendResult), type);
            answer.addExtField(MessageConst.PROPERTY_MSG_REGION, "DefaultRegion");
            answer.addExtField(MessageConst.PROPERTY_TRACE_SWITCH, "true");
            out.write("response_remark_ext_" + suffix(type),
                "response with remark and extFields: a SEND_MESSAGE_V2 answer with code 10 (FLUSH_DISK_TIMEOUT), "
                    + "SendMessageResponseHeader plus MSG_REGION/TRACE_ON", answer);

            out.write("send_message_v2_" + suffix(type), "SEND_MESSAGE_V2 (310) request as DefaultMQProducer sends it "
                + "(SendMessageRequestHeaderV2, FastCodesHeader), body 'Hello RocketMQ'", sendMessageV2(type));

            out.write("register_broker_" + suffix(type), "REGISTER_BROKER (103) request as BrokerOuterAPI.registerBrokerAll "
                + "builds it: the topic table of a fresh " + MQVersion.getVersionDesc(MQVersion.CURRENT_VERSION)
                + " broker plus TopicTest (4/4 queues, perm 6); dataVersion counter 3, timestamp " + BORN
                + "; bodyCrc32 over the body", registerBroker(type));
        }

        out.write("response_topic_not_exist_json", "GET_ROUTEINFO_BY_TOPIC answer of the Java NameServer for an unknown topic (17)",
            response(17, "No topic route info in name server for the topic: " + TOPIC
                + FAQUrl.suggestTodo(FAQUrl.APPLY_TOPIC_URL), null, SerializeType.JSON));

        RemotingCommand route = response(0, null, null, SerializeType.JSON);
        route.setBody(routeData().encode(SerializerFeature.BrowserCompatible, SerializerFeature.QuoteFieldNames,
            SerializerFeature.SkipTransientField, SerializerFeature.MapSortField));
        out.write("get_routeinfo_response_standard_json", "GET_ROUTEINFO_BY_TOPIC answer body as the Java NameServer "
            + "encodes it for requests with version >= V4_9_4 (401): quoted brokerAddrs keys", route);
        RemotingCommand legacyRoute = response(0, null, null, SerializeType.JSON);
        legacyRoute.setBody(routeData().encode());
        out.write("get_routeinfo_response_legacy_json", "GET_ROUTEINFO_BY_TOPIC answer body as the Java NameServer "
            + "encodes it for older requests (Go clients send 317): unquoted brokerAddrs keys", legacyRoute);

        out.write("register_broker_response_slave_json", "REGISTER_BROKER answer to a slave (brokerId 1) once its "
            + "master is registered: RegisterBrokerResponseHeader masterAddr and haServerAddr, no body",
            response(0, null, Protocol.header("header.namesrv.RegisterBrokerResponseHeader",
                Map.of("masterAddr", "127.0.0.1:10911", "haServerAddr", "127.0.0.1:10912")), SerializeType.JSON));

        out.write("heart_beat_json", "HEART_BEAT (34) request of a client with a producer and a clustering push "
            + "consumer subscribed to TopicTest with 'TagA || TagB'", heartBeat());

        RemotingCommand offset = request(15, Protocol.header("header.UpdateConsumerOffsetRequestHeader", Map.of(
            "consumerGroup", "please_rename_unique_group_name", "topic", TOPIC, "queueId", "2", "commitOffset", "1234")),
            SerializeType.JSON);
        offset.markOnewayRPC();
        out.write("update_consumer_offset_oneway_json", "UPDATE_CONSUMER_OFFSET (15) as the consumer's periodic "
            + "offset persistence sends it: oneway flag (bit 1) set, no answer expected", offset);

        out.write("put_kv_config_json", "PUT_KV_CONFIG (100) request as mqadmin updateKvConfig sends it",
            request(100, Protocol.header("header.namesrv.PutKVConfigRequestHeader", Map.of(
                "namespace", "ORDER_TOPIC_CONFIG", "key", TOPIC, "value", BROKER + ":4;broker-b:4")), SerializeType.JSON));

        assertFalse(out.written().isEmpty());
        System.out.printf("[compat %s] wrote %d golden frames to %s%n", gen.tag(), out.written().size(),
            System.getProperty("golden.out"));
    }

    private RemotingCommand sendMessageV2(SerializeType type) throws Exception {
        Message msg = new Message(TOPIC, "TagA", "OrderID188", "Hello RocketMQ".getBytes(StandardCharsets.UTF_8));
        msg.putUserProperty("a", "1");
        Map<String, String> properties = new HashMap<>(msg.getProperties());
        properties.put(MessageConst.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX, UNIQ_KEY);
        properties.put(MessageConst.PROPERTY_WAIT_STORE_MSG_OK, "true");
        Map<String, String> v1 = new LinkedHashMap<>();
        v1.put("producerGroup", "please_rename_unique_group_name");
        v1.put("topic", TOPIC);
        v1.put("defaultTopic", "TBW102");
        v1.put("defaultTopicQueueNums", "4");
        v1.put("queueId", "1");
        v1.put("sysFlag", "0");
        v1.put("bornTimestamp", Long.toString(BORN));
        v1.put("flag", "0");
        v1.put("properties", MessageDecoder.messageProperties2String(properties));
        v1.put("reconsumeTimes", "0");
        v1.put("unitMode", "false");
        v1.put("batch", "false");
        v1.put("bname", BROKER);
        CommandCustomHeader header1 = Protocol.header("header.SendMessageRequestHeader", v1);
        // The producer converts its V1 header with the official factory method.
        CommandCustomHeader header2 = (CommandCustomHeader) Protocol.typeOrNull("header.SendMessageRequestHeaderV2")
            .getMethod("createSendMessageRequestHeaderV2", header1.getClass()).invoke(null, header1);
        RemotingCommand cmd = request(310, header2, type);
        cmd.setBody(msg.getBody());
        return cmd;
    }

    private RemotingCommand registerBroker(SerializeType type) throws Exception {
        Map<String, TopicConfig> topics = new TreeMap<>(JavaBroker.freshTopicTable(CLUSTER, BROKER));
        topics.put(TOPIC, new TopicConfig(TOPIC, 4, 4, 6));
        RemotingCommand cmd = RegisterBroker.request(gen,
            new Generation.BrokerIdentity(CLUSTER, BROKER, 0, "127.0.0.1:10911", "127.0.0.1:10912"), topics, 3, BORN);
        cmd.setOpaque(++opaque);
        cmd.setVersion(MQVersion.CURRENT_VERSION);
        cmd.setSerializeTypeCurrentRPC(type);
        return cmd;
    }

    private RemotingSerializable routeData() {
        return Protocol.body("route.TopicRouteData", "{"
            + "\"brokerDatas\":[{\"brokerAddrs\":{\"0\":\"127.0.0.1:10911\",\"1\":\"127.0.0.1:10921\"},"
            + "\"brokerName\":\"" + BROKER + "\",\"cluster\":\"" + CLUSTER + "\"}],"
            + "\"filterServerTable\":{},"
            + "\"queueDatas\":[{\"brokerName\":\"" + BROKER + "\",\"perm\":6,\"readQueueNums\":4,"
            + "\"topicSysFlag\":0,\"writeQueueNums\":4}]}");
    }

    private RemotingCommand heartBeat() {
        String json = "{\"clientID\":\"127.0.0.1@12345#1700000000000\","
            + "\"consumerDataSet\":[{\"consumeFromWhere\":\"CONSUME_FROM_FIRST_OFFSET\",\"consumeType\":\"CONSUME_PASSIVELY\","
            + "\"groupName\":\"CG\",\"messageModel\":\"CLUSTERING\",\"subscriptionDataSet\":["
            + "{\"classFilterMode\":false,\"codeSet\":[2598919,2598920],\"expressionType\":\"TAG\",\"subString\":\"TagA || TagB\","
            + "\"subVersion\":1700000000123,\"tagsSet\":[\"TagA\",\"TagB\"],\"topic\":\"" + TOPIC + "\"},"
            + "{\"classFilterMode\":false,\"codeSet\":[],\"expressionType\":\"TAG\",\"subString\":\"*\","
            + "\"subVersion\":1700000000124,\"tagsSet\":[],\"topic\":\"%RETRY%CG\"}],\"unitMode\":false}],"
            + "\"heartbeatFingerprint\":0,"
            + "\"producerDataSet\":[{\"groupName\":\"CLIENT_INNER_PRODUCER\"},{\"groupName\":\"PG\"}],"
            + "\"withoutSub\":false}";
        // 5.x sends an (empty) HeartbeatRequestHeader, 4.9 no header at all.
        Class<?> headerType = Protocol.typeOrNull("header.HeartbeatRequestHeader");
        CommandCustomHeader header = null;
        if (headerType != null) {
            try {
                header = (CommandCustomHeader) headerType.getDeclaredConstructor().newInstance();
            } catch (ReflectiveOperationException e) {
                throw new IllegalStateException(e);
            }
        }
        RemotingSerializable heartbeat = Protocol.body("heartbeat.HeartbeatData", json);
        // ProducerData has no hashCode, so its HashSet order changes from run to run; keep the
        // order of the JSON above so the frame is stable.
        try {
            Set<?> producers = (Set<?>) heartbeat.getClass().getMethod("getProducerDataSet").invoke(heartbeat);
            Set<Object> ordered = new LinkedHashSet<>();
            producers.stream().sorted(Comparator.comparing(Object::toString)).forEach(ordered::add);
            heartbeat.getClass().getMethod("setProducerDataSet", Set.class).invoke(heartbeat, ordered);
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException(e);
        }
        RemotingCommand cmd = request(34, header, SerializeType.JSON);
        cmd.setBody(heartbeat.encode());
        return cmd;
    }
}
