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

    @BeforeAll
    void setUp() throws Exception {
        env = BrokerDeployment.start(BrokerDeployment.Mode.STANDALONE, "transactions",
            Map.of("transactionCheckInterval", "1000", "transactionTimeOut", "1000"));
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
        release.countDown();
        Map<String, Integer> got = Wait.until("the held message after its commit", Duration.ofSeconds(30),
            () -> readAll(topic, 1), k -> k.containsKey("held"));
        assertEquals(Map.of("held", 1), got);
    }
}
