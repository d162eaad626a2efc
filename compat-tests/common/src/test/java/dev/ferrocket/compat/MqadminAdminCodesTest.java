package dev.ferrocket.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.common.message.MessageQueue;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The real {@code mqadmin} 5.3.3 (MQAdminStartup in this JVM, {@link Mqadmin#inProcess}) for the admin request codes of issue #28 point 4, against one
 * ferrocket broker for the whole class, asserting on what each command prints as it prints it
 * against the Java broker 5.3.3: {@code haStatus} (907), {@code resetMasterFlushOffset} (908),
 * {@code setCommitLogReadAheadMode} (2004, read back by {@code getBrokerConfig}),
 * {@code getColdDataFlowCtrInfo} (2003) with {@code updateColdDataFlowCtrGroupConfig} (2001) and
 * {@code removeColdDataFlowCtrGroupConfig} (2002),
 * {@code exportMetadata} and
 * {@code exportMetrics} (305: the broker's own system topics left out of the export),
 * {@code queryCq} (321), {@code updateTopicList} (18), {@code updateSubGroupList} (225),
 * {@code cleanExpiredCQ} (306), {@code deleteExpiredCommitLog} (329), {@code cleanUnusedTopic} (316),
 * and {@code skipAccumulatedMessage} / {@code resetOffsetByTime} of a group with no consumer online
 * (222 reset by the broker: the offsets table, not mqadmin's client-side fallback). 4.9's tools
 * have no {@code updateTopicList} nor {@code updateSubGroupList}, and run nothing in-process: the
 * class runs with the 5.x tools only.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@ExtendWith(BrokerLogsOnFailure.class)
class MqadminAdminCodesTest {
    static final int PERM_RW = 6;
    private final Generation gen = Generation.current();
    private final FeatureGenerationApi fgen = FeatureGenerationApi.current();
    private DeploymentClients deployment;
    private BrokerDeployment env;
    /** A one-queue topic holding three messages, and a two-queue one holding four. */
    private String oneQueue;
    private String twoQueues;

    @BeforeAll
    void setUp() throws Exception {
        Assumptions.assumeFalse(gen.tag().equals("v4"), "the 5.x tools' commands");
        deployment = DeploymentClients.start(BrokerDeployment.Mode.STANDALONE, "mqadmin-admin-codes");
        env = deployment.env;
        oneQueue = Compat.unique("cq");
        twoQueues = Compat.unique("reset");
        env.createTopic(oneQueue, 1, 1, PERM_RW);
        env.createTopic(twoQueues, 2, 2, PERM_RW);
        DefaultMQProducer p = deployment.producer;
        for (int i = 0; i < 3; i++) {
            FeatureClients.ok(p.send(Clients.message(oneQueue, "TagQ", "k" + i, "cq-" + i)), "send " + i);
        }
        for (int q = 0; q < 2; q++) {
            for (int i = 0; i < 2; i++) {
                MessageQueue mq = new MessageQueue(twoQueues, env.brokerName(), q);
                FeatureClients.ok(p.send(Clients.message(twoQueues, "TagR", "r" + i, "reset-" + i), mq), "send to " + mq);
            }
        }
        Wait.until("the messages to be in their queues", Duration.ofSeconds(10),
            () -> Clients.maxOffsets(deployment.admin, env.brokerName(), twoQueues, 2), m -> m.equals(Map.of(0, 2L, 1, 2L)));
    }

    @AfterAll
    void tearDown() {
        if (deployment != null) {
            deployment.close();
        }
    }

    String mqadmin(String... args) {
        String[] withNamesrv = java.util.Arrays.copyOf(args, args.length + 2);
        withNamesrv[args.length] = "-n";
        withNamesrv[args.length + 1] = env.namesrvAddr();
        String out = Mqadmin.inProcess(withNamesrv);
        System.out.printf("[compat %s mqadmin-admin-codes] mqadmin %s:%n%s%n", gen.tag(), String.join(" ", args), out);
        return out;
    }

    @Test
    void haStatusShowsAMasterWithoutSlaves() throws Exception {
        String out = mqadmin("haStatus", "-b", env.brokerAddr());
        assertTrue(out.contains("#MasterAddr\t" + env.brokerAddr()), out);
        Matcher max = Pattern.compile("#MasterCommitLogMaxOffset\t(\\d+)").matcher(out);
        assertTrue(max.find() && Long.parseLong(max.group(1)) > 0, "the CommitLog holds the messages sent:\n" + out);
        assertTrue(out.contains("#SlaveNum\t0") && out.contains("#InSyncSlaveNum\t0"), out);
        assertTrue(out.contains("#SlaveAddr") && out.contains("#TransferFromWhere"), out);
        // resetMasterFlushOffset (908): a master takes it and keeps nothing (tests/it/admin_store.rs
        // has the slave, which shows it in haStatus).
        String reset = mqadmin("resetMasterFlushOffset", "-b", env.brokerAddr(), "-o", "4096");
        assertTrue(reset.contains("reset master flush offset to 4096 success"), reset);
    }

    @Test
    void setCommitLogReadAheadModeIsAppliedAndReadBack() throws Exception {
        String out = mqadmin("setCommitLogReadAheadMode", "-b", env.brokerAddr(), "-m", "1");
        assertTrue(out.contains("set commitlog readahead mode success, mode: 1"), out);
        String config = mqadmin("getBrokerConfig", "-b", env.brokerAddr());
        assertTrue(Pattern.compile("dataReadAheadEnable\\s*=\\s*false").matcher(config).find(), config);
        out = mqadmin("setCommitLogReadAheadMode", "-b", env.brokerAddr(), "-m", "0");
        assertTrue(out.contains("set commitlog readahead mode success, mode: 0"), out);
        config = mqadmin("getBrokerConfig", "-b", env.brokerAddr());
        assertTrue(Pattern.compile("dataReadAheadEnable\\s*=\\s*true").matcher(config).find(), config);
    }

    @Test
    void coldDataFlowCtrGroupConfigIsUpdatedShownAndRemoved() throws Exception {
        String group = Compat.unique("cold");
        String info = mqadmin("getColdDataFlowCtrInfo", "-b", env.brokerAddr());
        assertTrue(info.contains("============" + env.brokerAddr() + "============"), info);
        assertTrue(Pattern.compile("\"cgColdReadThreshold\"\\s*:\\s*3145728").matcher(info).find(), info);
        assertTrue(Pattern.compile("\"globalColdReadThreshold\"\\s*:\\s*104857600").matcher(info).find(), info);
        assertTrue(Pattern.compile("\"globalAcc\"\\s*:\\s*0").matcher(info).find(), info);
        assertTrue(Pattern.compile("\"runtimeTable\"\\s*:\\s*\\{\\s*\\}").matcher(info).find(), info);
        String out = mqadmin("updateColdDataFlowCtrGroupConfig", "-b", env.brokerAddr(), "-g", group, "-v", "4096");
        assertTrue(out.contains("updateColdDataFlowCtrGroupConfig success, " + env.brokerAddr()), out);
        Pattern entry = Pattern.compile("\"" + Pattern.quote(group) + "\"\\s*:\\s*4096");
        info = mqadmin("getColdDataFlowCtrInfo", "-b", env.brokerAddr());
        assertTrue(entry.matcher(info).find(), info);
        out = mqadmin("removeColdDataFlowCtrGroupConfig", "-b", env.brokerAddr(), "-g", group);
        assertTrue(out.contains("remove broker cold read threshold success, " + env.brokerAddr()), out);
        info = mqadmin("getColdDataFlowCtrInfo", "-b", env.brokerAddr());
        assertFalse(entry.matcher(info).find(), info);
        assertTrue(info.contains("\"configTable\""), info);
    }

    @Test
    void exportsLeaveTheBrokersSystemTopicsOut() throws Exception {
        Path dir = env.dir().resolve("export");
        String out = mqadmin("exportMetadata", "-c", BrokerDeployment.CLUSTER, "-f", dir.toString());
        assertTrue(out.contains("export " + dir + "/metadata.json success"), out);
        String metadata = Files.readString(dir.resolve("metadata.json"), StandardCharsets.UTF_8);
        assertTrue(metadata.contains("\"" + oneQueue + "\""), metadata);
        // Only the broker's system topic list (305) names these: the tools' own list does not.
        for (String system : new String[] {BrokerDeployment.CLUSTER, BrokerDeployment.CLUSTER + "_REPLY_TOPIC",
            env.brokerName()}) {
            assertFalse(Pattern.compile("\"" + Pattern.quote(system) + "\"\\s*:").matcher(metadata).find(),
                system + " exported as a user topic:\n" + metadata);
        }
        out = mqadmin("exportMetrics", "-c", BrokerDeployment.CLUSTER, "-f", dir.toString());
        assertTrue(out.contains("export " + dir + "/metrics.json success"), out);
        assertTrue(Files.readString(dir.resolve("metrics.json")).contains(env.brokerName()), "metrics.json");
    }

    @Test
    void queryCqPrintsTheUnits() throws Exception {
        String out = mqadmin("queryCq", "-t", oneQueue, "-q", "0", "-i", "0", "-c", "10", "-b", env.brokerAddr());
        assertTrue(out.contains("Queue data: \nmax: 3, min: 0"), out);
        for (int i = 0; i < 3; i++) {
            assertTrue(out.contains("idx: " + i + "\nConsumeQueueData{physicOffset="), "unit " + i + ":\n" + out);
        }
        assertFalse(out.contains("idx: 3"), out);
        Matcher size = Pattern.compile("physicSize=(\\d+), tagsCode=(-?\\d+)").matcher(out);
        assertTrue(size.find() && Integer.parseInt(size.group(1)) > 0, out);
        assertEquals("TagQ".hashCode(), Long.parseLong(size.group(2)), "the tag's hash code:\n" + out);
        // A group named: it is not online.
        out = mqadmin("queryCq", "-t", oneQueue, "-q", "0", "-i", "1", "-c", "1", "-b", env.brokerAddr(), "-g", "nobody-cg");
        assertTrue(out.contains("Filter data: \nnobody-cg@" + oneQueue + " is not online!"), out);
        assertTrue(out.contains("idx: 1\n") && !out.contains("idx: 2"), out);
    }

    @Test
    void updateTopicListAndUpdateSubGroupListCreateEveryEntry() throws Exception {
        String a = Compat.unique("bulk-a");
        String b = Compat.unique("bulk-b");
        Path topics = env.dir().resolve("topics.json");
        Files.writeString(topics, String.format("[{\"topicName\":\"%s\",\"readQueueNums\":3,\"writeQueueNums\":3,\"perm\":6},"
            + "{\"topicName\":\"%s\",\"readQueueNums\":5,\"writeQueueNums\":5,\"perm\":4}]", a, b));
        String out = mqadmin("updateTopicList", "-b", env.brokerAddr(), "-f", topics.toString());
        assertTrue(out.contains("submit batch of topic config to " + env.brokerAddr() + " success"), out);
        var topicTable = deployment.admin.getAllTopicConfig(env.brokerAddr(), 5_000).getTopicConfigTable();
        var ta = topicTable.get(a);
        var tb = topicTable.get(b);
        assertNotNull(ta, a + " not created: " + topicTable.keySet());
        assertEquals(3, ta.getWriteQueueNums());
        assertEquals(5, tb.getReadQueueNums());
        assertEquals(4, tb.getPerm());

        String g1 = Compat.unique("bulk-g1");
        String g2 = Compat.unique("bulk-g2");
        Path groups = env.dir().resolve("groups.json");
        Files.writeString(groups, String.format("[{\"groupName\":\"%s\",\"retryMaxTimes\":7},{\"groupName\":\"%s\","
            + "\"consumeBroadcastEnable\":true}]", g1, g2));
        out = mqadmin("updateSubGroupList", "-b", env.brokerAddr(), "-f", groups.toString());
        assertTrue(out.contains("submit batch of group config to " + env.brokerAddr() + " success"), out);
        var table = deployment.admin.getAllSubscriptionGroup(env.brokerAddr(), 5_000).getSubscriptionGroupTable();
        assertNotNull(table.get(g1), g1 + " not created: " + table.keySet());
        assertEquals(7, table.get(g1).getRetryMaxTimes());
        assertTrue(table.get(g2).isConsumeBroadcastEnable());
    }

    @Test
    void cleaningCommandsSucceedAndKeepWhatIsLive() throws Exception {
        Map<Integer, Long> before = Clients.maxOffsets(deployment.admin, env.brokerName(), twoQueues, 2);
        for (String command : new String[] {"cleanExpiredCQ", "deleteExpiredCommitLog", "cleanUnusedTopic"}) {
            String out = mqadmin(command, "-b", env.brokerAddr());
            assertTrue(out.trim().endsWith("success"), command + ":\n" + out);
        }
        assertEquals(before, Clients.maxOffsets(deployment.admin, env.brokerName(), twoQueues, 2),
            "a live topic's queues after the cleaning commands");
    }

    @Test
    void anOfflineGroupIsResetByTheBroker() throws Exception {
        String group = Compat.unique("cg-offline-reset");
        fgen.updateSubGroup(deployment.admin, env.brokerAddr(),
            new FeatureGenerationApi.SubGroup(group, true, false, false, 1, 16, 0, 1, false));

        String out = mqadmin("skipAccumulatedMessage", "-g", group, "-t", twoQueues);
        assertEquals(Map.of(0, 2L, 1, 2L), offsets(out), "skipAccumulatedMessage printed:\n" + out);
        assertFalse(out.contains("#rollbackOffset"), "mqadmin fell back to its client-side reset:\n" + out);
        assertEquals(Map.of(0, 2L, 1, 2L), deployment.rpc.committedOffsets(env.brokerAddr(), group, twoQueues, 2));

        out = mqadmin("resetOffsetByTime", "-g", group, "-t", twoQueues, "-s", "0");
        assertTrue(out.contains("start reset consumer offset by specified, group[" + group + "], topic[" + twoQueues
            + "], force[true]"), out);
        assertEquals(Map.of(0, 0L, 1, 0L), offsets(out), "resetOffsetByTime printed:\n" + out);
        assertEquals(Map.of(0, 0L, 1, 0L), deployment.rpc.committedOffsets(env.brokerAddr(), group, twoQueues, 2));
    }

    /** The {@code #brokerName #queueId #offset} rows of a server-side reset, by queue id. */
    Map<Integer, Long> offsets(String out) {
        assertTrue(out.contains("#brokerName") && out.contains("#offset"), out);
        Map<Integer, Long> rows = new TreeMap<>();
        Matcher m = Pattern.compile("(?m)^" + Pattern.quote(env.brokerName()) + "\\s+(\\d+)\\s+(\\d+)\\s*$").matcher(out);
        while (m.find()) {
            rows.put(Integer.parseInt(m.group(1)), Long.parseLong(m.group(2)));
        }
        return rows;
    }
}
