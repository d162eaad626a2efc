package dev.ferrocket.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.apache.rocketmq.client.consumer.DefaultMQPullConsumer;
import org.apache.rocketmq.client.consumer.PullResult;
import org.apache.rocketmq.client.consumer.PullStatus;
import org.apache.rocketmq.client.producer.LocalTransactionState;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.client.producer.TransactionListener;
import org.apache.rocketmq.client.producer.TransactionMQProducer;
import org.apache.rocketmq.client.producer.TransactionSendResult;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;
import org.apache.rocketmq.tools.admin.DefaultMQAdminExt;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Transactional messages with the official {@code TransactionMQProducer} against a ferrocket broker
 * that checks every second ({@code transactionCheckInterval=1000}, {@code transactionTimeOut=1000}):
 * commit and rollback answered at once, unknown answered later by the check (commit or rollback),
 * half messages invisible until committed, each committed message delivered exactly once.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@ExtendWith(BrokerLogsOnFailure.class)
class TransactionTest {
    static final int PERM_RW = 6;

    BrokerDeployment env;
    TransactionMQProducer producer;
    DefaultMQPullConsumer reader;
    /** How often the broker asked about each key. */
    final Map<String, Integer> checks = new ConcurrentHashMap<>();
    /** Checks of "held" keys wait for this before answering. */
    final CountDownLatch release = new CountDownLatch(1);
    /** Checks of "after-restart" keys answer unknown until this is set. */
    final java.util.concurrent.atomic.AtomicBoolean restarted = new java.util.concurrent.atomic.AtomicBoolean();

    @BeforeAll
    void setUp() throws Exception {
        env = BrokerDeployment.start(BrokerDeployment.Mode.STANDALONE, "transactions",
            Map.of("transactionCheckInterval", "1000", "transactionTimeOut", "1000", "flushDiskType", "SYNC_FLUSH"));
        producer = new TransactionMQProducer(Compat.unique("pg-tx"));
        producer.setNamesrvAddr(env.namesrvAddr());
        producer.setInstanceName(Compat.unique("producer-tx"));
        producer.setTransactionListener(new TransactionListener() {
            @Override
            public LocalTransactionState executeLocalTransaction(Message msg, Object arg) {
                return switch ((String) arg) {
                    case "commit" -> LocalTransactionState.COMMIT_MESSAGE;
                    case "rollback" -> LocalTransactionState.ROLLBACK_MESSAGE;
                    default -> LocalTransactionState.UNKNOW;
                };
            }

            @Override
            public LocalTransactionState checkLocalTransaction(MessageExt msg) {
                checks.merge(msg.getKeys(), 1, Integer::sum);
                String outcome = msg.getUserProperty("outcome");
                if ("held-commit".equals(outcome)) {
                    try {
                        if (!release.await(60, TimeUnit.SECONDS)) {
                            return LocalTransactionState.UNKNOW;
                        }
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                        return LocalTransactionState.UNKNOW;
                    }
                }
                if ("after-restart".equals(outcome) && !restarted.get()) {
                    return LocalTransactionState.UNKNOW;
                }
                return "check-rollback".equals(outcome) ? LocalTransactionState.ROLLBACK_MESSAGE
                    : LocalTransactionState.COMMIT_MESSAGE;
            }
        });
        producer.start();
        reader = Clients.pull(env.namesrvAddr(), Compat.unique("cg-tx-reader"));
    }

    @AfterAll
    void tearDown() {
        release.countDown();
        List<Runnable> stops = new ArrayList<>();
        if (producer != null) {
            stops.add(producer::shutdown);
        }
        if (reader != null) {
            stops.add(reader::shutdown);
        }
        Clients.shutdownAll(stops, 10_000);
        if (env != null) {
            env.close();
        }
    }

    TransactionSendResult send(String topic, String key, String local, String outcome) throws Exception {
        Message m = new Message(topic, "TagTx", key, ("tx-" + key).getBytes(StandardCharsets.UTF_8));
        m.putUserProperty("outcome", outcome);
        TransactionSendResult r = producer.sendMessageInTransaction(m, local);
        assertEquals(SendStatus.SEND_OK, r.getSendStatus(), key);
        return r;
    }

    /** Every key stored on the topic's queues, counting duplicates. */
    Map<String, Integer> readAll(String topic, int queues) throws Exception {
        Map<String, Integer> keys = new ConcurrentHashMap<>();
        for (int q = 0; q < queues; q++) {
            MessageQueue mq = new MessageQueue(topic, env.brokerName(), q);
            long max = reader.maxOffset(mq);
            long offset = 0;
            while (offset < max) {
                PullResult r = reader.pull(mq, "*", offset, 32);
                if (r.getPullStatus() == PullStatus.FOUND) {
                    for (MessageExt m : r.getMsgFoundList()) {
                        keys.merge(m.getKeys(), 1, Integer::sum);
                    }
                }
                offset = r.getNextBeginOffset();
            }
        }
        return keys;
    }

    @Test
    void commitRollbackAndCheckedOutcomesDeliverExactlyTheCommittedMessagesOnce() throws Exception {
        String topic = Compat.unique("tx");
        env.createTopic(topic, 2, 2, PERM_RW);
        for (int i = 0; i < 3; i++) {
            assertEquals(LocalTransactionState.COMMIT_MESSAGE,
                send(topic, "commit-" + i, "commit", "-").getLocalTransactionState());
            assertEquals(LocalTransactionState.ROLLBACK_MESSAGE,
                send(topic, "rollback-" + i, "rollback", "-").getLocalTransactionState());
            send(topic, "checked-commit-" + i, "unknown", "check-commit");
            send(topic, "checked-rollback-" + i, "unknown", "check-rollback");
        }
        Set<String> want = new TreeSet<>();
        for (int i = 0; i < 3; i++) {
            want.add("commit-" + i);
            want.add("checked-commit-" + i);
        }
        // Every unknown one is checked; the committed ones then arrive.
        Wait.until("a check of every unknown transaction", Duration.ofSeconds(60), () -> {
            for (int i = 0; i < 3; i++) {
                if (!checks.containsKey("checked-commit-" + i) || !checks.containsKey("checked-rollback-" + i)) {
                    return false;
                }
            }
            return true;
        });
        Wait.until("the checked commits on " + topic, Duration.ofSeconds(30),
            () -> readAll(topic, 2).keySet(), k -> k.containsAll(want));
        // A last commit sent after everything else: once it is readable, every earlier END_TRANSACTION
        // has been handled (the producer sends them in order on one connection).
        send(topic, "fence", "commit", "-");
        want.add("fence");
        Map<String, Integer> got = Wait.until("the fence on " + topic, Duration.ofSeconds(30),
            () -> readAll(topic, 2), k -> k.containsKey("fence"));
        assertEquals(want, new TreeSet<>(got.keySet()), "committed messages, and only those");
        got.forEach((k, n) -> assertEquals(1, n, "copies of " + k));
        // A check round reaches a half message only after every older one: once a newer unknown
        // transaction has been checked, the ones its producer ended were passed over, not checked.
        send(topic, "sentinel", "unknown", "check-rollback");
        Wait.until("the check of the sentinel", Duration.ofSeconds(60), () -> checks.containsKey("sentinel"));
        for (int i = 0; i < 3; i++) {
            for (String k : List.of("commit-" + i, "rollback-" + i)) {
                assertTrue(!checks.containsKey(k), "a transaction ended by its producer was checked: " + k);
            }
        }
    }

    @Test
    void aHalfMessageIsInvisibleUntilTheCheckCommitsIt() throws Exception {
        String topic = Compat.unique("tx-held");
        env.createTopic(topic, 1, 1, PERM_RW);
        send(topic, "held", "unknown", "held-commit");
        // The producer is being asked and has not answered: the message is stored, but as a half.
        Wait.until("the check of the held transaction", Duration.ofSeconds(60), () -> checks.containsKey("held"));
        assertEquals(Map.of(), readAll(topic, 1), "a half message is not on its topic");
        // The broker asks again every second, re-putting the half message each time; the
        // producer's one check thread queues those checks behind the held one.
        MessageQueue halves = new MessageQueue("RMQ_SYS_TRANS_HALF_TOPIC", env.brokerName(), 0);
        long halvesAtFirstCheck = reader.maxOffset(halves);
        Wait.until("two more checks of the held transaction", Duration.ofSeconds(30),
            () -> reader.maxOffset(halves), n -> n >= halvesAtFirstCheck + 2);
        release.countDown();
        Wait.until("the held message after its commit", Duration.ofSeconds(30),
            () -> readAll(topic, 1), k -> k.containsKey("held"));
        // Every queued check commits it again. A transaction checked after those, on the same
        // check thread and connection, shows when the broker has taken all their answers.
        send(topic, "held-fence", "unknown", "check-commit");
        Map<String, Integer> got = Wait.until("the fence after the held transaction's answers", Duration.ofSeconds(60),
            () -> readAll(topic, 1), k -> k.containsKey("held-fence"));
        assertTrue(checks.get("held") >= 2, "checks of the held transaction: " + checks.get("held"));
        assertEquals(Map.of("held", 1, "held-fence", 1), got, "each committed once, however often it was checked");
    }

    @Test
    void aHalfMessageSurvivesKill9AndItsCheckAfterTheRestartCommitsIt() throws Exception {
        String topic = Compat.unique("tx-kill");
        env.createTopic(topic, 1, 1, PERM_RW);
        // SYNC_FLUSH: the half message is on disk once its send is answered.
        send(topic, "survivor", "unknown", "after-restart");
        env.killBroker();
        env.startBroker();
        restarted.set(true);
        // The restarted broker knows no producer until one heartbeats (every 30 s by default).
        register(producer, topic);
        Map<String, Integer> got = Wait.until("the survivor committed by a check after the restart",
            Duration.ofSeconds(60), () -> readAll(topic, 1), k -> k.containsKey("survivor"));
        assertEquals(Map.of("survivor", 1), got);
    }

    @Test
    void aTransactionWhoseProducerLeftIsCheckedWithTheNextProducerOfItsGroup() throws Exception {
        String topic = Compat.unique("tx-gone");
        env.createTopic(topic, 1, 1, PERM_RW);
        String group = Compat.unique("pg-tx-gone");
        Map<String, Integer> asked = new ConcurrentHashMap<>();
        TransactionMQProducer first = txProducer(group, LocalTransactionState.UNKNOW, asked);
        Message m = new Message(topic, "TagTx", "orphan", "orphan".getBytes(StandardCharsets.UTF_8));
        assertEquals(SendStatus.SEND_OK, first.sendMessageInTransaction(m, null).getSendStatus());
        first.shutdown();
        TransactionMQProducer second = txProducer(group, LocalTransactionState.COMMIT_MESSAGE, asked);
        try {
            // A producer that has sent nothing heartbeats a broker only once it knows a route to it.
            register(second, topic);
            Map<String, Integer> got = Wait.until("the orphan committed by the group's next producer",
                Duration.ofSeconds(60), () -> readAll(topic, 1), k -> k.containsKey("orphan"));
            assertEquals(Map.of("orphan", 1), got);
            assertTrue(asked.getOrDefault("orphan", 0) >= 1, "the second producer was asked");
        } finally {
            second.shutdown();
        }
    }

    /**
     * Makes {@code p} heartbeat the broker of {@code topic} until the broker lists it as a producer
     * of its group: the broker asks only producers it knows about their transactions.
     */
    void register(TransactionMQProducer p, String topic) throws Exception {
        var factory = p.getDefaultMQProducerImpl().getmQClientFactory();
        DefaultMQAdminExt admin = env.admin();
        Wait.until("producer group " + p.getProducerGroup() + " known to the broker", Duration.ofSeconds(30), () -> {
            factory.updateTopicRouteInfoFromNameServer(topic);
            factory.sendHeartbeatToAllBrokerWithLock();
            try {
                return !admin.examineProducerConnectionInfo(p.getProducerGroup(), topic).getConnectionSet().isEmpty();
            } catch (Exception e) {
                return false;
            }
        });
    }

    /** A started transaction producer of {@code group} answering every check with {@code answer}. */
    TransactionMQProducer txProducer(String group, LocalTransactionState answer, Map<String, Integer> asked)
        throws Exception {
        TransactionMQProducer p = new TransactionMQProducer(group);
        p.setNamesrvAddr(env.namesrvAddr());
        p.setInstanceName(Compat.unique("producer-" + group));
        p.setTransactionListener(new TransactionListener() {
            @Override
            public LocalTransactionState executeLocalTransaction(Message msg, Object arg) {
                return LocalTransactionState.UNKNOW;
            }

            @Override
            public LocalTransactionState checkLocalTransaction(MessageExt msg) {
                asked.merge(msg.getKeys(), 1, Integer::sum);
                return answer;
            }
        });
        p.start();
        return p;
    }
}
