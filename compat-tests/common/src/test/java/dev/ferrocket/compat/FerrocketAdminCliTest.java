package dev.ferrocket.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.apache.rocketmq.client.consumer.DefaultMQPullConsumer;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.common.MQVersion;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;
import org.apache.rocketmq.tools.admin.DefaultMQAdminExt;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * {@code ferrocket admin} (the binary's mqadmin-like CLI) against a running two-master cluster that
 * the official clients filled: each command's text table is parsed and checked against what the
 * clients did and what the official admin client reads (brokers, addresses, queue numbers, offsets,
 * lag, client ids, messages).
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@ExtendWith(BrokerLogsOnFailure.class)
class FerrocketAdminCliTest {
    static final int PERM_RW = 6;
    static final Duration CLI_TIMEOUT = Duration.ofSeconds(30);
    static final String A = MultiBrokerCluster.BROKER_A;
    static final String B = MultiBrokerCluster.BROKER_B;
    private final Generation gen = Generation.current();
    private MultiBrokerCluster cluster;
    private DefaultMQAdminExt admin;
    private DefaultMQProducer producer;
    private DefaultMQPullConsumer reader;
    /** The topic the clients fill in {@link #setUp}: 3 queues on each broker. */
    private String topic;
    /** Messages sent per "broker:queue" of {@link #topic}, in order. */
    private final Map<String, List<SendResult>> sent = new TreeMap<>();
    private String sharedKey;
    private final List<SendResult> withSharedKey = new ArrayList<>();

    @BeforeAll
    void setUp() throws Exception {
        cluster = MultiBrokerCluster.start("admin-cli", Map.of());
        admin = cluster.admin(0);
        producer = FeatureClients.producer(cluster.namesrvAddrs(), "cli", 1_000);
        reader = Clients.pull(cluster.namesrvAddrs(), Compat.unique("reader"));
        topic = Compat.unique("cli");
        BrokerGenerationApi.current().createTopic(admin, MultiBrokerCluster.CLUSTER, topic, 3);
        cluster.awaitRoute(topic, List.of(A, B), 3, 3, PERM_RW);
        sharedKey = Compat.unique("cli-shared");
        // broker-a: 3, 0, 2 messages; broker-b: 1, 4, 0
        Map<String, Integer> counts = new LinkedHashMap<>();
        counts.put(A + ":0", 3);
        counts.put(A + ":2", 2);
        counts.put(B + ":0", 1);
        counts.put(B + ":1", 4);
        for (var e : counts.entrySet()) {
            String[] bq = e.getKey().split(":");
            for (int i = 0; i < e.getValue(); i++) {
                String key = "cli-" + bq[0] + "-" + bq[1] + "-" + i;
                var m = Clients.message(topic, "TagC", key, "body-" + key);
                boolean shared = i == 0;
                if (shared) {
                    m.setKeys(List.of(key, sharedKey));
                }
                SendResult r = FeatureClients.ok(producer.send(m, new MessageQueue(topic, bq[0], Integer.parseInt(bq[1]))),
                    "send of " + key);
                sent.computeIfAbsent(e.getKey(), k -> new ArrayList<>()).add(r);
                if (shared) {
                    withSharedKey.add(r);
                }
            }
        }
        for (var e : sent.entrySet()) {
            String[] bq = e.getKey().split(":");
            MessageQueue mq = new MessageQueue(topic, bq[0], Integer.parseInt(bq[1]));
            Wait.until(e.getValue().size() + " messages readable from " + mq, Duration.ofSeconds(10),
                () -> FeatureClients.readQueue(reader, mq).size(), n -> n >= e.getValue().size());
        }
    }

    @AfterAll
    void tearDown() {
        List<Runnable> stops = new ArrayList<>();
        if (producer != null) {
            stops.add(producer::shutdown);
        }
        if (reader != null) {
            stops.add(reader::shutdown);
        }
        Clients.shutdownAll(stops, 10_000);
        if (cluster != null) {
            cluster.close();
        }
        Clients.awaitBackgroundShutdowns(10_000);
    }

    void report(String format, Object... args) {
        System.out.printf("[compat %s ferrocket-admin] %s%n", gen.tag(), String.format(format, args));
    }

    // ------------------------------------------------------------------ running the CLI

    record Cli(List<String> args, int exit, String out, String err) {
        /** Rows of a text table (header first), cells split at runs of two or more spaces. */
        List<List<String>> table() {
            return out.lines().filter(l -> !l.isBlank()).map(l -> Arrays.asList(l.trim().split(" {2,}"))).toList();
        }

        /** The data rows of a table as maps from header to cell. */
        List<Map<String, String>> rows() {
            List<List<String>> t = table();
            if (t.isEmpty()) {
                throw new AssertionError("ferrocket admin " + args + " printed no table: " + this);
            }
            List<String> header = t.get(0);
            List<Map<String, String>> out = new ArrayList<>();
            for (List<String> row : t.subList(1, t.size())) {
                Map<String, String> m = new LinkedHashMap<>();
                for (int i = 0; i < header.size(); i++) {
                    m.put(header.get(i), i < row.size() ? row.get(i) : "");
                }
                out.add(m);
            }
            return out;
        }

        @Override
        public String toString() {
            return "`ferrocket admin " + String.join(" ", args) + "` exit " + exit + "\n--- stdout ---\n" + out
                + "--- stderr ---\n" + err;
        }
    }

    /** Runs {@code ferrocket admin -n <ns1;ns2> <args>}; fails unless it exits 0. Logged to the cluster directory. */
    Cli admin(String... args) throws Exception {
        Cli r = run(args);
        assertEquals(0, r.exit(), "exit code of " + r);
        return r;
    }

    Cli run(String... args) throws Exception {
        List<String> command = new ArrayList<>(List.of(Ferrocket.binary().toString(), "admin", "-n", cluster.namesrvAddrs()));
        command.addAll(List.of(args));
        ProcessBuilder b = new ProcessBuilder(command).directory(cluster.dir().toFile());
        if (System.getenv("RUST_LOG") == null) {
            b.environment().put("RUST_LOG", "warn");
        }
        Process p = b.start();
        CompletableFuture<String> out = CompletableFuture.supplyAsync(() -> read(p.getInputStream()));
        CompletableFuture<String> err = CompletableFuture.supplyAsync(() -> read(p.getErrorStream()));
        if (!p.waitFor(CLI_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS)) {
            p.destroyForcibly();
            throw new AssertionError("ferrocket admin " + List.of(args) + " did not finish within " + CLI_TIMEOUT.toSeconds()
                + " s");
        }
        Cli r = new Cli(List.of(args), p.exitValue(), out.get(5, TimeUnit.SECONDS), err.get(5, TimeUnit.SECONDS));
        Files.writeString(cluster.dir().resolve("ferrocket-admin.log"), r + "\n", StandardCharsets.UTF_8,
            StandardOpenOption.CREATE, StandardOpenOption.APPEND);
        return r;
    }

    private static String read(java.io.InputStream in) {
        try (in) {
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            return "(cannot read: " + e + ")";
        }
    }

    static String brokerVersionDesc(DefaultMQAdminExt admin, String addr) throws Exception {
        return admin.fetchBrokerRuntimeStats(addr).getTable().get("brokerVersionDesc");
    }

    // ------------------------------------------------------------------ tests

    @Test
    void clusterListNamesBothMastersWithAddressAndVersion() throws Exception {
        Cli r = admin("cluster-list");
        Set<List<String>> rows = r.rows().stream().map(m -> List.of(m.get("cluster"), m.get("broker"), m.get("id"),
            m.get("address"), m.get("version"))).collect(Collectors.toSet());
        Set<List<String>> want = Set.of(
            List.of(MultiBrokerCluster.CLUSTER, A, "0", cluster.brokerAddr(A), brokerVersionDesc(admin, cluster.brokerAddr(A))),
            List.of(MultiBrokerCluster.CLUSTER, B, "0", cluster.brokerAddr(B), brokerVersionDesc(admin, cluster.brokerAddr(B))));
        assertEquals(want, rows, "cluster-list rows [cluster, broker, id, address, version]\n" + r);
    }

    @Test
    void topicListTopicRouteAndTopicStatusShowWhatTheClientsDid() throws Exception {
        // Other tests' consumers may register %RETRY% topics meanwhile: the CLI's list must lie
        // between the NameServer's list just before and just after it.
        Set<String> before = new TreeSet<>(NamesrvQueries.allTopics(admin));
        Set<String> listed = admin("topic-list").out().lines().map(String::trim).filter(l -> !l.isEmpty())
            .collect(Collectors.toCollection(TreeSet::new));
        Set<String> after = new TreeSet<>(NamesrvQueries.allTopics(admin));
        assertTrue(listed.containsAll(before), "topic-list misses topics the NameServer had before it ran: before="
            + before + " listed=" + listed);
        assertTrue(after.containsAll(listed), "topic-list shows topics the NameServer does not have: after="
            + after + " listed=" + listed);
        assertTrue(listed.contains(topic), "topic-list contains " + topic);

        Cli route = admin("topic-route", "-t", topic);
        Set<List<String>> routeRows = route.rows().stream().map(m -> List.of(m.get("broker"), m.get("read"), m.get("write"),
            m.get("perm"), m.get("addresses"))).collect(Collectors.toSet());
        assertEquals(Set.of(List.of(A, "3", "3", "RW-", "0=" + cluster.brokerAddr(A)),
                List.of(B, "3", "3", "RW-", "0=" + cluster.brokerAddr(B))), routeRows,
            "topic-route rows [broker, read, write, perm, addresses]\n" + route);

        Cli status = admin("topic-status", "-t", topic);
        Map<String, List<String>> got = new TreeMap<>();
        status.rows().forEach(m -> got.put(m.get("broker") + ":" + m.get("queue"), List.of(m.get("min offset"),
            m.get("max offset"), m.get("last update"))));
        Map<String, List<String>> want = new TreeMap<>();
        for (String b : List.of(A, B)) {
            for (int q = 0; q < 3; q++) {
                List<MessageExt> msgs = FeatureClients.readQueue(reader, new MessageQueue(topic, b, q));
                List<SendResult> s = sent.getOrDefault(b + ":" + q, List.of());
                assertEquals(s.size(), msgs.size(), "messages read back from " + b + ":" + q);
                want.put(b + ":" + q, List.of("0", Integer.toString(s.size()),
                    msgs.isEmpty() ? "0" : Long.toString(msgs.get(msgs.size() - 1).getStoreTimestamp())));
            }
        }
        assertEquals(want, got, "topic-status rows broker:queue -> [min offset, max offset, last update]\n" + status);

        Cli missing = run("topic-route", "-t", Compat.unique("no-such-topic"));
        assertNotEquals(0, missing.exit(), "topic-route of an unknown topic exits 0: " + missing);
    }

    @Test
    void updateTopicAndDeleteTopicChangeTheRoutes() throws Exception {
        String made = Compat.unique("cli-made");
        Cli create = admin("update-topic", "-t", made, "-c", MultiBrokerCluster.CLUSTER, "-r", "2", "-w", "5", "-p", "6");
        for (String b : List.of(A, B)) {
            assertTrue(create.out().contains("create topic " + made + " on " + b + " (" + cluster.brokerAddr(b) + ") OK"),
                "update-topic output names " + b + ": " + create);
        }
        cluster.awaitRoute(made, List.of(A, B), 2, 5, PERM_RW);
        for (String b : List.of(A, B)) {
            var tc = admin.getAllTopicConfig(cluster.brokerAddr(b), 5_000).getTopicConfigTable().get(made);
            assertEquals(List.of(2, 5, PERM_RW), List.of(tc.getReadQueueNums(), tc.getWriteQueueNums(), tc.getPerm()),
                "topic config of " + made + " on " + b);
        }
        String onB = Compat.unique("cli-made-b");
        admin("update-topic", "-t", onB, "-b", cluster.brokerAddr(B), "-r", "1", "-w", "1", "-p", "6");
        cluster.awaitRoute(onB, List.of(B), 1, 1, PERM_RW);

        Cli delete = admin("delete-topic", "-t", made, "-c", MultiBrokerCluster.CLUSTER);
        assertTrue(delete.out().contains(made), "delete-topic output: " + delete);
        for (String b : List.of(A, B)) {
            assertFalse(admin.getAllTopicConfig(cluster.brokerAddr(b), 5_000).getTopicConfigTable().containsKey(made),
                b + " still has the config of " + made + " after delete-topic");
        }
        for (int i = 0; i < 2; i++) {
            DefaultMQAdminExt a = cluster.admin(i);
            int ns = i + 1;
            // mqadmin deleteTopic deletes in every NameServer given with -n (DeleteTopicSubCommand)
            Wait.until("NameServer " + ns + " to have no route of " + made, Duration.ofSeconds(10), () -> {
                cluster.assertAlive();
                return NamesrvQueries.routeOrNull(a, made);
            }, r -> r == null);
        }
        assertNull(NamesrvQueries.routeOrNull(admin, made), "route of " + made);
    }

    @Test
    void consumerProgressConnectionAndResetOffsetByTime() throws Exception {
        String group = Compat.unique("cg-cli");
        Deliveries got = new Deliveries();
        DefaultMQPushConsumer c = Clients.push(cluster.namesrvAddrs(), group, "cli", topic, "*", got.listener("cli"));
        int total = sent.values().stream().mapToInt(List::size).sum();
        try {
            c.start();
            Wait.until("the consumer to receive all " + total + " messages", Duration.ofSeconds(60), () -> {
                cluster.assertAlive();
                return got.keys().size();
            }, n -> n >= total);
            String clientId = FeatureClients.clientId(c);

            // consumer-connection: the online client, on each broker it heartbeats to
            Cli conn = admin("consumer-connection", "-g", group);
            Set<List<String>> connRows = conn.rows().stream().map(m -> List.of(m.get("client id"), m.get("language"),
                m.get("version"))).collect(Collectors.toSet());
            assertEquals(Set.of(List.of(clientId, "JAVA", Integer.toString(MQVersion.CURRENT_VERSION))), connRows,
                "consumer-connection rows [client id, language, version]\n" + conn);
            conn.rows().forEach(m -> assertTrue(m.get("address").startsWith("127.0.0.1:"),
                "client address in consumer-connection: " + conn));
            report("consumer-connection lists the one client %d time(s) (brokers: %s)", conn.rows().size(), List.of(A, B));
        } finally {
            c.shutdown(); // commits the offsets
        }
        Wait.until("the brokers to report the committed offsets of " + group, Duration.ofSeconds(10), () -> {
            var stats = admin.examineConsumeStats(group);
            return stats.getOffsetTable().entrySet().stream().filter(e -> e.getKey().getTopic().equals(topic))
                .allMatch(e -> e.getValue().getConsumerOffset() == e.getValue().getBrokerOffset());
        });

        // 2 + 1 more messages: lag 2 on broker-a:1, 1 on broker-b:2
        FeatureClients.ok(producer.send(Clients.message(topic, "TagC", "lag-a1-0", "lag"), new MessageQueue(topic, A, 1)), "lag");
        FeatureClients.ok(producer.send(Clients.message(topic, "TagC", "lag-a1-1", "lag"), new MessageQueue(topic, A, 1)), "lag");
        FeatureClients.ok(producer.send(Clients.message(topic, "TagC", "lag-b2-0", "lag"), new MessageQueue(topic, B, 2)), "lag");
        Wait.until("the 3 new messages to be readable", Duration.ofSeconds(10),
            () -> FeatureClients.readQueue(reader, new MessageQueue(topic, A, 1)).size()
                + FeatureClients.readQueue(reader, new MessageQueue(topic, B, 2)).size(), n -> n >= 3);

        Cli progress = admin("consumer-progress", "-g", group);
        Map<String, List<String>> rows = new TreeMap<>();
        progress.rows().stream().filter(m -> topic.equals(m.get("topic"))).forEach(m -> rows.put(m.get("broker") + ":"
            + m.get("queue"), List.of(m.get("broker offset"), m.get("consumer offset"), m.get("lag"))));
        Map<String, List<String>> want = new TreeMap<>();
        for (String b : List.of(A, B)) {
            for (int q = 0; q < 3; q++) {
                long consumed = sent.getOrDefault(b + ":" + q, List.of()).size();
                long extra = (b.equals(A) && q == 1) ? 2 : (b.equals(B) && q == 2) ? 1 : 0;
                want.put(b + ":" + q, List.of(Long.toString(consumed + extra), Long.toString(consumed), Long.toString(extra)));
            }
        }
        // like GET_CONSUME_STATS: every queue of the topic, also those that never had a message (offset 0)
        assertEquals(want, rows, "consumer-progress rows of " + topic + " broker:queue -> [broker offset, "
            + "consumer offset, lag]\n" + progress);
        assertTrue(progress.out().contains("total lag: 3"), "consumer-progress total line (3 messages behind)\n" + progress);
        report("consumer-progress of %s: %s", group, rows);

        // reset-offset-by-time needs the consumer online (the broker tells it); -1 = the end, 0 = the beginning
        Deliveries again = new Deliveries();
        DefaultMQPushConsumer c2 = Clients.push(cluster.namesrvAddrs(), group, "cli2", topic, "*", again.listener("cli2"));
        try {
            c2.start();
            Wait.until("the restarted consumer to hold the 6 queues of " + topic, Duration.ofSeconds(40), () -> {
                cluster.assertAlive();
                return Clients.allocated(c2, topic).size();
            }, n -> n == 6);
            Cli reset = admin("reset-offset-by-time", "-g", group, "-t", topic, "-s", "0");
            Map<String, String> newOffsets = new TreeMap<>();
            reset.rows().forEach(m -> newOffsets.put(m.get("broker") + ":" + m.get("queue"), m.get("new offset")));
            Map<String, String> zeros = new TreeMap<>();
            for (String b : List.of(A, B)) {
                for (int q = 0; q < 3; q++) {
                    zeros.put(b + ":" + q, "0");
                }
            }
            assertEquals(zeros, newOffsets, "reset-offset-by-time -s 0 rows broker:queue -> new offset\n" + reset);
            Map<String, String> wantEnds = new TreeMap<>();
            want.forEach((bq, l) -> wantEnds.put(bq, l.get(0)));
            // "-1 for the end" (its help): as --timestamp=-1, then the way the help shows it, -s -1
            for (List<String> form : List.of(List.of("--timestamp=-1"), List.of("-s", "-1"))) {
                List<String> args = new ArrayList<>(List.of("reset-offset-by-time", "-g", group, "-t", topic));
                args.addAll(form);
                Cli toEnd = admin(args.toArray(String[]::new));
                Map<String, String> ends = new TreeMap<>();
                toEnd.rows().forEach(m -> ends.put(m.get("broker") + ":" + m.get("queue"), m.get("new offset")));
                assertEquals(wantEnds, ends, "reset-offset-by-time " + form + " rows broker:queue -> new offset (the max "
                    + "offsets)\n" + toEnd);
            }
        } finally {
            Clients.shutdownInBackground("consumer " + group, c2::shutdown);
        }
    }

    @Test
    void queryMsgByKeyAndByIdShowTheStoredMessages() throws Exception {
        Cli byKey = admin("query-msg-by-key", "-t", topic, "-k", sharedKey);
        Map<String, Map<String, String>> shown = parseMessages(byKey.out());
        Map<String, SendResult> want = new TreeMap<>();
        withSharedKey.forEach(r -> want.put(r.getOffsetMsgId(), r));
        assertEquals(want.keySet(), shown.keySet(), "msgIds query-msg-by-key printed for " + sharedKey + "\n" + byKey);
        for (var e : shown.entrySet()) {
            checkShown("query-msg-by-key", e.getValue(), want.get(e.getKey()));
        }

        SendResult onB = sent.get(B + ":1").get(2);
        Cli byId = admin("query-msg-by-id", "-i", onB.getOffsetMsgId());
        Map<String, Map<String, String>> one = parseMessages(byId.out());
        assertEquals(Set.of(onB.getOffsetMsgId()), one.keySet(), "query-msg-by-id printed\n" + byId);
        checkShown("query-msg-by-id", one.get(onB.getOffsetMsgId()), onB);

        Cli none = admin("query-msg-by-key", "-t", topic, "-k", Compat.unique("no-such-key"));
        assertTrue(none.out().contains("no message found"), "query-msg-by-key of an unknown key\n" + none);
    }

    /** Checks one message block of query output against the send it came from. */
    void checkShown(String what, Map<String, String> shown, SendResult r) throws Exception {
        MessageExt stored = admin.viewMessage(topic, r.getOffsetMsgId());
        Map<String, String> want = new TreeMap<>();
        want.put("topic", topic);
        want.put("queue", Integer.toString(r.getMessageQueue().getQueueId()));
        want.put("queueOffset", Long.toString(r.getQueueOffset()));
        want.put("keys", stored.getKeys());
        want.put("tags", "TagC");
        want.put("uniqKey", r.getMsgId());
        want.put("storeTime", Long.toString(stored.getStoreTimestamp()));
        want.put("reconsumeTimes", "0");
        want.put("body", stored.getBody().length + " bytes");
        Map<String, String> got = new TreeMap<>(shown);
        got.keySet().retainAll(want.keySet());
        assertEquals(want, got, what + ": fields printed for " + r.getOffsetMsgId() + " (" + shown + ")");
    }

    /**
     * Parses the message blocks of query output ({@code msgId: …}, then lines of {@code name: value}
     * pairs separated by two spaces) into msgId -> fields.
     */
    static Map<String, Map<String, String>> parseMessages(String out) {
        Map<String, Map<String, String>> messages = new LinkedHashMap<>();
        Map<String, String> current = null;
        for (String line : out.lines().toList()) {
            if (line.isBlank()) {
                continue;
            }
            for (String pair : line.trim().split(" {2,}")) {
                int colon = pair.indexOf(": ");
                String name = colon < 0 ? pair : pair.substring(0, colon);
                String value = colon < 0 ? "" : pair.substring(colon + 2);
                if (name.equals("msgId")) {
                    current = new LinkedHashMap<>();
                    messages.put(value, current);
                } else if (current != null) {
                    current.put(name, value);
                }
            }
        }
        return messages;
    }
}
