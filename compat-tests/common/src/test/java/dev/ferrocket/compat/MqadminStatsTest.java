package dev.ferrocket.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.common.MixAll;
import org.apache.rocketmq.tools.admin.DefaultMQAdminExt;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The monitoring views of mqadmin while traffic flows (issue #28 points 2 and 3): a producer sends
 * about 20 messages a second to a two-queue topic and a push consumer reads them, for the whole class.
 * Checked through the {@code DefaultMQAdminExt} calls the commands make and through the commands
 * themselves ({@code MQAdminStartup}, output captured): statsAll (VIEW_BROKER_STATS_DATA:
 * TOPIC_PUT_NUMS and GROUP_GET_NUMS, TPS and 24-hour counts above zero, sums no larger than what was
 * sent), consumerProgress (the consume TPS of GET_CONSUME_STATS), brokerConsumeStats
 * (GET_BROKER_CONSUME_STATS: the group, its queues, the diff), producer (GET_ALL_PRODUCER_INFO: the
 * producer's client id and address), brokerStatus (Java 5.3.3's runtime keys) and clusterList
 * (InTPS above zero, no "null" in the TPS columns, #SPACE the disk ratio). The broker samples every 10 s, so each
 * wait allows 40 s. With 4.9 tools the commands do not run in-process (see {@link #commandsRun()}).
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@ExtendWith(BrokerLogsOnFailure.class)
class MqadminStatsTest {
    static final int PERM_RW = 6;
    static final Duration SAMPLED = Duration.ofSeconds(40);
    /** The runtime keys Java 5.3.3 returns whatever the traffic (no transient store pool). */
    static final List<String> JAVA_KEYS = List.of(
        "bootTimestamp", "runtime", "putMessageEntireTimeMax", "putMessageTimesTotal", "putMessageFailedTimes",
        "putMessageSizeTotal", "putMessageDistributeTime", "putMessageAverageSize", "dispatchMaxBuffer",
        "getMessageEntireTimeMax", "putTps", "getFoundTps", "getMissTps", "getTotalTps", "getTransferredTps",
        "putLatency99", "putLatency999", "commitLogDiskRatio", "consumeQueueDiskRatio", "commitLogMinOffset",
        "commitLogMaxOffset", "brokerActive", "brokerVersionDesc", "brokerVersion", "msgPutTotalYesterdayMorning",
        "msgPutTotalTodayMorning", "msgPutTotalTodayNow", "msgGetTotalYesterdayMorning", "msgGetTotalTodayMorning",
        "msgGetTotalTodayNow", "dispatchBehindBytes", "pageCacheLockTimeMills", "earliestMessageTimeStamp",
        "startAcceptSendRequestTimeStamp", "timerReadBehind", "timerOffsetBehind", "timerCongestNum",
        "timerEnqueueTps", "timerDequeueTps", "remainTransientStoreBufferNumbs", "remainHowManyDataToFlush",
        "commitLogDirCapacity", "sendThreadPoolQueueSize", "sendThreadPoolQueueCapacity", "pullThreadPoolQueueSize",
        "pullThreadPoolQueueCapacity", "litePullThreadPoolQueueSize", "litePullThreadPoolQueueCapacity",
        "queryThreadPoolQueueSize", "queryThreadPoolQueueCapacity", "ackThreadPoolQueueSize",
        "ackThreadPoolQueueCapacity", "sendThreadPoolQueueHeadWaitTimeMills", "pullThreadPoolQueueHeadWaitTimeMills",
        "queryThreadPoolQueueHeadWaitTimeMills", "litePullThreadPoolQueueHeadWaitTimeMills",
        "ackThreadPoolQueueHeadWaitTimeMills", "EndTransactionQueueSize", "EndTransactionThreadPoolQueueCapacity");

    private final Generation gen = Generation.current();
    private DeploymentClients deployment;
    private BrokerDeployment env;
    private DefaultMQAdminExt admin;
    private String topic;
    private String group;
    private DefaultMQPushConsumer consumer;
    private Thread sender;
    private volatile boolean sending = true;
    private final AtomicInteger sent = new AtomicInteger();
    private final AtomicInteger consumed = new AtomicInteger();
    private final AtomicReference<Throwable> sendFailure = new AtomicReference<>();

    @BeforeAll
    void setUp() throws Exception {
        deployment = DeploymentClients.start(BrokerDeployment.Mode.STANDALONE, "mqadmin-stats");
        env = deployment.env;
        admin = deployment.admin;
        topic = Compat.unique("stats");
        group = Compat.unique("stats-cg");
        env.createTopic(topic, 2, 2, PERM_RW);
        consumer = Clients.push(env.namesrvAddr(), group, "stats", topic, "*", (msgs, ctx) -> {
            consumed.addAndGet(msgs.size());
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        consumer.start();
        // Traffic for the whole class: the pause paces the load (about 20 messages a second); no
        // check waits on it.
        sender = new Thread(() -> {
            int i = 0;
            while (sending) {
                try {
                    FeatureClients.ok(deployment.producer.send(Clients.message(topic, "TagS", "k" + i, "body-" + i)), "send " + i);
                    sent.incrementAndGet();
                    i++;
                    Thread.sleep(50);
                } catch (InterruptedException e) {
                    return;
                } catch (Throwable t) {
                    sendFailure.compareAndSet(null, t);
                }
            }
        }, "stats-sender");
        sender.setDaemon(true);
        sender.start();
    }

    @AfterAll
    void tearDown() throws Exception {
        sending = false;
        if (sender != null) {
            sender.join(10_000);
        }
        if (consumer != null) {
            consumer.shutdown();
        }
        if (deployment != null) {
            deployment.close();
        }
    }

    void report(String format, Object... args) {
        System.out.printf("[compat %s mqadmin-stats] %s%n", gen.tag(), String.format(format, args));
    }

    /**
     * Whether the commands themselves run here: 4.9's {@code MQAdminStartup.main0} first loads
     * {@code ${rocketmq.home.dir}/conf/logback_tools.xml} (reconfiguring the test JVM's logging) and
     * runs nothing without it, so with 4.9 tools only the {@code DefaultMQAdminExt} calls are checked.
     */
    boolean commandsRun() {
        return !gen.tag().equals("v4");
    }

    /** Runs an mqadmin command in this JVM and returns what it printed. */
    String mqadmin(String... args) {
        String text = Mqadmin.inProcess(args);
        report("mqadmin %s:%n%s", String.join(" ", args), text);
        return text;
    }

    /** The fields of the line of {@code out} that starts with {@code first} (after trimming). */
    static String[] lineOf(String out, String first) {
        for (String line : out.split("\n")) {
            String[] f = line.trim().split("\\s+");
            if (f.length > 0 && f[0].equals(first)) {
                return f;
            }
        }
        return null;
    }

    void assertTrafficFlows() {
        assertEquals(null, sendFailure.get(), "the sender's sends");
        assertTrue(sent.get() > 0, "messages sent");
    }

    @Test
    void statsAllShowsTheTopicsAndTheGroupsTraffic() throws Exception {
        var put = Wait.until("TOPIC_PUT_NUMS of " + topic + " with a minute TPS above 0", SAMPLED,
            () -> admin.viewBrokerStatsData(env.brokerAddr(), "TOPIC_PUT_NUMS", topic),
            d -> d.getStatsMinute().getTps() > 0);
        assertTrafficFlows();
        long sentNow = sent.get();
        report("TOPIC_PUT_NUMS minute sum %d tps %.2f, hour sum %d, day sum %d (sent %d)", put.getStatsMinute().getSum(),
            put.getStatsMinute().getTps(), put.getStatsHour().getSum(), put.getStatsDay().getSum(), sentNow);
        assertTrue(put.getStatsMinute().getSum() > 0 && put.getStatsMinute().getSum() <= sentNow,
            "messages put over the minute: " + put.getStatsMinute().getSum() + " of " + sentNow + " sent");
        assertEquals(1.0, put.getStatsMinute().getAvgpt(), 1e-9, "one message a send");
        // Sent at ~20/s: the minute TPS is within the noise of that (one sample is 10 s).
        assertTrue(put.getStatsMinute().getTps() < 100, "minute TPS " + put.getStatsMinute().getTps());
        var get = Wait.until("GROUP_GET_NUMS of " + topic + "@" + group + " with a minute TPS above 0", SAMPLED,
            () -> admin.viewBrokerStatsData(env.brokerAddr(), "GROUP_GET_NUMS", topic + "@" + group),
            d -> d.getStatsMinute().getTps() > 0);
        assertTrue(get.getStatsMinute().getSum() <= sent.get(), "messages read over the minute");

        if (!commandsRun()) {
            return;
        }
        // The command: #InTPS, #OutTPS, #InMsg24Hour, #OutMsg24Hour above zero.
        String[] line = Wait.until("statsAll to show " + topic + " with traffic in and out", SAMPLED,
            () -> lineOf(mqadmin("statsAll", "-n", env.namesrvAddr(), "-t", topic), topic),
            f -> f != null && f.length == 7 && Double.parseDouble(f[3]) > 0 && Double.parseDouble(f[4]) > 0);
        assertEquals(group, line[1], "statsAll's consumer group");
        assertTrue(Long.parseLong(line[5]) > 0 && Long.parseLong(line[5]) <= sent.get(), "#InMsg24Hour " + line[5]);
        assertTrue(Long.parseLong(line[6]) > 0, "#OutMsg24Hour " + line[6]);
    }

    @Test
    void consumerProgressShowsTheConsumeTps() throws Exception {
        var stats = Wait.until("the consume TPS of " + group, SAMPLED, () -> admin.examineConsumeStats(group),
            s -> s.getConsumeTps() > 0);
        assertTrue(stats.getOffsetTable().keySet().stream().anyMatch(mq -> mq.getTopic().equals(topic)),
            "queues of " + topic + " in " + stats.getOffsetTable().keySet());
        if (!commandsRun()) {
            return;
        }
        String tps = Wait.until("consumerProgress to print a consume TPS above 0", SAMPLED, () -> {
            String out = mqadmin("consumerProgress", "-n", env.namesrvAddr(), "-g", group);
            for (String l : out.split("\n")) {
                if (l.startsWith("Consume TPS:")) {
                    return l.substring("Consume TPS:".length()).trim();
                }
            }
            return null;
        }, t -> t != null && Double.parseDouble(t) > 0);
        report("consumerProgress Consume TPS %s (consumed %d)", tps, consumed.get());
    }

    @Test
    void brokerConsumeStatsListsTheGroupWithItsQueues() throws Exception {
        var list = Wait.until("GET_BROKER_CONSUME_STATS to list " + group, SAMPLED,
            () -> admin.fetchConsumeStatsInBroker(env.brokerAddr(), false, 10_000), l -> {
                for (var byGroup : l.getConsumeStatsList()) {
                    var stats = byGroup.get(group);
                    if (stats != null && !stats.isEmpty()) {
                        return true;
                    }
                }
                return false;
            });
        assertEquals(env.brokerAddr(), list.getBrokerAddr(), "brokerAddr");
        assertTrue(list.getTotalDiff() >= 0, "totalDiff " + list.getTotalDiff());
        int queues = 0;
        for (var byGroup : list.getConsumeStatsList()) {
            var stats = byGroup.get(group);
            if (stats == null) {
                continue;
            }
            for (var s : stats) {
                for (var e : s.getOffsetTable().entrySet()) {
                    // 4.9 consumers also commit offsets on the group's %RETRY% topic, listed too.
                    String t = e.getKey().getTopic();
                    assertTrue(t.equals(topic) || t.equals(MixAll.RETRY_GROUP_TOPIC_PREFIX + group), "topic of " + e.getKey());
                    assertTrue(e.getValue().getBrokerOffset() >= e.getValue().getConsumerOffset(), "offsets of " + e.getKey());
                    if (t.equals(topic)) {
                        queues++;
                    }
                }
            }
        }
        assertEquals(2, queues, "the two write queues of " + topic);
        if (!commandsRun()) {
            return;
        }
        String out = mqadmin("brokerConsumeStats", "-n", env.namesrvAddr(), "-b", env.brokerAddr());
        assertTrue(out.contains("Diff Total:"), out);
        assertTrue(out.contains(topic) && out.contains(group), "the group's queues once it consumed: " + out);
    }

    @Test
    void producerListsTheProducerConnection() throws Exception {
        String pg = deployment.producer.getProducerGroup();
        var table = Wait.until("GET_ALL_PRODUCER_INFO to list " + pg, SAMPLED,
            () -> admin.getAllProducerInfo(env.brokerAddr()), t -> t.getData() != null && t.getData().containsKey(pg));
        var infos = table.getData().get(pg);
        assertFalse(infos.isEmpty(), "instances of " + pg);
        var p = infos.get(0);
        assertNotNull(p.getClientId(), "clientId");
        assertTrue(p.getRemoteIP().startsWith("/127.0.0.1:"), "remoteIP " + p.getRemoteIP());
        assertTrue(Math.abs(System.currentTimeMillis() - p.getLastUpdateTimestamp()) < 120_000,
            "lastUpdateTimestamp " + p.getLastUpdateTimestamp());
        if (!commandsRun()) {
            return;
        }
        String out = mqadmin("producer", "-n", env.namesrvAddr(), "-b", env.brokerAddr());
        assertTrue(out.contains("producer group (" + pg + ") instance : clientId=" + p.getClientId()), out);
    }

    @Test
    void brokerStatusHasJavasKeysAndClusterListItsColumns() throws Exception {
        Map<String, String> status = Wait.until("putTps (10 s rate) above 0 in brokerStatus", SAMPLED,
            () -> new TreeMap<>(admin.fetchBrokerRuntimeStats(env.brokerAddr()).getTable()),
            t -> !t.getOrDefault("putTps", "").isBlank() && !t.get("putTps").startsWith(" ")
                && Double.parseDouble(t.get("putTps").split(" ")[0]) > 0);
        report("brokerStatus: %s", status);
        List<String> missing = new ArrayList<>();
        for (String k : JAVA_KEYS) {
            if (!status.containsKey(k)) {
                missing.add(k);
            }
        }
        assertEquals(List.of(), missing, "keys Java 5.3.3 returns");
        double ratio = Double.parseDouble(status.get("commitLogDiskRatio"));
        assertTrue(ratio > 0 && ratio <= 1, "commitLogDiskRatio " + ratio);
        long earliest = Long.parseLong(status.get("earliestMessageTimeStamp"));
        assertTrue(earliest > 0 && earliest <= System.currentTimeMillis(), "earliestMessageTimeStamp " + earliest);
        assertTrue(status.get("commitLogDirCapacity").startsWith("Total : "), status.get("commitLogDirCapacity"));
        assertTrue(status.get("runtime").startsWith("[ 0 days, "), status.get("runtime"));

        if (!commandsRun()) {
            return;
        }
        String out = mqadmin("clusterList", "-n", env.namesrvAddr());
        String row = null;
        for (String l : out.split("\n")) {
            if (l.contains(env.brokerAddr())) {
                row = l;
            }
        }
        assertNotNull(row, "clusterList row of " + env.brokerAddr() + " in\n" + out);
        assertFalse(row.contains("null"), "no null in the TPS columns: " + row);
        String[] f = row.trim().split("\\s+");
        // #InTPS(LOAD) is putTps's 10 s rate, traffic still flowing: above zero.
        assertTrue(f[5].contains("(") && Double.parseDouble(f[5].substring(0, f[5].indexOf('('))) > 0, "#InTPS: " + row);
        // 5.x: ... #PCWait(ms), #Hour, #SPACE, #ACTIVATED; 4.9: ... #PCWait(ms), #Hour, #SPACE.
        boolean activated = out.contains("#ACTIVATED");
        String space = f[f.length - (activated ? 2 : 1)];
        assertEquals(String.format("%.4f", ratio), space, "#SPACE is commitLogDiskRatio: " + row);
        if (activated) {
            assertEquals("true", f[f.length - 1], "#ACTIVATED: " + row);
        }
    }
}
