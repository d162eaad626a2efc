package dev.ferrocket.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.common.message.MessageRequestMode;
import org.apache.rocketmq.remoting.protocol.subscription.SubscriptionGroupConfig;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * POP over two masters ({@link MultiBrokerCluster}): a 5.3.1 push consumer with
 * clientRebalance=false asks one broker of the route, picked at random, for its whole assignment
 * (QUERY_ASSIGNMENT 400). The answer covers every broker of the topic's route, as Java's
 * {@code TopicRouteInfoManager} gives it, so messages on both masters are popped and acked.
 * Before, a broker answered its own queues only and the other master's messages were never read.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@ExtendWith(BrokerLogsOnFailure.class)
class PopMultiMasterTest {
    static final int PERM_RW = 6;
    static final int POLL_NAMESRV_MILLIS = 1_000;
    static final String A = MultiBrokerCluster.BROKER_A;
    static final String B = MultiBrokerCluster.BROKER_B;
    private MultiBrokerCluster cluster;

    @BeforeAll
    void setUp() throws Exception {
        cluster = MultiBrokerCluster.start("pop-multi", Map.of());
    }

    @AfterAll
    void tearDown() {
        if (cluster != null) {
            cluster.close();
        }
        Clients.awaitBackgroundShutdowns(10_000);
    }

    @Test
    void aPopConsumerWithoutClientRebalanceReadsBothMasters() throws Exception {
        String topic = Compat.unique("popmulti");
        BrokerGenerationApi.current().createTopic(cluster.admin(0), MultiBrokerCluster.CLUSTER, topic, 2);
        cluster.awaitRoute(topic, List.of(A, B), 2, 2, PERM_RW);
        String group = Compat.unique("cg-popmulti");
        for (String broker : List.of(A, B)) {
            SubscriptionGroupConfig g = new SubscriptionGroupConfig();
            g.setGroupName(group);
            cluster.admin(0).createAndUpdateSubscriptionGroupConfig(cluster.brokerAddr(broker), g);
            cluster.admin(0).setMessageRequestMode(cluster.brokerAddr(broker), topic, group, MessageRequestMode.POP, 0,
                5_000);
        }

        DefaultMQProducer producer = FeatureClients.producer(cluster.namesrvAddrs(), "popmulti", POLL_NAMESRV_MILLIS);
        Deliveries got = new Deliveries();
        DefaultMQPushConsumer c =
            Clients.push(cluster.namesrvAddrs(), group, "popmulti", topic, "*", got.listener("popmulti"));
        c.setPollNameServerInterval(POLL_NAMESRV_MILLIS);
        c.setClientRebalance(false);
        try {
            List<Deliveries.Sent> sent = new ArrayList<>();
            Map<String, Integer> perBroker = new TreeMap<>();
            for (int i = 0; i < 20; i++) {
                Deliveries.Sent s = new Deliveries.Sent(topic, String.format("popmulti-%03d", i), "TagP", "body-" + i);
                SendResult r = FeatureClients.ok(producer.send(Clients.message(topic, s.tags(), s.key(), s.body())),
                    "send of " + s.key());
                perBroker.merge(r.getMessageQueue().getBrokerName(), 1, Integer::sum);
                sent.add(s);
            }
            assertEquals(Map.of(A, 10, B, 10), perBroker, "messages per broker (round robin over both)");
            c.start();
            cluster.awaitDelivered("POP over two masters", got, sent, Duration.ofSeconds(60));
            // POP's invisible time is the client's 60 s default: no message comes back in this test.
            assertEquals(0, Deliveries.assertExactly("messages popped from both masters", sent, got.all()),
                "duplicate deliveries");
            Map<String, Integer> consumedPerBroker = new TreeMap<>();
            got.all().forEach(d -> consumedPerBroker.merge(d.offsetMsgId().substring(0, 16), 1, Integer::sum));
            assertEquals(2, consumedPerBroker.size(), "store hosts of the consumed messages: " + consumedPerBroker);
            for (var e : consumedPerBroker.entrySet()) {
                assertTrue(e.getValue() == 10, "messages consumed from " + e.getKey() + ": " + consumedPerBroker);
            }
        } finally {
            Clients.shutdownAll(List.of(c::shutdown, producer::shutdown), 15_000);
        }
    }
}
