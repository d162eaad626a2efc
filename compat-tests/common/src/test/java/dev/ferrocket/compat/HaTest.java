package dev.ferrocket.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Collectors;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * Master/slave replication (HA) with ferrocket brokers only: a ferrocket NameServer, a ferrocket
 * master and a ferrocket slave (brokerId 1) of one broker group ({@link HaCluster}), driven by the
 * official producer and push consumer.
 */
class HaTest {
    private static final int QUEUES = 4;
    private static final Duration CONSUME_TIMEOUT = Duration.ofSeconds(90);

    /**
     * Sends probes until one returns SEND_OK: under SYNC_MASTER that means the slave is connected
     * and acknowledging (before that the master answers SLAVE_NOT_AVAILABLE or FLUSH_SLAVE_TIMEOUT).
     */
    private static void awaitSlaveInSync(DefaultMQProducer producer, String topic, List<Deliveries.Sent> sent) {
        AtomicInteger n = new AtomicInteger();
        Wait.until("a probe send to " + topic + " to return SEND_OK (slave connected and in sync)",
            Duration.ofSeconds(30), () -> {
                String key = "probe-" + n.incrementAndGet();
                SendResult r = producer.send(Clients.message(topic, "probe", key, "probe body " + key));
                // stored on the master whatever the status (SLAVE_NOT_AVAILABLE, FLUSH_SLAVE_TIMEOUT):
                // expected downstream too
                sent.add(new Deliveries.Sent(topic, key, "probe", "probe body " + key));
                return r.getSendStatus();
            }, SendStatus.SEND_OK::equals);
    }

    private static String body(String key) {
        return "ha body of " + key + " " + "x".repeat(200);
    }

    /**
     * Test 1: SYNC_MASTER + SLAVE. N messages, each SEND_OK; the slave catches up (same max offsets);
     * a push consumer consumes part of them, the master is killed (SIGKILL) while the rest is
     * unconsumed, the route then names only the slave (id 1) and the consumer receives every
     * message (exact set) from the slave. Then the master is restarted: new sends are SEND_OK again
     * and are consumed too.
     */
    @Test
    void pushConsumerFailsOverToSlaveWhenSyncMasterIsKilled() throws Exception {
        HaCluster c = HaCluster.start("failover", "SYNC_MASTER");
        DefaultMQProducer producer = null;
        DefaultMQPushConsumer consumer = null;
        try {
            String topic = Compat.unique("ha-failover");
            c.createTopic(topic, QUEUES);
            producer = Clients.producer(c.namesrvAddr());
            producer.setSendMsgTimeout(5_000);
            List<Deliveries.Sent> sent = Collections.synchronizedList(new ArrayList<>());
            awaitSlaveInSync(producer, topic, sent);

            int n = 400;
            List<String> notOk = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                String key = "m-" + i;
                SendResult r = producer.send(Clients.message(topic, "data", key, body(key)));
                sent.add(new Deliveries.Sent(topic, key, "data", body(key)));
                if (r.getSendStatus() != SendStatus.SEND_OK) {
                    notOk.add(key + "=" + r.getSendStatus());
                }
            }
            assertEquals(List.of(), notOk, "sends to the SYNC_MASTER with its slave connected that were not SEND_OK");

            Map<Integer, Long> masterMax = c.maxOffsets(c.addr(HaCluster.MASTER), topic, QUEUES);
            long total = masterMax.values().stream().mapToLong(Long::longValue).sum();
            assertEquals(sent.size(), total, "master max offsets " + masterMax + " vs messages stored");
            Wait.until("the slave's max offsets of " + topic + " to equal the master's " + masterMax,
                Duration.ofSeconds(30), () -> c.maxOffsets(c.addr(HaCluster.SLAVE), topic, QUEUES), masterMax::equals);

            c.awaitTopicOn(c.addr(HaCluster.SLAVE), topic, Duration.ofSeconds(30));
            Deliveries deliveries = new Deliveries();
            CountDownLatch gate = new CountDownLatch(1);
            AtomicInteger consumed = new AtomicInteger();
            int before = 100;
            MessageListenerConcurrently recorder = deliveries.listener("c1");
            MessageListenerConcurrently listener = (msgs, ctx) -> {
                if (consumed.get() >= before) {
                    try {
                        if (!gate.await(60, TimeUnit.SECONDS)) {
                            return ConsumeConcurrentlyStatus.RECONSUME_LATER;
                        }
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                        return ConsumeConcurrentlyStatus.RECONSUME_LATER;
                    }
                }
                consumed.addAndGet(msgs.size());
                return recorder.consumeMessage(msgs, ctx);
            };
            consumer = Clients.push(c.namesrvAddr(), Compat.unique("ha-group"), "c1", topic, "*", listener);
            consumer.setPullThresholdForQueue(8);
            consumer.setPullBatchSize(4);
            consumer.setConsumeThreadMin(2);
            consumer.setConsumeThreadMax(2);
            consumer.start();
            Wait.until(before + " messages consumed from the master", Duration.ofSeconds(60),
                consumed::get, v -> v >= before);
            int atKill = deliveries.keys().size();
            assertTrue(atKill < sent.size(), "messages must remain unconsumed when the master is killed; consumed "
                + atKill + " of " + sent.size());

            c.kill(HaCluster.MASTER);
            long killedAt = System.nanoTime();
            Wait.until("the route of " + topic + " to name only the slave (id 1 = " + c.addr(HaCluster.SLAVE) + ")",
                Duration.ofSeconds(15), () -> c.routeAddrs(topic), r -> Map.of(1L, c.addr(HaCluster.SLAVE)).equals(r));
            gate.countDown();
            Wait.until("every SEND_OK message (" + sent.size() + ") consumed after the master was killed (had "
                    + atKill + " distinct keys at the kill)", CONSUME_TIMEOUT,
                () -> deliveries.keys().size(), v -> deliveries.hasAll(sent, null));
            int dups = Deliveries.assertExactly("deliveries after failover to the slave", sent, deliveries.all());
            System.out.println("[compat] HA failover: " + sent.size() + " messages, " + atKill
                + " consumed before the kill, all consumed " + (System.nanoTime() - killedAt) / 1_000_000
                + " ms after it, " + dups + " duplicate deliveries");

            // Restart the master: it registers again as id 0, the slave reconnects, sends are SEND_OK
            // again and the consumer receives them too.
            c.startBroker(HaCluster.MASTER);
            Wait.until("the route of " + topic + " to name master and slave again", Duration.ofSeconds(30),
                () -> c.routeAddrs(topic),
                r -> Map.of(0L, c.addr(HaCluster.MASTER), 1L, c.addr(HaCluster.SLAVE)).equals(r));
            List<Deliveries.Sent> after = Collections.synchronizedList(new ArrayList<>());
            awaitSlaveInSync(producer, topic, after);
            for (int i = 0; i < 50; i++) {
                String key = "after-restart-" + i;
                SendResult r = producer.send(Clients.message(topic, "data", key, body(key)));
                after.add(new Deliveries.Sent(topic, key, "data", body(key)));
                assertEquals(SendStatus.SEND_OK, r.getSendStatus(), "send " + key + " after the master restart");
            }
            List<Deliveries.Sent> all = new ArrayList<>(sent);
            all.addAll(after);
            Wait.until("the messages sent after the master restart to be consumed", CONSUME_TIMEOUT,
                () -> deliveries.hasAll(after, null));
            int dups2 = Deliveries.assertExactly("deliveries before and after the master restart", all, deliveries.all());
            System.out.println("[compat] HA failover: after the master restart " + after.size()
                + " more messages consumed; duplicates overall " + dups2);
        } catch (Throwable t) {
            System.err.println("[compat] " + c + " failed: " + t + "\n" + c.logTails(80));
            throw t;
        } finally {
            if (consumer != null) {
                Clients.shutdownInBackground("ha consumer", consumer::shutdown);
            }
            if (producer != null) {
                Clients.shutdownInBackground("ha producer", producer::shutdown);
            }
            c.close();
        }
    }

    /**
     * Test 1b: a topic auto-created on the SYNC_MASTER by the producer's first send, 2,000 messages
     * each SEND_OK (so the slave holds them), the master SIGKILLed right after the last answer,
     * before the slave's next metadata sync could copy the topic: the slave learned the topic from the
     * replicated records, and a push consumer receives every acknowledged message from it.
     */
    @Test
    @Tag("fault")
    void topicAutoCreatedOnSyncMasterIsConsumableFromTheSlaveAfterAKill() throws Exception {
        HaCluster c = HaCluster.start("fresh-topic", "SYNC_MASTER");
        DefaultMQProducer producer = null;
        DefaultMQPushConsumer consumer = null;
        try {
            String probeTopic = Compat.unique("ha-probe");
            c.createTopic(probeTopic, QUEUES);
            // The slave has no message of the probe topic yet, so it knows the topic once its
            // metadata sync ran; the next sync is 10 s later, after the kill below.
            c.awaitTopicOn(c.addr(HaCluster.SLAVE), probeTopic, Duration.ofSeconds(30));
            producer = Clients.producer(c.namesrvAddr());
            producer.setSendMsgTimeout(5_000);
            awaitSlaveInSync(producer, probeTopic, new ArrayList<>());

            String topic = Compat.unique("ha-fresh");
            List<Deliveries.Sent> sent = new ArrayList<>();
            List<String> notOk = new ArrayList<>();
            for (int i = 0; i < 2_000; i++) {
                String key = "fresh-" + i;
                SendResult r = producer.send(Clients.message(topic, "data", key, body(key)));
                sent.add(new Deliveries.Sent(topic, key, "data", body(key)));
                if (r.getSendStatus() != SendStatus.SEND_OK) {
                    notOk.add(key + "=" + r.getSendStatus());
                }
            }
            c.kill(HaCluster.MASTER);
            assertEquals(List.of(), notOk, "sends to the SYNC_MASTER with its slave in sync that were not SEND_OK");

            Deliveries deliveries = new Deliveries();
            consumer = Clients.push(c.namesrvAddr(), Compat.unique("ha-fresh-group"), "fresh", topic, "*",
                deliveries.listener("fresh"));
            consumer.start();
            Wait.until("all " + sent.size() + " acknowledged messages of the fresh topic consumed from the slave",
                CONSUME_TIMEOUT, () -> deliveries.keys().size(), v -> deliveries.hasAll(sent, null));
            Deliveries.assertExactly("fresh topic consumed from the slave", sent, deliveries.all());
        } catch (Throwable t) {
            System.err.println("[compat] " + c + " failed: " + t + "\n" + c.logTails(80));
            throw t;
        } finally {
            if (consumer != null) {
                Clients.shutdownInBackground("ha consumer", consumer::shutdown);
            }
            if (producer != null) {
                Clients.shutdownInBackground("ha producer", producer::shutdown);
            }
            c.close();
        }
    }

    /**
     * Transactions on a SYNC_MASTER: 50 messages sent in transactions and committed by their
     * producer. Once the master has recorded every commit (its op records are written after the
     * slave holds the committed message), the master is SIGKILLed and a push consumer receives all
     * 50 from the slave, each once; a second one with a SQL92 selector (both brokers have
     * {@code enablePropertyFilter=true}) receives from the slave exactly the 10 that match.
     */
    @Test
    @Tag("fault")
    void transactionsCommittedOnSyncMasterAreConsumableFromTheSlaveAfterAKillAlsoThroughSql92() throws Exception {
        Map<String, String> sql = Map.of("enablePropertyFilter", "true");
        HaCluster c = HaCluster.start("transactions", "SYNC_MASTER", sql, sql);
        org.apache.rocketmq.client.producer.TransactionMQProducer producer = null;
        DefaultMQPushConsumer consumer = null;
        DefaultMQPushConsumer filtered = null;
        try {
            String topic = Compat.unique("ha-tx");
            c.createTopic(topic, QUEUES);
            c.awaitTopicOn(c.addr(HaCluster.SLAVE), topic, Duration.ofSeconds(30));
            producer = new org.apache.rocketmq.client.producer.TransactionMQProducer(Compat.unique("ha-tx-pg"));
            producer.setNamesrvAddr(c.namesrvAddr());
            producer.setInstanceName(Compat.unique("ha-tx-producer"));
            producer.setSendMsgTimeout(5_000);
            producer.setTransactionListener(new org.apache.rocketmq.client.producer.TransactionListener() {
                @Override
                public org.apache.rocketmq.client.producer.LocalTransactionState executeLocalTransaction(
                    org.apache.rocketmq.common.message.Message msg, Object arg) {
                    return org.apache.rocketmq.client.producer.LocalTransactionState.COMMIT_MESSAGE;
                }

                @Override
                public org.apache.rocketmq.client.producer.LocalTransactionState checkLocalTransaction(
                    org.apache.rocketmq.common.message.MessageExt msg) {
                    return org.apache.rocketmq.client.producer.LocalTransactionState.COMMIT_MESSAGE;
                }
            });
            producer.start();
            List<Deliveries.Sent> sent = new ArrayList<>();
            for (int i = 0; i < 50; i++) {
                String key = "tx-" + i;
                org.apache.rocketmq.common.message.Message m = Clients.message(topic, "tx", key, body(key));
                m.putUserProperty("n", Integer.toString(i));
                SendResult r = producer.sendMessageInTransaction(m, null);
                assertEquals(SendStatus.SEND_OK, r.getSendStatus(), key);
                sent.add(new Deliveries.Sent(topic, key, "tx", body(key)));
            }
            String master = c.addr(HaCluster.MASTER);
            Wait.until("the master to record all 50 commits", Duration.ofSeconds(30),
                () -> c.maxOffsets(master, "RMQ_SYS_TRANS_OP_HALF_TOPIC", 1).get(0), n -> n == 50L);
            c.kill(HaCluster.MASTER);

            Deliveries deliveries = new Deliveries();
            consumer = Clients.push(c.namesrvAddr(), Compat.unique("ha-tx-group"), "tx", topic, "*",
                deliveries.listener("tx"));
            consumer.start();
            Wait.until("all 50 committed messages consumed from the slave", CONSUME_TIMEOUT,
                () -> deliveries.keys().size(), v -> deliveries.hasAll(sent, null));
            Deliveries.assertExactly("committed transactions consumed from the slave", sent, deliveries.all());

            Deliveries matching = new Deliveries();
            filtered = Clients.push(c.namesrvAddr(), Compat.unique("ha-tx-sql-group"), "tx-sql", topic, "*",
                matching.listener("tx-sql"));
            filtered.subscribe(topic, org.apache.rocketmq.client.consumer.MessageSelector.bySql("n >= 40"));
            filtered.start();
            List<Deliveries.Sent> want = sent.subList(40, 50);
            Wait.until("the 10 messages matching n >= 40 consumed from the slave", CONSUME_TIMEOUT,
                () -> matching.keys().size(), v -> matching.hasAll(want, null));
            Deliveries.assertExactly("SQL92 subscription served by the slave", want, matching.all());
        } catch (Throwable t) {
            System.err.println("[compat] " + c + " failed: " + t + "\n" + c.logTails(80));
            throw t;
        } finally {
            if (consumer != null) {
                Clients.shutdownInBackground("ha consumer", consumer::shutdown);
            }
            if (filtered != null) {
                Clients.shutdownInBackground("ha sql consumer", filtered::shutdown);
            }
            if (producer != null) {
                Clients.shutdownInBackground("ha producer", producer::shutdown);
            }
            c.close();
        }
    }

    /** Every key delivered was sent by the load producer (acknowledged or not). */
    private static void assertOnlySentDelivered(LoadResult r, Deliveries deliveries) {
        Set<String> attemptedKeys = r.attempted().stream().map(Deliveries.Sent::key)
            .collect(Collectors.toCollection(TreeSet::new));
        List<String> unexpected = deliveries.keys().stream().filter(k -> !attemptedKeys.contains(k)).toList();
        assertEquals(List.of(), unexpected, "deliveries of messages never sent");
    }

    /** What a producer under load saw: the keys acknowledged SEND_OK, other statuses, failures. */
    private record LoadResult(List<Deliveries.Sent> ok, List<Deliveries.Sent> attempted, List<String> notOk,
                              List<String> failed) {
    }

    /**
     * A producer thread sends as fast as it can, the master is killed (SIGKILL) while it does, the
     * producer stops a little later. Returns what it saw; {@code deliveries} gets what one push
     * consumer (running all along) received by the deadline or once every SEND_OK message arrived.
     */
    private static LoadResult killMasterUnderLoad(HaCluster c, String topic, Deliveries deliveries) throws Exception {
        DefaultMQProducer producer = Clients.producer(c.namesrvAddr());
        producer.setSendMsgTimeout(3_000);
        producer.setRetryTimesWhenSendFailed(0);
        DefaultMQPushConsumer consumer = null;
        try {
            List<Deliveries.Sent> ok = Collections.synchronizedList(new ArrayList<>());
            List<Deliveries.Sent> attempted = Collections.synchronizedList(new ArrayList<>());
            List<String> notOk = Collections.synchronizedList(new ArrayList<>());
            List<String> failed = Collections.synchronizedList(new ArrayList<>());
            awaitSlaveInSync(producer, topic, ok);
            attempted.addAll(ok);

            consumer = Clients.push(c.namesrvAddr(), Compat.unique("ha-load-group"), "load", topic, "*",
                deliveries.listener("load"));
            consumer.start();

            AtomicBoolean stop = new AtomicBoolean();
            Thread sender = new Thread(() -> {
                int i = 0;
                while (!stop.get()) {
                    String key = "load-" + i++;
                    Deliveries.Sent s = new Deliveries.Sent(topic, key, "data", body(key));
                    attempted.add(s);
                    try {
                        SendResult r = producer.send(Clients.message(topic, "data", key, body(key)));
                        if (r.getSendStatus() == SendStatus.SEND_OK) {
                            ok.add(s);
                        } else {
                            notOk.add(key + "=" + r.getSendStatus());
                        }
                    } catch (Exception e) {
                        failed.add(key + ": " + e.getClass().getSimpleName());
                        Wait.sleep(20);
                    }
                }
            }, "ha-load-sender");
            sender.start();
            Wait.until("500 SEND_OK messages under load", Duration.ofSeconds(60), ok::size, v -> v >= 500);
            c.kill(HaCluster.MASTER);
            int okAtKill = ok.size();
            Wait.until("the route of " + topic + " to name only the slave", Duration.ofSeconds(15),
                () -> c.routeAddrs(topic), r -> Map.of(1L, c.addr(HaCluster.SLAVE)).equals(r));
            Wait.sleep(1_000);
            stop.set(true);
            sender.join(10_000);
            System.out.println("[compat] HA under load: " + okAtKill + " SEND_OK at the kill, " + ok.size()
                + " SEND_OK in all, " + attempted.size() + " attempted, " + notOk.size() + " other statuses "
                + Deliveries.abbreviate(notOk) + ", " + failed.size() + " failed " + Deliveries.abbreviate(failed));
            return new LoadResult(List.copyOf(ok), List.copyOf(attempted), List.copyOf(notOk), List.copyOf(failed));
        } finally {
            Clients.shutdownInBackground("ha load producer", producer::shutdown);
            // the consumer keeps running: the caller waits on deliveries; it is stopped with the JVM's
            // background shutdowns below
            if (consumer != null) {
                DefaultMQPushConsumer cons = consumer;
                LOAD_CONSUMERS.add(cons);
            }
        }
    }

    private static final List<DefaultMQPushConsumer> LOAD_CONSUMERS = Collections.synchronizedList(new ArrayList<>());

    private static void stopLoadConsumers() {
        synchronized (LOAD_CONSUMERS) {
            for (DefaultMQPushConsumer cons : LOAD_CONSUMERS) {
                Clients.shutdownInBackground("ha load consumer", cons::shutdown);
            }
            LOAD_CONSUMERS.clear();
        }
    }

    /**
     * Test 2: SYNC_MASTER killed (SIGKILL) under load: every SEND_OK message reaches the slave and
     * is consumed from it; nothing is delivered that was not sent.
     */
    @Test
    @Tag("fault")
    void syncMasterKilledUnderLoadLosesNoAcknowledgedMessage() throws Exception {
        HaCluster c = HaCluster.start("sync-load", "SYNC_MASTER");
        try {
            String topic = Compat.unique("ha-sync-load");
            c.createTopic(topic, QUEUES);
            c.awaitTopicOn(c.addr(HaCluster.SLAVE), topic, Duration.ofSeconds(30));
            Deliveries deliveries = new Deliveries();
            LoadResult r = killMasterUnderLoad(c, topic, deliveries);
            assertEquals(List.of(), r.notOk(), "SYNC_MASTER answers other than SEND_OK with the slave in sync");
            try {
                Wait.until("every SEND_OK message (" + r.ok().size() + ") consumed from the slave", CONSUME_TIMEOUT,
                    () -> deliveries.hasAll(r.ok(), null));
            } finally {
                Set<String> got = deliveries.keys();
                List<String> missing = r.ok().stream().map(Deliveries.Sent::key).filter(k -> !got.contains(k)).toList();
                System.out.println("[compat] HA SYNC_MASTER under load: " + missing.size()
                    + " SEND_OK messages not consumed: " + Deliveries.abbreviate(missing));
            }
            // Every delivery is a message that was sent (acknowledged or not).
            assertOnlySentDelivered(r, deliveries);
            int dups = deliveries.size() - deliveries.keys().size();
            System.out.println("[compat] HA SYNC_MASTER under load: all " + r.ok().size() + " SEND_OK consumed, "
                + (deliveries.keys().size() - r.ok().size()) + " unacknowledged also delivered, " + dups
                + " duplicates");
        } catch (Throwable t) {
            System.err.println("[compat] " + c + " failed: " + t + "\n" + c.logTails(80));
            throw t;
        } finally {
            stopLoadConsumers();
            c.close();
        }
    }

    /**
     * Test 4: ASYNC_MASTER killed under load. Replication is asynchronous, so acknowledged messages
     * may be lost; this measures how many (reported, not asserted) and asserts only that whatever
     * is delivered was sent, and that the consumer does go on from the slave.
     */
    @Test
    @Tag("fault")
    void asyncMasterKilledUnderLoadReportsLoss() throws Exception {
        HaCluster c = HaCluster.start("async-load", "ASYNC_MASTER");
        try {
            String topic = Compat.unique("ha-async-load");
            c.createTopic(topic, QUEUES);
            c.awaitTopicOn(c.addr(HaCluster.SLAVE), topic, Duration.ofSeconds(30));
            Deliveries deliveries = new Deliveries();
            LoadResult r = killMasterUnderLoad(c, topic, deliveries);
            Map<Integer, Long> slaveMax = Wait.until("the slave to serve max offsets of " + topic,
                Duration.ofSeconds(15), () -> c.maxOffsets(c.addr(HaCluster.SLAVE), topic, QUEUES), m -> true);
            long onSlave = slaveMax.values().stream().mapToLong(Long::longValue).sum();
            // Wait until the consumer has everything the slave holds (no deadline pressure beyond that).
            Wait.until("the consumer to receive the " + onSlave + " messages the slave holds", CONSUME_TIMEOUT,
                () -> deliveries.keys().size(), v -> v >= onSlave);
            Set<String> got = deliveries.keys();
            List<String> lost = r.ok().stream().map(Deliveries.Sent::key).filter(k -> !got.contains(k)).toList();
            System.out.println("[compat] HA ASYNC_MASTER under load: " + r.ok().size() + " SEND_OK, slave holds "
                + onSlave + " " + slaveMax + ", " + lost.size() + " acknowledged messages lost: "
                + Deliveries.abbreviate(lost));
            assertOnlySentDelivered(r, deliveries);
            assertEquals(List.of(), r.notOk(), "ASYNC_MASTER answers other than SEND_OK");
        } catch (Throwable t) {
            System.err.println("[compat] " + c + " failed: " + t + "\n" + c.logTails(80));
            throw t;
        } finally {
            stopLoadConsumers();
            c.close();
        }
    }

    /**
     * Test 5: slaveReadEnable with accessMessageInMemoryMaxRatio=0 (every message counts as no longer
     * in memory): the master answers the consumer's pulls with suggestWhichBrokerId = the group's
     * whichBrokerWhenConsumeSlowly (1), and the official consumer then pulls from the slave, which
     * keeps it (its data is "on disk" too). Every message is consumed once; the slave's runtime
     * stats show it served them.
     */
    @Test
    @Tag("fault")
    void consumerReadingDataNoLongerInMemoryIsSentToTheSlave() throws Exception {
        Map<String, String> slow = Map.of("slaveReadEnable", "true", "accessMessageInMemoryMaxRatio", "0");
        HaCluster c = HaCluster.start("slow-consumer", "ASYNC_MASTER", slow, slow);
        DefaultMQProducer producer = null;
        DefaultMQPushConsumer consumer = null;
        try {
            String topic = Compat.unique("ha-slow");
            c.createTopic(topic, QUEUES);
            c.awaitTopicOn(c.addr(HaCluster.SLAVE), topic, Duration.ofSeconds(30));
            producer = Clients.producer(c.namesrvAddr());
            List<Deliveries.Sent> sent = new ArrayList<>();
            for (int i = 0; i < 40; i++) {
                String key = "slow-" + i;
                SendResult r = producer.send(Clients.message(topic, "data", key, body(key)));
                assertEquals(SendStatus.SEND_OK, r.getSendStatus(), "send of " + key);
                sent.add(new Deliveries.Sent(topic, key, "data", body(key)));
            }
            // SEND_OK comes once the CommitLog has the message; the ConsumeQueue (max offset) follows.
            Map<Integer, Long> masterMax = Wait.until("the master's max offsets of " + topic + " to add up to "
                    + sent.size(), Duration.ofSeconds(10), () -> c.maxOffsets(c.addr(HaCluster.MASTER), topic, QUEUES),
                m -> m.values().stream().mapToLong(Long::longValue).sum() == sent.size());
            Wait.until("the slave's max offsets of " + topic + " to equal the master's " + masterMax,
                Duration.ofSeconds(30), () -> c.maxOffsets(c.addr(HaCluster.SLAVE), topic, QUEUES), masterMax::equals);
            long slaveBefore = gets(c, HaCluster.SLAVE);
            long masterBefore = gets(c, HaCluster.MASTER);

            Deliveries deliveries = new Deliveries();
            consumer = Clients.push(c.namesrvAddr(), Compat.unique("ha-slow-group"), "slow", topic, "*",
                deliveries.listener("slow"));
            consumer.setPullBatchSize(4);
            consumer.start();
            Wait.until("all " + sent.size() + " messages consumed", CONSUME_TIMEOUT, () -> deliveries.hasAll(sent, null));
            int dups = Deliveries.assertExactly("messages consumed via the slave", sent, deliveries.all());
            long bySlave = gets(c, HaCluster.SLAVE) - slaveBefore;
            long byMaster = gets(c, HaCluster.MASTER) - masterBefore;
            System.out.println("[compat] HA slow consumer: " + sent.size() + " messages, " + byMaster
                + " served by the master (first pulls, before its suggestion), " + bySlave + " by the slave, "
                + dups + " duplicates");
            assertTrue(bySlave > 0, "the slave served none of the messages (master " + byMaster + ")");
            assertTrue(bySlave >= sent.size() - byMaster, "every message the master did not serve came from the "
                + "slave: master " + byMaster + ", slave " + bySlave);
        } catch (Throwable t) {
            System.err.println("[compat] " + c + " failed: " + t + "\n" + c.logTails(80));
            throw t;
        } finally {
            if (consumer != null) {
                Clients.shutdownInBackground("ha slow consumer", consumer::shutdown);
            }
            if (producer != null) {
                Clients.shutdownInBackground("ha slow producer", producer::shutdown);
            }
            c.close();
        }
    }

    /** Messages the broker has served to consumers since it started (runtime stats). */
    private static long gets(HaCluster c, String label) throws Exception {
        return Long.parseLong(c.admin().fetchBrokerRuntimeStats(c.addr(label)).getTable().get("msgGetTotalTodayNow"));
    }
}
