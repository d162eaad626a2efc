package dev.ferrocket.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import com.alibaba.fastjson.JSONArray;
import com.alibaba.fastjson.JSONObject;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.stream.Stream;
import java.util.zip.Deflater;
import org.apache.rocketmq.common.UtilAll;
import org.apache.rocketmq.common.message.MessageClientIDSetter;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.sysflag.MessageSysFlag;
import org.apache.rocketmq.store.AppendMessageResult;
import org.apache.rocketmq.store.config.FlushDiskType;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The store directory is shared with the Java broker (issue "Store ... byte-compatible with the Java
 * broker", item 7): a directory written by the official {@code DefaultMessageStore} is read by
 * {@code ferrocket store dump}, and one written by {@code ferrocket store load} is opened, read,
 * queried by key and appended to by the Java store; ferrocket appends to a Java-written store and
 * the Java store reads it all back; delayed messages carry the Java delivery time in their
 * ConsumeQueue units; each store refuses a directory the other holds (lock file). Small files make
 * every kind of file roll: several CommitLog segments (with END_OF_FILE blanks), several
 * ConsumeQueue files for one queue, several IndexFiles. See "Store interoperability" in the README.
 */
@ExtendWith(DumpLogsOnFailure.class)
class StoreInteropTest {
    /**
     * 256 KiB CommitLog segments, 100-unit ConsumeQueue files, IndexFiles of 100 slots and 1,000
     * entries (one fills in several milliseconds: IndexFiles are named by their creation time).
     */
    static final JavaStore.Sizes SIZES = new JavaStore.Sizes(256 * 1024, 20 * 100, 100, 1000);

    static final String ORDERS = "interop-orders";
    static final String AUDIT = "interop-audit";
    static final String RETRY = "%RETRY%interop-group";
    static final String FRESH = "interop-fresh";
    /** 140 characters: written as a MessageVersion V2 record (5.x only). */
    static final String LONG_TOPIC = "%RETRY%" + "interop-long-group-".repeat(7);
    static final InetSocketAddress STORE_HOST = new InetSocketAddress("127.0.0.1", 10911);
    static final InetSocketAddress STORE_HOST_V6 = new InetSocketAddress("::1", 10911);
    /** What the broker's SendMessageProcessor adds to a batch (the store appends it to each message). */
    static final Map<String, String> BATCH_PROPERTIES = Map.of("CLUSTER", "compat-cluster");
    /** IndexService answers at most maxMsgsNumBatch (64) offsets per query. */
    static final int QUERY_MAX = 64;

    // ---------------------------------------------------------------------------------------------
    // 1. Java writes, ferrocket reads; ferrocket appends to a Java-written store, Java reads it all

    @Test
    void javaWrittenStoreIsDumpedIdenticallyByFerrocket() throws Exception {
        Path dir = TestDirs.fresh("store-java-written");
        JavaWritten java = writeWithJava(dir, corpus(1, 600));

        List<StoreMessage> dump = FerrocketStoreTool.dump(dir, SIZES);
        assertSameMessages("ferrocket store dump of the Java-written " + dir, java.messages(), dump, true);
    }

    @Test
    void ferrocketAppendsToAJavaWrittenStoreAndJavaReadsEverything() throws Exception {
        Path dir = TestDirs.fresh("store-java-then-ferrocket");
        JavaWritten java = writeWithJava(dir, corpus(3, 600));

        // ferrocket appends where the Java store stopped.
        List<Item> more = List.of(
            new Single(message(ORDERS, 0, 9001, "appended by ferrocket".getBytes(StandardCharsets.UTF_8),
                props("TAGS", "TagA", "KEYS", "appended-1 shared-append", "UNIQ_KEY", MessageClientIDSetter.createUniqID()))),
            new Batch(List.of(
                message(AUDIT, 1, 9002, new byte[0], props("KEYS", "appended-2 shared-append")),
                message(AUDIT, 1, 9003, "b".getBytes(StandardCharsets.UTF_8), props("TAGS", "TagB", "KEYS", "appended-3")))),
            new Single(message(FRESH, 3, 9004, "new topic".getBytes(StandardCharsets.UTF_8),
                props("KEYS", "appended-4", "UNIQ_KEY", MessageClientIDSetter.createUniqID()))));
        List<StoreMessage> appended = FerrocketStoreTool.load(dir, SIZES, loadLines(more));
        List<StoreMessage> moreFlat = flatten(more);
        assertEquals(moreFlat.size(), appended.size(), "messages ferrocket printed after appending to a Java store");
        assertSameMessages("ferrocket's appended messages against its input", moreFlat, appended, false);
        assertEquals(maxQueueOffset(java.messages(), ORDERS, 0) + 1, appended.get(0).queueOffset(),
            "queueOffset ferrocket assigned after the Java store's last message in " + ORDERS + "/0");
        assertEquals(maxQueueOffset(java.messages(), AUDIT, 1) + 1, appended.get(1).queueOffset(),
            "queueOffset ferrocket assigned after the Java store's last message in " + AUDIT + "/1");
        assertEquals(appended.get(1).queueOffset() + 1, appended.get(2).queueOffset(), "second message of the batch");
        assertEquals(0, appended.get(3).queueOffset(), "queueOffset of a new queue");
        assertFalse(Files.exists(dir.resolve("abort")), "ferrocket shut down cleanly (no abort file)");

        List<StoreMessage> all = new ArrayList<>(java.messages());
        all.addAll(appended);
        try (JavaStore reopened = JavaStore.open(dir, SIZES, FlushDiskType.ASYNC_FLUSH)) {
            assertNextRecordOffset(java.maxPhyOffset(), appended.get(0), reopened);
            assertJavaReads(reopened, all);
        }
    }

    /** What the Java store holds after writing a corpus (read back through getMessage), and its CommitLog end. */
    record JavaWritten(List<StoreMessage> messages, long maxPhyOffset) {
    }

    /**
     * Writes {@code corpus} with the Java store (putMessage, putMessages for batches), checks that
     * it reads back what was put, shuts it down and keeps a copy of the directory
     * ({@code <dir>-as-java-left-it}).
     */
    static JavaWritten writeWithJava(Path dir, List<Item> corpus) throws Exception {
        List<StoreMessage> javaView = new ArrayList<>();
        long javaMaxPhyOffset;
        try (JavaStore java = JavaStore.open(dir, SIZES, FlushDiskType.ASYNC_FLUSH)) {
            List<StoreMessage> expectedFromPuts = new ArrayList<>();
            for (Item item : corpus) {
                if (item instanceof Single s) {
                    AppendMessageResult r = java.put(s.message()).getAppendMessageResult();
                    expectedFromPuts.add(stored(s.message(), r.getLogicsOffset(), r.getWroteOffset(),
                        r.getStoreTimestamp(), Map.of()));
                } else {
                    Batch b = (Batch) item;
                    AppendMessageResult r = java.putBatch(b.messages(), BATCH_PROPERTIES).getAppendMessageResult();
                    for (int i = 0; i < b.messages().size(); i++) {
                        // offsets of the 2nd.. batch member are only known after reading back: -1
                        expectedFromPuts.add(stored(b.messages().get(i), r.getLogicsOffset() + i,
                            i == 0 ? r.getWroteOffset() : -1, -1, BATCH_PROPERTIES));
                    }
                }
            }
            java.awaitDispatched();
            for (var q : java.queues().entrySet()) {
                for (int queueId : q.getValue()) {
                    for (MessageExt m : java.readQueue(q.getKey(), queueId)) {
                        javaView.add(StoreMessage.of(m));
                    }
                }
            }
            // The reference is what the Java store holds; first make sure it is what was put.
            assertEquals(expectedFromPuts.size(), javaView.size(), "messages the Java store returns");
            Comparator<StoreMessage> byQueueOffset = Comparator.comparing(StoreMessage::topic)
                .thenComparingInt(StoreMessage::queueId).thenComparingLong(StoreMessage::queueOffset);
            expectedFromPuts.sort(byQueueOffset);
            javaView.sort(byQueueOffset);
            assertSameMessages("Java store read back against what was put", expectedFromPuts, javaView, false);
            javaMaxPhyOffset = java.store().getMaxPhyOffset();
        }
        assertFalse(Files.exists(dir.resolve("abort")), "the Java store shut down cleanly (no abort file)");
        assertRolled(dir, javaView);
        keepCopy(dir, "as-java-left-it");
        return new JavaWritten(javaView, javaMaxPhyOffset);
    }

    // ---------------------------------------------------------------------------------------------
    // 2. ferrocket writes, Java reads (and appends, and ferrocket reads Java's appends)

    @Test
    void ferrocketWrittenStoreIsReadQueriedAndExtendedByJava() throws Exception {
        Path dir = TestDirs.fresh("store-ferrocket-written");
        List<Item> corpus = corpus(2, 600);
        List<StoreMessage> input = flatten(corpus);

        long before = System.currentTimeMillis();
        List<StoreMessage> printed = FerrocketStoreTool.load(dir, SIZES, loadLines(corpus));
        long after = System.currentTimeMillis();
        assertEquals(input.size(), printed.size(), "messages ferrocket printed back");
        assertSameMessages("ferrocket store load output against its input", input, printed, false);
        Map<String, Long> next = new HashMap<>();
        long lastCommitLogOffset = -1;
        for (StoreMessage m : printed) {
            long expected = next.merge(m.topic() + "/" + m.queueId(), 1L, Long::sum) - 1;
            assertEquals(expected, m.queueOffset(), "queueOffset of " + m.id());
            assertTrue(m.commitLogOffset() > lastCommitLogOffset, "commitLogOffset grows: " + m.id());
            lastCommitLogOffset = m.commitLogOffset();
            assertTrue(m.storeTimestamp() >= before - 1000 && m.storeTimestamp() <= after + 1000,
                "storeTimestamp " + m.storeTimestamp() + " of " + m.id() + " is the time of the run ["
                    + before + ", " + after + "]");
        }
        assertFalse(Files.exists(dir.resolve("abort")), "ferrocket shut down cleanly (no abort file)");
        assertRolled(dir, printed);
        keepCopy(dir, "as-ferrocket-left-it");

        List<StoreMessage> javaAppended = new ArrayList<>();
        try (JavaStore java = JavaStore.open(dir, SIZES, FlushDiskType.SYNC_FLUSH)) {
            long ferrocketEnd = assertJavaReads(java, printed);

            // The Java store appends where ferrocket stopped.
            StoreMessage single = message(ORDERS, 1, 7001, "appended by Java".getBytes(StandardCharsets.UTF_8),
                props("TAGS", "TagB", "KEYS", "java-appended-1", "UNIQ_KEY", MessageClientIDSetter.createUniqID()));
            AppendMessageResult r = java.put(single).getAppendMessageResult();
            assertEquals(maxQueueOffset(printed, ORDERS, 1) + 1, r.getLogicsOffset(),
                "queueOffset the Java store assigned after ferrocket's last message in " + ORDERS + "/1");
            List<StoreMessage> batch = List.of(
                message(FRESH, 0, 7002, new byte[0], props("KEYS", "java-appended-2")),
                message(FRESH, 0, 7002, "x".getBytes(StandardCharsets.UTF_8), props("TAGS", "TagA", "KEYS", "java-appended-3")));
            AppendMessageResult rb = java.putBatch(batch, BATCH_PROPERTIES).getAppendMessageResult();
            assertEquals(0, rb.getLogicsOffset(), "queueOffset of a new queue");
            java.awaitDispatched();
            MessageExt first = java.lookMessageByOffset(r.getWroteOffset());
            assertNotNull(first, "the Java store reads its own appended message");
            assertTrue(r.getWroteOffset() == ferrocketEnd
                    || (r.getWroteOffset() == nextSegment(ferrocketEnd)
                        && remaining(ferrocketEnd) < first.getStoreSize() + 8),
                "the Java store appended at " + r.getWroteOffset() + ", ferrocket's data ends at " + ferrocketEnd);
            javaAppended.add(StoreMessage.of(first));
            for (MessageExt m : java.readQueue(FRESH, 0)) {
                javaAppended.add(StoreMessage.of(m));
            }
            assertEquals(3, javaAppended.size(), "messages the Java store appended");
        }
        assertFalse(Files.exists(dir.resolve("abort")), "the Java store shut down cleanly (no abort file)");

        List<StoreMessage> all = new ArrayList<>(printed);
        all.addAll(javaAppended);
        List<StoreMessage> dump = FerrocketStoreTool.dump(dir, SIZES);
        assertSameMessages("ferrocket store dump of " + dir + " after the Java store appended", all, dump, true);
    }

    @Test
    void delayedMessagesCarryTheJavaDeliveryTimeInTheConsumeQueue() throws Exception {
        Path dir = TestDirs.fresh("store-ferrocket-delayed");
        List<Item> items = delayed();
        List<StoreMessage> printed = FerrocketStoreTool.load(dir, SIZES, loadLines(items));
        assertSameMessages("ferrocket store load output against its input", flatten(items), printed, false);
        try (JavaStore java = JavaStore.open(dir, SIZES, FlushDiskType.ASYNC_FLUSH)) {
            assertJavaReads(java, printed);
        }
    }

    // ---------------------------------------------------------------------------------------------
    // 3. The lock file: one store process per directory, whichever implementation

    @Test
    void javaStoreRefusesADirectoryFerrocketHasOpen() throws Exception {
        Path dir = TestDirs.fresh("store-held-by-ferrocket");
        try (FerrocketStoreTool.Running ferrocket = FerrocketStoreTool.startLoad(dir, SIZES)) {
            Wait.until("ferrocket store load to open " + dir + " (abort file written)", Duration.ofSeconds(15),
                () -> Files.exists(dir.resolve("abort")) || !ferrocket.isAlive());
            assertTrue(ferrocket.isAlive(), "ferrocket store load keeps the store open while its stdin is open; see "
                + ferrocket.log());
            Exception refused = null;
            try (JavaStore java = JavaStore.open(dir, SIZES, FlushDiskType.ASYNC_FLUSH)) {
                assertNotNull(java);
            } catch (Exception e) {
                refused = e;
            }
            assertNotNull(refused, "the Java DefaultMessageStore started on " + dir + " while ferrocket had it open:"
                + " its start() took <dir>/lock (FileChannel.tryLock(0, 1, false)) although ferrocket held that file");
            assertTrue(String.valueOf(refused.getMessage()).contains("Lock failed"),
                "the Java store refused the directory because of the lock: " + refused);
        }
    }

    @Test
    void ferrocketRefusesADirectoryTheJavaStoreHasOpen() throws Exception {
        Path dir = TestDirs.fresh("store-held-by-java");
        try (JavaStore java = JavaStore.open(dir, SIZES, FlushDiskType.ASYNC_FLUSH)) {
            java.put(message(ORDERS, 0, 1, "held".getBytes(StandardCharsets.UTF_8), props("KEYS", "held")));
            java.awaitDispatched();
            FerrocketStoreTool.Result r = FerrocketStoreTool.exec("dump", dir, SIZES, List.of());
            assertNotEquals(0, r.exitCode(), "ferrocket store dump opened " + dir + " while the Java store held"
                + " <dir>/lock (FileChannel.tryLock(0, 1, false), a POSIX record lock on byte 0) and printed "
                + r.stdout().size() + " message(s); it must refuse the directory\n" + r.logTail());
        }
    }

    // ---------------------------------------------------------------------------------------------
    // Reading through the Java store

    /**
     * Everything the Java store can say about {@code expected} (the complete content of the store):
     * the set of queues, min/max offset of each, getMessage over each queue (contiguous offsets,
     * identical messages, body CRC), the ConsumeQueue units (offset, size, tagsCode),
     * lookMessageByOffset, queryMessage by every key and UNIQ_KEY, and the CommitLog end.
     * Returns the CommitLog end offset.
     */
    static long assertJavaReads(JavaStore java, List<StoreMessage> expected) {
        Generation gen = Generation.current();
        TreeMap<String, TreeMap<Integer, TreeMap<Long, StoreMessage>>> byQueue = new TreeMap<>();
        for (StoreMessage m : expected) {
            StoreMessage previous = byQueue.computeIfAbsent(m.topic(), t -> new TreeMap<>())
                .computeIfAbsent(m.queueId(), q -> new TreeMap<>()).put(m.queueOffset(), m);
            assertEquals(null, previous, "two expected messages at " + m.id());
        }
        TreeMap<String, TreeSet<Integer>> expectedQueues = new TreeMap<>();
        byQueue.forEach((t, qs) -> expectedQueues.put(t, new TreeSet<>(qs.keySet())));
        // Every expected queue is loaded; any other queue is one the Java store made up itself and
        // is empty (4.9's ScheduleMessageService creates SCHEDULE_TOPIC_XXXX 0..17 in memory).
        TreeMap<String, TreeSet<Integer>> loaded = java.queues();
        TreeMap<String, TreeSet<Integer>> loadedNonEmpty = new TreeMap<>();
        loaded.forEach((t, qs) -> qs.forEach(q -> {
            if (java.store().getMaxOffsetInQueue(t, q) > 0) {
                loadedNonEmpty.computeIfAbsent(t, x -> new TreeSet<>()).add(q);
            }
        }));
        assertEquals(expectedQueues, loadedNonEmpty, "non-empty ConsumeQueues the Java store loaded (all: " + loaded + ")");

        List<String> problems = new ArrayList<>();
        for (StoreMessage e : expected) {
            int magic = recordMagic(java.dir(), e.commitLogOffset());
            int want = e.topic().length() > 127 ? MAGIC_V2 : MAGIC_V1;
            if (magic != want) {
                problems.add(String.format("MAGICCODE of %s: expected 0x%08X, actual 0x%08X", e.id(), want, magic));
            }
        }
        failIfAny("record versions in the CommitLog of " + java.dir(), problems);

        long end = 0;
        for (var topic : byQueue.entrySet()) {
            for (var queue : topic.getValue().entrySet()) {
                String t = topic.getKey();
                int q = queue.getKey();
                TreeMap<Long, StoreMessage> want = queue.getValue();
                assertEquals(0L, want.firstKey(), "expected messages of " + t + "/" + q + " start at 0");
                assertEquals(want.lastKey() + 1, want.size(), "expected messages of " + t + "/" + q + " are contiguous");
                assertEquals(0L, java.store().getMinOffsetInQueue(t, q), "Java getMinOffsetInQueue(" + t + ", " + q + ")");
                assertEquals((long) want.size(), java.store().getMaxOffsetInQueue(t, q),
                    "Java getMaxOffsetInQueue(" + t + ", " + q + ")");
                List<MessageExt> got = java.readQueue(t, q);
                for (int i = 0; i < got.size(); i++) {
                    MessageExt m = got.get(i);
                    StoreMessage actual = StoreMessage.of(m);
                    if (m.getQueueOffset() != i) {
                        problems.add(t + "/" + q + ": getMessage returned queueOffset " + m.getQueueOffset()
                            + " in position " + i);
                    }
                    StoreMessage e = want.get(m.getQueueOffset());
                    if (e == null) {
                        problems.add("unexpected message from getMessage: " + actual);
                        continue;
                    }
                    for (String d : e.differences(actual, true)) {
                        problems.add("getMessage " + e.id() + ": " + d);
                    }
                    if (m.getBodyCRC() != UtilAll.crc32(m.getBody())) {
                        problems.add("BODYCRC of " + e.id() + ": record holds " + m.getBodyCRC()
                            + ", CRC32 of the body is " + UtilAll.crc32(m.getBody()));
                    }
                    long[] unit = gen.consumeQueueUnit(java.store(), t, q, m.getQueueOffset());
                    long[] wantUnit = {m.getCommitLogOffset(), m.getStoreSize(), expectedTagsCode(java, e)};
                    if (unit == null || !Arrays.equals(unit, wantUnit)) {
                        problems.add("ConsumeQueue unit of " + e.id() + ": expected {commitLogOffset, size, tagsCode} = "
                            + Arrays.toString(wantUnit) + ", actual " + Arrays.toString(unit)
                            + " (TAGS " + e.tags() + ")");
                    }
                    end = Math.max(end, m.getCommitLogOffset() + m.getStoreSize());
                }
                if (got.size() != want.size()) {
                    problems.add(t + "/" + q + ": getMessage returned " + got.size() + " messages, expected " + want.size());
                }
            }
        }
        failIfAny("reading " + java.dir() + " through the Java store's getMessage", problems);

        for (StoreMessage e : expected) {
            MessageExt m = java.lookMessageByOffset(e.commitLogOffset());
            if (m == null) {
                problems.add("lookMessageByOffset(" + e.commitLogOffset() + ") found nothing for " + e.id());
            } else {
                for (String d : e.differences(StoreMessage.of(m), true)) {
                    problems.add("lookMessageByOffset " + e.id() + ": " + d);
                }
            }
        }
        failIfAny("the Java store's lookMessageByOffset on " + java.dir(), problems);

        // "query by key": every KEYS entry and the UNIQ_KEY of each message, per topic.
        Map<String, Map<String, TreeSet<Long>>> keyIndex = new TreeMap<>();
        for (StoreMessage e : expected) {
            List<String> keys = new ArrayList<>(e.keys());
            if (e.uniqKey() != null) {
                keys.add(e.uniqKey());
            }
            for (String k : keys) {
                keyIndex.computeIfAbsent(e.topic(), t -> new TreeMap<>())
                    .computeIfAbsent(k, x -> new TreeSet<>()).add(e.commitLogOffset());
            }
        }
        Map<Long, StoreMessage> byOffset = new HashMap<>();
        expected.forEach(e -> byOffset.put(e.commitLogOffset(), e));
        int queries = 0;
        for (var topic : keyIndex.entrySet()) {
            for (var key : topic.getValue().entrySet()) {
                assertTrue(key.getValue().size() <= QUERY_MAX, "the corpus keeps each key under " + QUERY_MAX);
                List<MessageExt> found = java.queryByKey(topic.getKey(), key.getKey(), QUERY_MAX);
                List<Long> offsets = found.stream().map(MessageExt::getCommitLogOffset).sorted().toList();
                queries++;
                if (!offsets.equals(new ArrayList<>(key.getValue()))) {
                    problems.add("queryMessage(" + topic.getKey() + ", " + key.getKey() + ") returned commitLogOffsets "
                        + offsets + ", expected " + key.getValue());
                    continue;
                }
                for (MessageExt m : found) {
                    for (String d : byOffset.get(m.getCommitLogOffset()).differences(StoreMessage.of(m), true)) {
                        problems.add("queryMessage(" + topic.getKey() + ", " + key.getKey() + "): " + d);
                    }
                }
            }
        }
        failIfAny("the Java store's queryMessage over " + queries + " keys on " + java.dir(), problems);

        assertEquals(0L, java.store().getMinPhyOffset(), "Java getMinPhyOffset");
        assertEquals(end, java.store().getMaxPhyOffset(),
            "Java getMaxPhyOffset = end of the last record (recovery kept every record and nothing else)");
        return end;
    }

    /**
     * What the Java store's dispatch (CommitLog.checkMessageAndReturnSize) puts in a ConsumeQueue
     * unit: the Java hash of TAGS, except in SCHEDULE_TOPIC_XXXX for DELAY > 0, the delivery time.
     */
    static long expectedTagsCode(JavaStore java, StoreMessage e) {
        String delay = e.properties().get("DELAY");
        if (SCHEDULE_TOPIC.equals(e.topic()) && delay != null && Integer.parseInt(delay) > 0) {
            return Generation.current().deliverTimestamp(java.store(), Integer.parseInt(delay), e.storeTimestamp());
        }
        return Generation.current().tagsCode(e.tags());
    }

    /** ferrocket's first record after the Java store's end: at the end, or at the next segment if it did not fit. */
    static void assertNextRecordOffset(long javaEnd, StoreMessage appended, JavaStore java) {
        MessageExt m = java.lookMessageByOffset(appended.commitLogOffset());
        assertNotNull(m, "the Java store reads ferrocket's appended record at " + appended.commitLogOffset());
        assertTrue(appended.commitLogOffset() == javaEnd
                || (appended.commitLogOffset() == nextSegment(javaEnd) && remaining(javaEnd) < m.getStoreSize() + 8),
            "ferrocket appended at " + appended.commitLogOffset() + ", the Java store's data ended at " + javaEnd
                + " (" + remaining(javaEnd) + " bytes left in that segment, record of " + m.getStoreSize() + " bytes)");
    }

    static final int MAGIC_V1 = 0xDAA320A7;
    static final int MAGIC_V2 = 0xDAA320AB;

    /** The MAGICCODE (bytes 4..8) of the record at {@code offset}, read from the segment file. */
    static int recordMagic(Path dir, long offset) {
        long segment = offset / SIZES.commitLogFileSize() * SIZES.commitLogFileSize();
        Path file = dir.resolve("commitlog").resolve(String.format("%020d", segment));
        try (FileChannel channel = FileChannel.open(file, StandardOpenOption.READ)) {
            ByteBuffer magic = ByteBuffer.allocate(4);
            channel.read(magic, offset - segment + 4);
            return magic.flip().getInt();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + file, e);
        }
    }

    static long nextSegment(long offset) {
        return (offset / SIZES.commitLogFileSize() + 1) * SIZES.commitLogFileSize();
    }

    static long remaining(long offset) {
        return SIZES.commitLogFileSize() - offset % SIZES.commitLogFileSize();
    }

    // ---------------------------------------------------------------------------------------------
    // Comparison helpers

    /**
     * {@code actual} holds exactly the messages of {@code expected}: matched by commitLogOffset when
     * {@code storeAssigned} (then every field is compared), else in order (store-assigned fields
     * skipped; an expected commitLogOffset or queueOffset >= 0 is still compared).
     */
    static void assertSameMessages(String what, List<StoreMessage> expected, List<StoreMessage> actual,
        boolean storeAssigned) {
        List<String> problems = new ArrayList<>();
        if (storeAssigned) {
            Map<Long, StoreMessage> byOffset = new LinkedHashMap<>();
            for (StoreMessage a : actual) {
                StoreMessage dup = byOffset.put(a.commitLogOffset(), a);
                if (dup != null) {
                    problems.add("commitLogOffset " + a.commitLogOffset() + " appears twice: " + dup.id() + ", " + a.id());
                }
            }
            for (StoreMessage e : expected) {
                StoreMessage a = byOffset.remove(e.commitLogOffset());
                if (a == null) {
                    problems.add("missing: " + e);
                } else {
                    e.differences(a, true).forEach(d -> problems.add(e.id() + ": " + d));
                }
            }
            byOffset.values().forEach(a -> problems.add("extra: " + a));
        } else {
            if (expected.size() != actual.size()) {
                problems.add(actual.size() + " messages, expected " + expected.size());
            }
            for (int i = 0; i < Math.min(expected.size(), actual.size()); i++) {
                StoreMessage e = expected.get(i);
                StoreMessage a = actual.get(i);
                String where = "#" + i + " " + a.id() + ": ";
                e.differences(a, false).forEach(d -> problems.add(where + d));
                if (e.commitLogOffset() >= 0 && e.commitLogOffset() != a.commitLogOffset()) {
                    problems.add("#" + i + " " + a.id() + ": commitLogOffset expected " + e.commitLogOffset());
                }
                if (e.queueOffset() >= 0 && e.queueOffset() != a.queueOffset()) {
                    problems.add("#" + i + " " + a.id() + ": queueOffset expected " + e.queueOffset());
                }
                if (e.storeTimestamp() >= 0 && e.storeTimestamp() != a.storeTimestamp()) {
                    problems.add("#" + i + " " + a.id() + ": storeTimestamp expected " + e.storeTimestamp()
                        + ", actual " + a.storeTimestamp());
                }
            }
        }
        failIfAny(what + " (" + expected.size() + " messages expected)", problems);
    }

    static void failIfAny(String what, List<String> problems) {
        if (!problems.isEmpty()) {
            StringBuilder text = new StringBuilder(what + ": " + problems.size() + " problem(s)");
            problems.stream().limit(40).forEach(p -> text.append("\n  ").append(p));
            if (problems.size() > 40) {
                text.append("\n  ...");
            }
            fail(text.toString());
        }
    }

    /** The corpus rolled every kind of file: several CommitLog segments, ConsumeQueue files and IndexFiles. */
    static void assertRolled(Path dir, List<StoreMessage> messages) throws IOException {
        long lastOffset = messages.stream().mapToLong(StoreMessage::commitLogOffset).max().orElse(0);
        assertTrue(lastOffset >= 2L * SIZES.commitLogFileSize(),
            "the corpus fills more than two CommitLog segments (last record at " + lastOffset + ")");
        assertTrue(files(dir.resolve("consumequeue").resolve(ORDERS).resolve("0")) >= 2,
            "more than one ConsumeQueue file in " + ORDERS + "/0");
        assertTrue(files(dir.resolve("index")) >= 2, "more than one IndexFile");
    }

    /** A copy of the directory as one store left it, next to it, for reproducing a failure by hand. */
    static void keepCopy(Path dir, String suffix) throws IOException {
        Path copy = dir.resolveSibling(dir.getFileName() + "-" + suffix);
        try (Stream<Path> s = Files.walk(dir)) {
            for (Path p : s.toList()) {
                Path target = copy.resolve(dir.relativize(p).toString());
                if (Files.isDirectory(p)) {
                    Files.createDirectories(target);
                } else {
                    Files.copy(p, target);
                }
            }
        }
    }

    static long files(Path dir) throws IOException {
        try (Stream<Path> s = Files.list(dir)) {
            return s.count();
        }
    }

    static long maxQueueOffset(List<StoreMessage> messages, String topic, int queueId) {
        return messages.stream().filter(m -> m.topic().equals(topic) && m.queueId() == queueId)
            .mapToLong(StoreMessage::queueOffset).max().orElse(-1);
    }

    /** The message as the store should hold it after the put. */
    static StoreMessage stored(StoreMessage m, long queueOffset, long commitLogOffset, long storeTimestamp,
        Map<String, String> extraProperties) {
        Map<String, String> props = new LinkedHashMap<>(m.properties());
        props.putAll(extraProperties);
        return new StoreMessage(m.topic(), m.queueId(), queueOffset, commitLogOffset, storeTimestamp,
            m.bornTimestamp(), m.bornHost(), m.storeHost(), m.flag(), m.sysFlag(), m.reconsumeTimes(),
            m.preparedTransactionOffset(), m.body(), props);
    }

    // ---------------------------------------------------------------------------------------------
    // The corpus

    sealed interface Item permits Single, Batch {
    }

    record Single(StoreMessage message) implements Item {
    }

    /** One putMessages / {"batch":[...]}: same topic, queue, sysFlag, born time and host. */
    record Batch(List<StoreMessage> messages) implements Item {
    }

    static final String SCHEDULE_TOPIC = "SCHEDULE_TOPIC_XXXX";

    /**
     * Delayed messages as the broker stores them (topic SCHEDULE_TOPIC_XXXX, queue = level - 1,
     * DELAY, REAL_TOPIC, REAL_QID): their ConsumeQueue tagsCode is the delivery time. Levels 1, 3
     * and 18 (the last), 25 (clamped to 18) and 0 (no delivery time: the TAGS hash stays).
     */
    static List<Item> delayed() {
        List<Item> items = new ArrayList<>();
        int[] levels = {1, 3, 18, 25, 0};
        for (int i = 0; i < levels.length; i++) {
            int level = levels[i];
            int queueId = Math.max(0, Math.min(level, 18) - 1);
            items.add(new Single(message(SCHEDULE_TOPIC, queueId, 5000 + i,
                ("delayed " + level).getBytes(StandardCharsets.UTF_8),
                props("TAGS", "TagA", "KEYS", "delayed-" + i, "UNIQ_KEY", MessageClientIDSetter.createUniqID(),
                    "DELAY", Integer.toString(level), "REAL_TOPIC", ORDERS, "REAL_QID", "1"))));
        }
        return items;
    }

    static List<StoreMessage> flatten(List<Item> items) {
        List<StoreMessage> out = new ArrayList<>();
        for (Item item : items) {
            if (item instanceof Single s) {
                out.add(s.message());
            } else {
                out.addAll(((Batch) item).messages());
            }
        }
        return out;
    }

    static List<JSONObject> loadLines(List<Item> items) {
        List<JSONObject> lines = new ArrayList<>();
        for (Item item : items) {
            if (item instanceof Single s) {
                lines.add(s.message().toLoadJson());
            } else {
                JSONArray batch = new JSONArray();
                ((Batch) item).messages().forEach(m -> batch.add(m.toLoadJson()));
                JSONObject line = new JSONObject();
                line.put("batch", batch);
                lines.add(line);
            }
        }
        return lines;
    }

    static Map<String, String> props(String... kv) {
        Map<String, String> m = new LinkedHashMap<>();
        for (int i = 0; i < kv.length; i += 2) {
            m.put(kv[i], kv[i + 1]);
        }
        return m;
    }

    static StoreMessage message(String topic, int queueId, long bornTimestamp, byte[] body, Map<String, String> props) {
        return StoreMessage.toWrite(topic, queueId, bornTimestamp, new InetSocketAddress("127.0.0.1", 40000),
            STORE_HOST, 0, 0, 0, 0, body, props);
    }

    /** Whether the corpus includes V2 records (long topics): only where the Java store knows them. */
    static final boolean V2 = Generation.current().storeSupportsMessageVersionV2();

    private static final String[] TAGS = {"TagA", "TagB", "TagA||TagB", "标签", "emoji-\uD83D\uDE00", "tag with space"};

    /**
     * {@code singles} single messages plus a batch of 5 after every 150: three topics (4, 2 and 1
     * queues; {@code ORDERS}/0 gets a third of everything so its ConsumeQueue rolls), bodies from
     * empty to 60 KiB (random bytes, text, zlib-compressed with COMPRESSED_FLAG), TAGS (multi-tag
     * with MULTI_TAGS_FLAG, non-ASCII, non-BMP), KEYS with several keys (some shared by up to ~30
     * messages of a topic, some non-ASCII), UNIQ_KEY on most, user properties (non-ASCII values, '='
     * and spaces), flags, reconsumeTimes, a few COMMIT-type messages with a prepared-transaction
     * offset, IPv6 born and store hosts; with 5.x also MessageVersion V2 records of a 140-character
     * retry topic (single and batch).
     */
    static List<Item> corpus(long seed, int singles) {
        Random random = new Random(seed);
        long base = 1_700_000_000_000L + seed * 86_400_000L;
        List<Item> items = new ArrayList<>();
        for (int i = 0; i < singles; i++) {
            String topic;
            int queueId;
            int reconsumeTimes = 0;
            if (i % 3 == 0) {
                topic = ORDERS;
                queueId = 0;
            } else if (i % 3 == 1) {
                topic = ORDERS;
                queueId = 1 + (i / 3) % 3;
            } else if (i % 6 == 2) {
                topic = AUDIT;
                queueId = (i / 6) % 2;
            } else {
                topic = RETRY;
                queueId = 0;
                reconsumeTimes = 1 + i % 3;
            }

            int sysFlag = 0;
            byte[] body;
            if (i % 13 == 5) {
                body = new byte[0];
            } else if (i % 97 == 7) {
                body = randomBytes(random, 60 * 1024);
            } else if (i % 10 == 0) {
                body = randomBytes(random, 6000);
            } else if (i % 29 == 3) {
                body = deflate(("compressed body " + i + " ").repeat(40).getBytes(StandardCharsets.UTF_8));
                sysFlag |= MessageSysFlag.COMPRESSED_FLAG;
            } else {
                body = ("message " + i + " ✓ " + "x".repeat(random.nextInt(200))).getBytes(StandardCharsets.UTF_8);
            }

            Map<String, String> props = new LinkedHashMap<>();
            if (i % 5 != 4) {
                String tags = TAGS[i % TAGS.length];
                props.put("TAGS", tags);
                if (tags.contains("||")) {
                    sysFlag |= MessageSysFlag.MULTI_TAGS_FLAG;
                }
            }
            if (i % 4 != 3) {
                StringBuilder keys = new StringBuilder("order-" + i + " cust-" + (i % 17));
                if (i % 25 == 0) {
                    keys.append(" hot");
                }
                if (i % 11 == 0) {
                    keys.append(" ключ-").append(i);
                }
                props.put("KEYS", keys.toString());
            }
            if (i % 6 != 1) {
                props.put("UNIQ_KEY", MessageClientIDSetter.createUniqID());
            }
            props.put("color", new String[] {"red", "green", "blue"}[i % 3]);
            if (i % 9 == 0) {
                props.put("unicode", "grüße ✓ 日本 \uD83D\uDE00");
            }
            if (i % 8 == 0) {
                props.put("spaces and = signs", "a=b c");
            }
            if (topic.equals(RETRY)) {
                props.put("RETRY_TOPIC", ORDERS);
            }

            long preparedTransactionOffset = 0;
            if (i % 31 == 4) {
                sysFlag |= MessageSysFlag.TRANSACTION_COMMIT_TYPE;
                preparedTransactionOffset = 4096L * i + 17;
            }
            InetSocketAddress bornHost = new InetSocketAddress("127.0.0.1", 30000 + i % 100);
            if (i % 37 == 9) {
                bornHost = new InetSocketAddress("::1", 40000 + i);
                sysFlag |= MessageSysFlag.BORNHOST_V6_FLAG;
            }
            InetSocketAddress storeHost = STORE_HOST;
            if (i % 53 == 11) {
                storeHost = STORE_HOST_V6;
                sysFlag |= MessageSysFlag.STOREHOSTADDRESS_V6_FLAG;
            }
            int flag = i % 7 == 0 ? random.nextInt() : 0;
            long bornTimestamp = base + i * 1234L;
            items.add(new Single(StoreMessage.toWrite(topic, queueId, bornTimestamp, bornHost, storeHost, flag,
                sysFlag, reconsumeTimes, preparedTransactionOffset, body, props)));

            if (V2 && i % 60 == 30) {
                // A long retry topic: MessageVersion V2 records (2-byte topic length).
                items.add(new Single(StoreMessage.toWrite(LONG_TOPIC, 0, bornTimestamp + 1, bornHost, STORE_HOST, 0,
                    sysFlag & MessageSysFlag.BORNHOST_V6_FLAG, 1, 0, ("v2 record " + i).getBytes(StandardCharsets.UTF_8),
                    props("TAGS", "TagA", "KEYS", "v2-" + i + " v2-shared", "UNIQ_KEY", MessageClientIDSetter.createUniqID()))));
            }
            if (V2 && i == 420) {
                List<StoreMessage> batch = new ArrayList<>();
                for (int j = 0; j < 3; j++) {
                    batch.add(StoreMessage.toWrite(LONG_TOPIC, 1, bornTimestamp + 2, new InetSocketAddress("127.0.0.1", 31001),
                        STORE_HOST, j, 0, 0, 0, j == 0 ? new byte[0] : ("v2 batch " + j).getBytes(StandardCharsets.UTF_8),
                        props("KEYS", "v2-batch-" + j + " v2-shared", "UNIQ_KEY", MessageClientIDSetter.createUniqID())));
                }
                items.add(new Batch(batch));
            }
            if (i % 150 == 149) {
                List<StoreMessage> batch = new ArrayList<>();
                int b = i / 150;
                for (int j = 0; j < 5; j++) {
                    Map<String, String> bp = new LinkedHashMap<>();
                    bp.put("TAGS", TAGS[j % TAGS.length]);
                    bp.put("KEYS", "batch-" + b + "-" + j + " cust-" + (j % 17) + " batch-" + b);
                    bp.put("UNIQ_KEY", MessageClientIDSetter.createUniqID());
                    if (j == 2) {
                        bp.put("unicode", "пакет");
                    }
                    byte[] bb = j == 1 ? new byte[0] : ("batch " + b + " message " + j).getBytes(StandardCharsets.UTF_8);
                    batch.add(StoreMessage.toWrite(ORDERS, 2, base + i * 1234L + 1, new InetSocketAddress("127.0.0.1", 31000),
                        STORE_HOST, j * 3, 0, 0, 0, bb, bp));
                }
                items.add(new Batch(batch));
            }
        }
        return items;
    }

    static byte[] randomBytes(Random random, int n) {
        byte[] b = new byte[n];
        random.nextBytes(b);
        return b;
    }

    static byte[] deflate(byte[] in) {
        Deflater d = new Deflater();
        d.setInput(in);
        d.finish();
        byte[] buf = new byte[in.length + 64];
        int n = d.deflate(buf);
        d.end();
        return Arrays.copyOf(buf, n);
    }
}
