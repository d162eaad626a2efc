package dev.ferrocket.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.apache.rocketmq.client.ClientConfig;
import org.apache.rocketmq.client.consumer.AckResult;
import org.apache.rocketmq.client.consumer.AckStatus;
import org.apache.rocketmq.client.consumer.PopResult;
import org.apache.rocketmq.client.consumer.PopStatus;
import org.apache.rocketmq.client.impl.mqclient.MQClientAPIExt;
import org.apache.rocketmq.common.message.MessageConst;
import org.apache.rocketmq.common.message.MessageDecoder;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;
import org.apache.rocketmq.remoting.netty.NettyClientConfig;
import org.apache.rocketmq.remoting.protocol.RemotingCommand;
import org.apache.rocketmq.remoting.protocol.RequestCode;
import org.apache.rocketmq.remoting.protocol.ResponseCode;
import org.apache.rocketmq.remoting.protocol.header.NotificationRequestHeader;
import org.apache.rocketmq.remoting.protocol.header.PeekMessageRequestHeader;
import org.apache.rocketmq.remoting.protocol.header.PollingInfoRequestHeader;
import org.apache.rocketmq.remoting.protocol.header.PollingInfoResponseHeader;
import org.apache.rocketmq.remoting.protocol.header.PopMessageRequestHeader;
import org.apache.rocketmq.remoting.protocol.subscription.SubscriptionGroupConfig;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The read-only and batch POP codes as the 5.3.1 client's own API sends them
 * ({@link MQClientAPIExt}, what the Java proxy uses): PEEK_MESSAGE (200052) and POLLING_INFO
 * (200055) with the client's headers over its remoting client (the client has no method for
 * them), NOTIFICATION (200054) through {@code notification}, and BATCH_ACK_MESSAGE (200151)
 * through {@code batchAckMessageAsync}, whose body (fastjson, BitSet in base64) the client builds
 * from the handles a pop gave it.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@ExtendWith(BrokerLogsOnFailure.class)
class PopCodesTest {
    private static final long TIMEOUT = 5_000;
    private DeploymentClients d;
    private MQClientAPIExt api;

    @BeforeAll
    void setUp() throws Exception {
        d = DeploymentClients.start(BrokerDeployment.Mode.STANDALONE, "popcodes");
        api = new MQClientAPIExt(new ClientConfig(), new NettyClientConfig(), null, null);
        api.start();
    }

    @AfterAll
    void tearDown() {
        if (api != null) {
            api.shutdown();
        }
        if (d != null) {
            d.close();
        }
    }

    @Test
    void peekNotificationPollingInfoAndBatchAck() throws Exception {
        String topic = Compat.unique("popcodes");
        d.env.createTopic(topic, 1, 1, 6);
        String group = Compat.unique("cg-popcodes");
        SubscriptionGroupConfig g = new SubscriptionGroupConfig();
        g.setGroupName(group);
        d.admin.createAndUpdateSubscriptionGroupConfig(d.env.brokerAddr(), g);
        String addr = d.env.brokerAddr();
        MessageQueue q0 = new MessageQueue(topic, d.env.brokerName(), 0);
        for (int i = 0; i < 3; i++) {
            d.producer.send(Clients.message(topic, "TagA", "k" + i, "b" + i), q0);
        }

        // NOTIFICATION: messages are there for the group.
        assertTrue(api.notification(addr, notification(topic, group, 0), TIMEOUT).get(10, TimeUnit.SECONDS));

        // PEEK twice: the same three, nothing changes.
        for (int i = 0; i < 2; i++) {
            PeekMessageRequestHeader peek = new PeekMessageRequestHeader();
            peek.setConsumerGroup(group);
            peek.setTopic(topic);
            peek.setQueueId(-1);
            peek.setMaxMsgNums(32);
            RemotingCommand r = api.getRemotingClient().invokeSync(addr,
                RemotingCommand.createRequestCommand(RequestCode.PEEK_MESSAGE, peek), TIMEOUT);
            assertEquals(ResponseCode.SUCCESS, r.getCode(), r.getRemark());
            List<MessageExt> peeked = MessageDecoder.decodesBatch(ByteBuffer.wrap(r.getBody()), true, false, true);
            assertEquals(List.of("b0", "b1", "b2"), bodies(peeked));
        }

        // POP all three, then ack them with one BATCH_ACK_MESSAGE built by the client.
        PopMessageRequestHeader pop = new PopMessageRequestHeader();
        pop.setConsumerGroup(group);
        pop.setTopic(topic);
        pop.setQueueId(-1);
        pop.setMaxMsgNums(32);
        pop.setInvisibleTime(60_000);
        pop.setPollTime(0);
        pop.setBornTime(System.currentTimeMillis());
        pop.setInitMode(0);
        pop.setExpType("TAG");
        pop.setExp("*");
        PopResult popped = api.popMessageAsync(addr, d.env.brokerName(), pop, TIMEOUT).get(10, TimeUnit.SECONDS);
        assertEquals(PopStatus.FOUND, popped.getPopStatus());
        assertEquals(List.of("b0", "b1", "b2"), bodies(popped.getMsgFoundList()));
        List<String> handles = popped.getMsgFoundList().stream()
            .map(m -> m.getProperty(MessageConst.PROPERTY_POP_CK)).toList();
        assertFalse(api.notification(addr, notification(topic, group, 0), TIMEOUT).get(10, TimeUnit.SECONDS),
            "everything is popped");
        AckResult acked = api.batchAckMessageAsync(addr, topic, group, handles, TIMEOUT).get(10, TimeUnit.SECONDS);
        assertEquals(AckStatus.OK, acked.getStatus());
        assertEquals(3L, d.rpc.committedOffset(addr, group, topic, 0), "the batch acked every offset");
        AckResult again = api.batchAckMessageAsync(addr, topic, group, handles, TIMEOUT).get(10, TimeUnit.SECONDS);
        assertEquals(AckStatus.NO_EXIST, again.getStatus(), "acked twice");

        // POLLING_INFO counts a held pop, which a new message answers.
        pop.setPollTime(20_000);
        pop.setQueueId(0);
        pop.setBornTime(System.currentTimeMillis());
        CompletableFuture<PopResult> held = api.popMessageAsync(addr, d.env.brokerName(), pop, 30_000);
        Wait.until("a held pop", java.time.Duration.ofSeconds(10), () -> pollingNum(addr, topic, group, 0), n -> n == 1);
        d.producer.send(Clients.message(topic, "TagA", "k3", "b3"), q0);
        assertEquals(List.of("b3"), bodies(held.get(15, TimeUnit.SECONDS).getMsgFoundList()));
        assertEquals(0, pollingNum(addr, topic, group, 0));

        // A NOTIFICATION held on any queue answers once a message arrives.
        NotificationRequestHeader n = notification(topic, group, -1);
        n.setPollTime(20_000);
        CompletableFuture<Boolean> notified = api.notification(addr, n, 30_000);
        d.producer.send(Clients.message(topic, "TagA", "k4", "b4"), q0);
        assertTrue(notified.get(15, TimeUnit.SECONDS));
    }

    private int pollingNum(String addr, String topic, String group, int queueId) throws Exception {
        PollingInfoRequestHeader h = new PollingInfoRequestHeader();
        h.setConsumerGroup(group);
        h.setTopic(topic);
        h.setQueueId(queueId);
        RemotingCommand r = api.getRemotingClient().invokeSync(addr,
            RemotingCommand.createRequestCommand(RequestCode.POLLING_INFO, h), TIMEOUT);
        assertEquals(ResponseCode.SUCCESS, r.getCode(), r.getRemark());
        return ((PollingInfoResponseHeader) r.decodeCommandCustomHeader(PollingInfoResponseHeader.class)).getPollingNum();
    }

    private static NotificationRequestHeader notification(String topic, String group, int queueId) {
        NotificationRequestHeader h = new NotificationRequestHeader();
        h.setConsumerGroup(group);
        h.setTopic(topic);
        h.setQueueId(queueId);
        h.setPollTime(0);
        h.setBornTime(System.currentTimeMillis());
        return h;
    }

    private static List<String> bodies(List<MessageExt> msgs) {
        return msgs.stream().map(m -> new String(m.getBody(), StandardCharsets.UTF_8)).toList();
    }
}
