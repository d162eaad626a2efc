package dev.ferrocket.bench;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import org.HdrHistogram.Histogram;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageQueue;

/**
 * Load generator on the official RocketMQ Java client (5.3.3) for benchmarks/run.sh.
 *
 * <pre>
 * create-topic --namesrv H:P --topic T[,T2...] [--queues 8] [--timeout-s 90]
 *     waits for TBW102's route, creates each T on every broker holding it (the client's
 *     MQAdminImpl.createTopic), waits until the NameServer routes T with that many write queues.
 * produce --namesrv H:P --topic T [--threads 32] [--size 1024] [--seconds 20] [--warmup-s 5]
 *         [--cpu-pid PID --clk-tck 100]
 *     one DefaultMQProducer, N threads of synchronous sends; only sends that complete inside
 *     the measured window (after the warm-up) count toward msgs_per_sec and the latencies.
 *     With --cpu-pid it reads that process's utime+stime from /proc at the window's edges.
 * consume --namesrv H:P --topic T --group G --count M [--timeout-s 180] [--cpu-pid PID --clk-tck 100]
 *     one DefaultMQPushConsumer (defaults, CONSUME_FROM_FIRST_OFFSET) until M messages arrived.
 * </pre>
 *
 * Prints exactly one JSON line on stdout; everything else goes to stderr.
 */
public final class LoadGen {
    private LoadGen() {
    }

    public static void main(String[] argv) throws Exception {
        if (argv.length == 0 || argv[0].equals("help") || argv[0].equals("--help")) {
            System.err.println("usage: loadgen create-topic|produce|consume --namesrv H:P --topic T [...] (see LoadGen.java)");
            System.exit(argv.length == 0 ? 2 : 0);
        }
        Map<String, String> opts = parse(argv);
        int rc;
        switch (argv[0]) {
            case "create-topic" -> rc = createTopic(opts);
            case "produce" -> rc = produce(opts);
            case "consume" -> rc = consume(opts);
            default -> {
                System.err.println("unknown mode " + argv[0]);
                rc = 2;
            }
        }
        System.exit(rc);
    }

    // ---------------------------------------------------------------- create-topic

    static int createTopic(Map<String, String> o) throws Exception {
        String[] topics = req(o, "topic").split(",");
        int queues = intOpt(o, "queues", 8);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(intOpt(o, "timeout-s", 90));
        DefaultMQProducer p = producer(o, "bench_admin");
        p.start();
        try {
            // TBW102 appears once the broker has registered (a 5.x Java broker may take ~10 s).
            awaitQueues(p, "TBW102", 1, deadline, "the broker's TBW102 route (is the broker registered?)");
            for (String topic : topics) {
                Exception last = null;
                do {
                    try {
                        p.createTopic("TBW102", topic, queues, new HashMap<>());
                        last = null;
                    } catch (Exception e) {
                        last = e;
                        Thread.sleep(500);
                    }
                } while (last != null && System.nanoTime() < deadline);
                if (last != null) {
                    throw last;
                }
            }
            for (String topic : topics) {
                awaitQueues(p, topic, queues, deadline, "route of " + topic + " with " + queues + " write queues");
            }
            Map<String, Object> out = new LinkedHashMap<>();
            out.put("mode", "create-topic");
            out.put("topics", String.join(",", topics));
            out.put("queues", queues);
            System.out.println(json(out));
            return 0;
        } finally {
            p.shutdown();
        }
    }

    static void awaitQueues(DefaultMQProducer p, String topic, int atLeast, long deadline, String what)
        throws InterruptedException {
        String lastError = "";
        while (System.nanoTime() < deadline) {
            try {
                List<MessageQueue> qs = p.fetchPublishMessageQueues(topic);
                if (qs.size() >= atLeast) {
                    return;
                }
                lastError = qs.size() + " queues";
            } catch (Exception e) {
                lastError = e.getMessage();
            }
            Thread.sleep(250);
        }
        throw new IllegalStateException("timed out waiting for " + what + "; last answer: " + lastError);
    }

    // ---------------------------------------------------------------- produce

    private static final int WARMUP = 0;
    private static final int MEASURE = 1;
    private static final int STOP = 2;

    static int produce(Map<String, String> o) throws Exception {
        String topic = req(o, "topic");
        int threads = intOpt(o, "threads", 32);
        int size = intOpt(o, "size", 1024);
        int seconds = intOpt(o, "seconds", 20);
        int warmup = intOpt(o, "warmup-s", 5);
        byte[] body = new byte[size];
        new Random(42).nextBytes(body);

        DefaultMQProducer p = producer(o, "bench_producer");
        p.start();
        AtomicInteger phase = new AtomicInteger(WARMUP);
        long[] window = new long[2]; // nanoTime of the measured window's start and end
        Histogram[] hist = new Histogram[threads];
        long[] okIn = new long[threads];
        long[] failedIn = new long[threads];
        AtomicLong okTotal = new AtomicLong();
        AtomicLong failedTotal = new AtomicLong();
        AtomicInteger errorsPrinted = new AtomicInteger();
        Map<String, AtomicLong> statuses = new java.util.concurrent.ConcurrentHashMap<>();
        List<Thread> workers = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            final int id = t;
            hist[t] = new Histogram(TimeUnit.MINUTES.toMicros(10), 3);
            Thread w = new Thread(() -> {
                while (phase.get() != STOP) {
                    long start = System.nanoTime();
                    boolean ok;
                    try {
                        SendResult r = p.send(new Message(topic, body));
                        ok = r.getSendStatus() == SendStatus.SEND_OK;
                        if (!ok) {
                            statuses.computeIfAbsent(r.getSendStatus().name(), k -> new AtomicLong()).incrementAndGet();
                        }
                    } catch (Exception e) {
                        ok = false;
                        statuses.computeIfAbsent(e.getClass().getSimpleName(), k -> new AtomicLong()).incrementAndGet();
                        if (errorsPrinted.incrementAndGet() <= 10) {
                            System.err.println("[loadgen] send failed: " + e);
                        }
                    }
                    long end = System.nanoTime();
                    (ok ? okTotal : failedTotal).incrementAndGet();
                    if (phase.get() == MEASURE && start >= window[0]) {
                        if (ok) {
                            okIn[id]++;
                            hist[id].recordValue(Math.min(TimeUnit.NANOSECONDS.toMicros(end - start),
                                hist[id].getHighestTrackableValue()));
                        } else {
                            failedIn[id]++;
                        }
                    }
                }
            }, "send-" + t);
            workers.add(w);
            w.start();
        }

        long pid = longOpt(o, "cpu-pid", -1);
        Thread.sleep(TimeUnit.SECONDS.toMillis(warmup));
        long cpu0 = pid > 0 ? cpuTicks(pid) : 0;
        long[] machine0 = {machineBusyTicks(), cpuTicks(ProcessHandle.current().pid())};
        window[0] = System.nanoTime();
        phase.set(MEASURE);
        Thread.sleep(TimeUnit.SECONDS.toMillis(seconds));
        long cpu1 = pid > 0 ? cpuTicks(pid) : 0;
        long[] machine1 = {machineBusyTicks(), cpuTicks(ProcessHandle.current().pid())};
        window[1] = System.nanoTime();
        phase.set(STOP);
        for (Thread w : workers) {
            w.join();
        }

        Histogram all = new Histogram(TimeUnit.MINUTES.toMicros(10), 3);
        long ok = 0;
        long failed = 0;
        for (int t = 0; t < threads; t++) {
            all.add(hist[t]);
            ok += okIn[t];
            failed += failedIn[t];
        }
        double secs = (window[1] - window[0]) / 1e9;
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("mode", "produce");
        out.put("client", "rocketmq-client-java-5.3.3");
        out.put("threads", threads);
        out.put("size", size);
        out.put("seconds", round(secs, 3));
        out.put("sent", ok);
        out.put("failed", failed);
        out.put("msgs_per_sec", round(ok / secs, 1));
        out.put("mb_per_sec", round(ok * (double) size / secs / (1024 * 1024), 2));
        out.put("p50_ms", ms(all.getValueAtPercentile(50)));
        out.put("p99_ms", ms(all.getValueAtPercentile(99)));
        out.put("p999_ms", ms(all.getValueAtPercentile(99.9)));
        out.put("max_ms", ms(all.getMaxValue()));
        out.put("total_sent", okTotal.get());
        out.put("total_failed", failedTotal.get());
        out.put("failures", statusMap(statuses));
        double tck = intOpt(o, "clk-tck", 100);
        if (pid > 0) {
            out.put("broker_cpu_s", round((cpu1 - cpu0) / tck, 3));
        }
        out.put("window_s", round(secs, 3));
        out.put("machine_busy_s", round((machine1[0] - machine0[0]) / tck, 3));
        out.put("client_cpu_s", round((machine1[1] - machine0[1]) / tck, 3));
        System.out.println(json(out));
        System.out.flush();
        p.shutdown();
        return 0;
    }

    // ---------------------------------------------------------------- consume

    static int consume(Map<String, String> o) throws Exception {
        String topic = req(o, "topic");
        String group = req(o, "group");
        long count = longOpt(o, "count", -1);
        if (count <= 0) {
            throw new IllegalArgumentException("--count must be > 0");
        }
        int timeout = intOpt(o, "timeout-s", 180);
        long pid = longOpt(o, "cpu-pid", -1);

        DefaultMQPushConsumer c = new DefaultMQPushConsumer(group);
        c.setNamesrvAddr(req(o, "namesrv"));
        c.setInstanceName("bench-consumer-" + ProcessHandle.current().pid());
        c.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        c.subscribe(topic, "*");
        AtomicLong received = new AtomicLong();
        AtomicLong firstAt = new AtomicLong();
        AtomicLong doneAt = new AtomicLong();
        CountDownLatch done = new CountDownLatch(1);
        c.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
            long now = System.nanoTime();
            firstAt.compareAndSet(0, now);
            long n = received.addAndGet(msgs.size());
            if (n >= count && doneAt.compareAndSet(0, now)) {
                done.countDown();
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        long cpu0 = pid > 0 ? cpuTicks(pid) : 0;
        long[] machine0 = {machineBusyTicks(), cpuTicks(ProcessHandle.current().pid())};
        long t0 = System.nanoTime();
        c.start();
        boolean complete = done.await(timeout, TimeUnit.SECONDS);
        long cpu1 = pid > 0 ? cpuTicks(pid) : 0;
        long[] machine1 = {machineBusyTicks(), cpuTicks(ProcessHandle.current().pid())};
        long sampledAt = System.nanoTime();
        long end = complete ? doneAt.get() : System.nanoTime();
        long n = received.get();
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("mode", "consume");
        out.put("client", "rocketmq-client-java-5.3.3");
        out.put("expected", count);
        out.put("received", n);
        out.put("complete", complete);
        out.put("first_message_ms", firstAt.get() == 0 ? null : round((firstAt.get() - t0) / 1e6, 1));
        out.put("total_ms", round((end - t0) / 1e6, 1));
        // Drain rate: from the first message to the count-th, so start-up is not in it.
        double drain = firstAt.get() == 0 ? 0 : (end - firstAt.get()) / 1e9;
        out.put("msgs_per_sec", drain > 0 ? round(n / drain, 1) : null);
        double tck = intOpt(o, "clk-tck", 100);
        if (pid > 0) {
            out.put("broker_cpu_s", round((cpu1 - cpu0) / tck, 3));
        }
        double window = (sampledAt - t0) / 1e9;
        out.put("window_s", round(window, 3));
        out.put("machine_busy_s", round((machine1[0] - machine0[0]) / tck, 3));
        out.put("client_cpu_s", round((machine1[1] - machine0[1]) / tck, 3));
        System.out.println(json(out));
        System.out.flush();
        c.shutdown();
        return complete ? 0 : 1;
    }

    // ---------------------------------------------------------------- helpers

    static DefaultMQProducer producer(Map<String, String> o, String group) {
        DefaultMQProducer p = new DefaultMQProducer(group);
        p.setNamesrvAddr(req(o, "namesrv"));
        p.setInstanceName(group + "-" + ProcessHandle.current().pid());
        return p;
    }

    /** utime + stime of a process in clock ticks (fields 14 and 15 of /proc/PID/stat). */
    static long cpuTicks(long pid) throws IOException {
        String stat = Files.readString(Path.of("/proc/" + pid + "/stat"), StandardCharsets.US_ASCII);
        String[] f = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
        return Long.parseLong(f[11]) + Long.parseLong(f[12]);
    }

    /** Busy clock ticks of all CPUs together: user+nice+system+irq+softirq+steal of /proc/stat. */
    static long machineBusyTicks() throws IOException {
        String first = Files.readAllLines(Path.of("/proc/stat"), StandardCharsets.US_ASCII).get(0);
        String[] f = first.trim().split("\\s+");
        long busy = 0;
        for (int i : new int[] {1, 2, 3, 6, 7, 8}) {
            busy += i < f.length ? Long.parseLong(f[i]) : 0;
        }
        return busy;
    }

    static Map<String, Long> statusMap(Map<String, AtomicLong> m) {
        Map<String, Long> out = new java.util.TreeMap<>();
        m.forEach((k, v) -> out.put(k, v.get()));
        return out;
    }

    static double ms(long micros) {
        return round(micros / 1000.0, 3);
    }

    static double round(double v, int digits) {
        double f = Math.pow(10, digits);
        return Math.round(v * f) / f;
    }

    static Map<String, String> parse(String[] argv) {
        Map<String, String> m = new HashMap<>();
        for (int i = 1; i < argv.length; i++) {
            if (!argv[i].startsWith("--") || i + 1 >= argv.length) {
                throw new IllegalArgumentException("expected --name value, got " + argv[i]);
            }
            m.put(argv[i].substring(2), argv[++i]);
        }
        return m;
    }

    static String req(Map<String, String> o, String k) {
        String v = o.get(k);
        if (v == null) {
            throw new IllegalArgumentException("missing --" + k);
        }
        return v;
    }

    static int intOpt(Map<String, String> o, String k, int dflt) {
        return o.containsKey(k) ? Integer.parseInt(o.get(k)) : dflt;
    }

    static long longOpt(Map<String, String> o, String k, long dflt) {
        return o.containsKey(k) ? Long.parseLong(o.get(k)) : dflt;
    }

    /** Minimal JSON for flat maps of numbers, booleans, strings and one level of nested maps. */
    static String json(Map<String, ?> m) {
        StringBuilder sb = new StringBuilder("{");
        for (Map.Entry<String, ?> e : m.entrySet()) {
            if (sb.length() > 1) {
                sb.append(',');
            }
            sb.append('"').append(e.getKey()).append("\":");
            Object v = e.getValue();
            if (v == null) {
                sb.append("null");
            } else if (v instanceof Map<?, ?> nested) {
                @SuppressWarnings("unchecked")
                Map<String, ?> n = (Map<String, ?>) nested;
                sb.append(json(n));
            } else if (v instanceof Number || v instanceof Boolean) {
                sb.append(String.format(Locale.ROOT, "%s", v));
            } else {
                sb.append('"').append(v.toString().replace("\\", "\\\\").replace("\"", "\\\"")).append('"');
            }
        }
        return sb.append('}').toString();
    }
}
