package dev.ferrocket.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.store.config.BrokerRole;
import org.junit.jupiter.api.Test;

/**
 * Mixed HA groups: a ferrocket master with the official Java broker (in-process) as its slave, and a
 * Java master with a ferrocket slave, sharing a ferrocket NameServer ({@link HaCluster}, {@link
 * HaJavaBroker}). The slave must hold the master's queues (same max offsets), a consumer group on
 * the master and another on the slave (after the master is gone) must receive the same messages.
 */
class HaMixedTest {
    private static final int QUEUES = 4;
    private static final int MESSAGES = 300;
    private static final Duration CONSUME_TIMEOUT = Duration.ofSeconds(60);

    /** What a stoppable master is: ferrocket (SIGKILL) or Java (orderly shutdown, unregisters). */
    private interface Stop {
        void run() throws Exception;
    }

    private static void replicateAndConsumeFromBoth(HaCluster c, String masterAddr, String slaveAddr, Stop stopMaster,
                                                    Runnable slaveSync) throws Exception {
        Wait.until("the NameServer to list master " + masterAddr + " (id 0) and slave " + slaveAddr + " (id 1)",
            Duration.ofSeconds(30), c::addrs, a -> Map.of(0L, masterAddr, 1L, slaveAddr).equals(a));
        String topic = Compat.unique("ha-mixed");
        c.createTopic(masterAddr, topic, QUEUES);
        DefaultMQProducer producer = Clients.producer(c.namesrvAddr());
        DefaultMQPushConsumer onMaster = null;
        DefaultMQPushConsumer onSlave = null;
        try {
            List<Deliveries.Sent> sent = new ArrayList<>();
            List<String> notOk = new ArrayList<>();
            for (int i = 0; i < MESSAGES; i++) {
                String key = "mixed-" + i;
                String body = "mixed body " + i + " " + "y".repeat(i % 50);
                SendResult r = producer.send(Clients.message(topic, "data", key, body));
                sent.add(new Deliveries.Sent(topic, key, "data", body));
                if (r.getSendStatus() != SendStatus.SEND_OK) {
                    notOk.add(key + "=" + r.getSendStatus());
                }
            }
            assertEquals(List.of(), notOk, "sends to the ASYNC_MASTER that were not SEND_OK");
            Map<Integer, Long> masterMax = c.maxOffsets(masterAddr, topic, QUEUES);
            assertEquals(MESSAGES, masterMax.values().stream().mapToLong(Long::longValue).sum(),
                "master max offsets " + masterMax);
            Wait.until("the slave's max offsets of " + topic + " to equal the master's " + masterMax,
                Duration.ofSeconds(30), () -> c.maxOffsets(slaveAddr, topic, QUEUES), masterMax::equals);

            Deliveries fromMaster = new Deliveries();
            onMaster = Clients.push(c.namesrvAddr(), Compat.unique("ha-mixed-m"), "on-master", topic, "*",
                fromMaster.listener("master"));
            onMaster.start();
            Wait.until("all " + MESSAGES + " messages consumed from the master", CONSUME_TIMEOUT,
                () -> fromMaster.hasAll(sent, null));
            Deliveries.assertExactly("consumed from the master", sent, fromMaster.all());
            DefaultMQPushConsumer m = onMaster;
            onMaster = null;
            m.shutdown();

            // The slave copies topics from its master (Java: SlaveSynchronize every 10 s through the
            // master's VIP port, listenPort - 2, which the test triggers; ferrocket: every 10 s on the
            // main port).
            c.awaitTopicOn(slaveAddr, topic, Duration.ofSeconds(30), slaveSync);
            stopMaster.run();
            Wait.until("the route of " + topic + " to name only the slave (id 1 = " + slaveAddr + ")",
                Duration.ofSeconds(30), () -> c.routeAddrs(topic), r -> Map.of(1L, slaveAddr).equals(r));

            Deliveries fromSlave = new Deliveries();
            onSlave = Clients.push(c.namesrvAddr(), Compat.unique("ha-mixed-s"), "on-slave", topic, "*",
                fromSlave.listener("slave"));
            onSlave.start();
            Wait.until("all " + MESSAGES + " messages consumed from the slave", CONSUME_TIMEOUT,
                () -> fromSlave.hasAll(sent, null));
            int dups = Deliveries.assertExactly("consumed from the slave", sent, fromSlave.all());
            // The same queue offsets on both sides, message by message.
            Map<String, String> posMaster = new java.util.TreeMap<>();
            fromMaster.all().forEach(d -> posMaster.put(d.key(), d.queueId() + "@" + d.queueOffset()));
            Map<String, String> posSlave = new java.util.TreeMap<>();
            fromSlave.all().forEach(d -> posSlave.put(d.key(), d.queueId() + "@" + d.queueOffset()));
            assertEquals(posMaster, posSlave, "queue id @ queue offset of each message, master vs slave");
            System.out.println("[compat] HA mixed: " + MESSAGES + " messages, slave max offsets " + masterMax
                + ", consumed from the slave with " + dups + " duplicates");
        } finally {
            for (DefaultMQPushConsumer cons : new DefaultMQPushConsumer[] {onMaster, onSlave}) {
                if (cons != null) {
                    Clients.shutdownInBackground("ha mixed consumer", cons::shutdown);
                }
            }
            Clients.shutdownInBackground("ha mixed producer", producer::shutdown);
        }
    }

    /**
     * 3b: a Java SLAVE replicates from a ferrocket ASYNC_MASTER. The Java slave learns the master's HA
     * address from the NameServer's REGISTER_BROKER answer (a 5.3.1 slave given {@code haMasterAddress}
     * in its MessageStoreConfig logged "HAClient connect to master null failed" forever: it applies
     * the address in initialize(), before its HA client exists, and then stops learning it).
     */
    @Test
    void javaSlaveReplicatesFromFerrocketMaster() throws Exception {
        HaCluster c = HaCluster.start("java-slave", "ASYNC_MASTER", true, false, Map.of());
        HaJavaBroker slave = null;
        try {
            slave = HaJavaBroker.start("slave", BrokerRole.SLAVE, c.namesrvAddr(), null);
            replicateAndConsumeFromBoth(c, c.addr(HaCluster.MASTER), slave.addr(), () -> c.kill(HaCluster.MASTER),
                slave::syncFromMaster);
        } catch (Throwable t) {
            System.err.println("[compat] " + c + " failed: " + t + "\n" + c.logTails(80));
            throw t;
        } finally {
            if (slave != null) {
                slave.close();
            }
            c.close();
        }
    }

    /** 3a: a ferrocket SLAVE replicates from a Java ASYNC_MASTER (haMasterAddress = the Java HA port). */
    @Test
    void ferrocketSlaveReplicatesFromJavaMaster() throws Exception {
        HaCluster c = HaCluster.start("java-master", "ASYNC_MASTER", false, false, Map.of());
        HaJavaBroker master = null;
        try {
            master = HaJavaBroker.start("master", BrokerRole.ASYNC_MASTER, c.namesrvAddr(), null);
            c.startFerrocketSlave(Map.of("haMasterAddress", master.haAddr()));
            HaJavaBroker m = master;
            replicateAndConsumeFromBoth(c, master.addr(), c.addr(HaCluster.SLAVE), m::close, () -> { });
        } catch (Throwable t) {
            System.err.println("[compat] " + c + " failed: " + t + "\n" + c.logTails(80));
            throw t;
        } finally {
            if (master != null) {
                master.close();
            }
            c.close();
        }
    }

    /**
     * Reference: the same flow with both members Java brokers (ferrocket NameServer only), so the
     * expectations above are those of the official broker; the master is shut down (it unregisters).
     */
    @Test
    void javaSlaveReplicatesFromJavaMasterReference() throws Exception {
        HaCluster c = HaCluster.start("java-java", "ASYNC_MASTER", false, false, Map.of());
        HaJavaBroker master = null;
        HaJavaBroker slave = null;
        try {
            master = HaJavaBroker.start("ref-master", BrokerRole.ASYNC_MASTER, c.namesrvAddr(), null);
            slave = HaJavaBroker.start("ref-slave", BrokerRole.SLAVE, c.namesrvAddr(), null);
            HaJavaBroker m = master;
            HaJavaBroker s = slave;
            replicateAndConsumeFromBoth(c, master.addr(), slave.addr(), m::close, s::syncFromMaster);
        } catch (Throwable t) {
            System.err.println("[compat] " + c + " failed: " + t + "\n" + c.logTails(80));
            throw t;
        } finally {
            if (slave != null) {
                slave.close();
            }
            if (master != null) {
                master.close();
            }
            c.close();
        }
    }
}
