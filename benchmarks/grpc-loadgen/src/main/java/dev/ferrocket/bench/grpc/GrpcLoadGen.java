package dev.ferrocket.bench.grpc;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.rocketmq.client.apis.ClientConfiguration;
import org.apache.rocketmq.client.apis.ClientServiceProvider;
import org.apache.rocketmq.client.apis.consumer.FilterExpression;
import org.apache.rocketmq.client.apis.consumer.SimpleConsumer;
import org.apache.rocketmq.client.apis.message.Message;
import org.apache.rocketmq.client.apis.message.MessageView;
import org.apache.rocketmq.client.apis.producer.Producer;

/**
 * One turn of benchmarks/grpc.sh against one gRPC endpoint (the Java proxy or ferrocket), with the
 * 5.x SDK, printing one JSON object on stdout:
 *
 * <ol>
 *   <li>for TLS, then plaintext: one thread of synchronous sends of {@code --size} bytes to
 *       {@code --topic}; {@code --warmup-s} seconds not counted, then {@code --seconds} measured
 *       (sends/s, p50/p99/max latency);</li>
 *   <li>a SimpleConsumer of a new group draining that topic (receive up to 32, then a synchronous
 *       ack of each), for at most {@code --seconds}: receive+ack per second from the first
 *       receive, and whether the topic was drained;</li>
 *   <li>one message on {@code --redeliver-topic}, received with a {@code --invisible-s}
 *       invisible duration and not acked: the seconds until a receive returns it again;</li>
 *   <li>the VmRSS and RssAnon of {@code --rss-pid} (/proc/PID/status) at the end and their peaks
 *       (sampled every 250 ms during the turn). VmRSS counts the store's mapped file pages the
 *       server touched; RssAnon is the process's own memory (heap, stacks, buffers).</li>
 * </ol>
 */
public final class GrpcLoadGen {
    private static final ClientServiceProvider PROVIDER = ClientServiceProvider.loadService();

    public static void main(String[] argv) throws Exception {
        Map<String, String> a = parse(argv);
        String endpoint = req(a, "endpoint");
        String topic = req(a, "topic");
        String retopic = req(a, "redeliver-topic");
        int size = Integer.parseInt(a.getOrDefault("size", "1024"));
        double warmup = Double.parseDouble(a.getOrDefault("warmup-s", "5"));
        double seconds = Double.parseDouble(a.getOrDefault("seconds", "20"));
        int invisible = Integer.parseInt(a.getOrDefault("invisible-s", "10"));
        long pid = Long.parseLong(a.getOrDefault("rss-pid", "-1"));

        AtomicLong peak = new AtomicLong(-1);
        AtomicLong anonPeak = new AtomicLong(-1);
        Thread sampler = new Thread(() -> {
            while (!Thread.currentThread().isInterrupted()) {
                peak.accumulateAndGet(statusKib(pid, "VmRSS:"), Math::max);
                anonPeak.accumulateAndGet(statusKib(pid, "RssAnon:"), Math::max);
                try {
                    Thread.sleep(250);
                } catch (InterruptedException e) {
                    return;
                }
            }
        }, "rss-sampler");
        sampler.setDaemon(true);
        sampler.start();

        Map<String, Object> out = new LinkedHashMap<>();
        byte[] body = new byte[size];
        Arrays.fill(body, (byte) 'x');
        long total = 0;
        for (boolean tls : new boolean[] {true, false}) {
            Map<String, Object> r = sends(endpoint, tls, topic, body, warmup, seconds);
            total += (Long) r.get("total_sent");
            out.put(tls ? "tls" : "plain", r);
        }
        out.put("drain", drain(endpoint, topic, total, seconds));
        out.put("redelivery", redelivery(endpoint, retopic, invisible));
        sampler.interrupt();
        long end = statusKib(pid, "VmRSS:");
        out.put("rss_kib_end", end);
        out.put("rss_kib_peak", Math.max(peak.get(), end));
        long anonEnd = statusKib(pid, "RssAnon:");
        out.put("rss_anon_kib_end", anonEnd);
        out.put("rss_anon_kib_peak", Math.max(anonPeak.get(), anonEnd));
        out.put("loadgen_cpu_s", ProcessHandle.current().info().totalCpuDuration().map(d -> d.toMillis() / 1e3).orElse(0.0));
        System.out.println(json(out));
        System.out.flush();
        System.exit(0); // the SDK's client threads are not all daemons
    }

    private static ClientConfiguration config(String endpoint, boolean tls) {
        return ClientConfiguration.newBuilder().setEndpoints(endpoint).enableSsl(tls)
            .setRequestTimeout(Duration.ofSeconds(10)).build();
    }

    private static Map<String, Object> sends(String endpoint, boolean tls, String topic, byte[] body,
                                             double warmup, double seconds) throws Exception {
        long[] lat = new long[1 << 16];
        int n = 0;
        long total = 0;
        try (Producer p = PROVIDER.newProducerBuilder().setClientConfiguration(config(endpoint, tls))
            .setTopics(topic).build()) {
            Message m = PROVIDER.newMessageBuilder().setTopic(topic).setBody(body).build();
            long warmEnd = System.nanoTime() + (long) (warmup * 1e9);
            while (System.nanoTime() < warmEnd) {
                p.send(m);
                total++;
            }
            long start = System.nanoTime();
            long end = start + (long) (seconds * 1e9);
            long t;
            while ((t = System.nanoTime()) < end) {
                p.send(m);
                if (n == lat.length) {
                    lat = Arrays.copyOf(lat, n * 2);
                }
                lat[n++] = System.nanoTime() - t;
                total++;
            }
            double elapsed = (System.nanoTime() - start) / 1e9;
            long[] s = Arrays.copyOf(lat, n);
            Arrays.sort(s);
            Map<String, Object> r = new LinkedHashMap<>();
            r.put("sends", n);
            r.put("seconds", elapsed);
            r.put("per_s", n / elapsed);
            r.put("p50_ms", n == 0 ? -1 : s[n / 2] / 1e6);
            r.put("p99_ms", n == 0 ? -1 : s[Math.min(n - 1, (int) (n * 0.99))] / 1e6);
            r.put("max_ms", n == 0 ? -1 : s[n - 1] / 1e6);
            r.put("total_sent", total);
            return r;
        }
    }

    private static SimpleConsumer consumer(String endpoint, String topic, String group, Duration await) throws Exception {
        return PROVIDER.newSimpleConsumerBuilder().setClientConfiguration(config(endpoint, false))
            .setConsumerGroup(group).setAwaitDuration(await)
            .setSubscriptionExpressions(Map.of(topic, new FilterExpression("*"))).build();
    }

    private static Map<String, Object> drain(String endpoint, String topic, long total, double seconds) throws Exception {
        Set<String> seen = new HashSet<>();
        long acked = 0;
        long duplicates = 0;
        long first = -1;
        long last = -1;
        long built = System.nanoTime();
        try (SimpleConsumer c = consumer(endpoint, topic, "GrpcBenchDrain", Duration.ofSeconds(5))) {
            long deadline = -1;
            long giveUp = built + Duration.ofSeconds(60).toNanos();
            while (seen.size() < total) {
                long now = System.nanoTime();
                if ((deadline > 0 && now >= deadline) || (first < 0 && now >= giveUp)) {
                    break;
                }
                List<MessageView> got = c.receive(32, Duration.ofSeconds(30));
                if (!got.isEmpty() && first < 0) {
                    first = System.nanoTime();
                    deadline = first + (long) (seconds * 1e9);
                }
                for (MessageView m : got) {
                    c.ack(m);
                    acked++;
                    if (!seen.add(m.getMessageId().toString())) {
                        duplicates++;
                    }
                }
                if (!got.isEmpty()) {
                    last = System.nanoTime();
                }
            }
        }
        double elapsed = first < 0 ? 0 : (last - first) / 1e9;
        Map<String, Object> r = new LinkedHashMap<>();
        r.put("acked", acked);
        r.put("unique", seen.size());
        r.put("duplicates", duplicates);
        r.put("of", total);
        r.put("drained", seen.size() >= total);
        r.put("seconds", elapsed);
        r.put("per_s", elapsed > 0 ? acked / elapsed : -1);
        r.put("first_message_ms", first < 0 ? -1 : (first - built) / 1e6);
        return r;
    }

    private static Map<String, Object> redelivery(String endpoint, String topic, int invisible) throws Exception {
        Map<String, Object> r = new LinkedHashMap<>();
        r.put("invisible_s", invisible);
        try (Producer p = PROVIDER.newProducerBuilder().setClientConfiguration(config(endpoint, false))
            .setTopics(topic).build()) {
            p.send(PROVIDER.newMessageBuilder().setTopic(topic).setBody("again".getBytes()).build());
        }
        try (SimpleConsumer c = consumer(endpoint, topic, "GrpcBenchRedeliver", Duration.ofSeconds(15))) {
            MessageView held = null;
            long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
            while (held == null && System.nanoTime() < deadline) {
                List<MessageView> got = c.receive(1, Duration.ofSeconds(invisible));
                held = got.isEmpty() ? null : got.get(0);
            }
            if (held == null) {
                r.put("error", "the message was not received within 60 s");
                return r;
            }
            long received = System.nanoTime();
            deadline = received + Duration.ofSeconds(invisible + 60L).toNanos();
            while (System.nanoTime() < deadline) {
                for (MessageView m : c.receive(1, Duration.ofSeconds(30))) {
                    c.ack(m);
                    if (m.getMessageId().equals(held.getMessageId())) {
                        r.put("back_after_s", (System.nanoTime() - received) / 1e9);
                        r.put("delivery_attempt", m.getDeliveryAttempt());
                        return r;
                    }
                }
            }
            r.put("error", "not redelivered within " + (invisible + 60) + " s");
            return r;
        }
    }

    /** A kB field of /proc/PID/status ({@code VmRSS:}, {@code RssAnon:}), or -1. */
    static long statusKib(long pid, String field) {
        if (pid <= 0) {
            return -1;
        }
        try {
            for (String line : Files.readAllLines(Path.of("/proc", Long.toString(pid), "status"))) {
                if (line.startsWith(field)) {
                    return Long.parseLong(line.replaceAll("[^0-9]", ""));
                }
            }
        } catch (Exception e) {
            return -1;
        }
        return -1;
    }

    private static Map<String, String> parse(String[] argv) {
        Map<String, String> a = new HashMap<>();
        for (int i = 0; i + 1 < argv.length; i += 2) {
            if (!argv[i].startsWith("--")) {
                throw new IllegalArgumentException("expected --name value, got " + argv[i]);
            }
            a.put(argv[i].substring(2), argv[i + 1]);
        }
        return a;
    }

    private static String req(Map<String, String> a, String k) {
        String v = a.get(k);
        if (v == null) {
            throw new IllegalArgumentException("--" + k + " is needed");
        }
        return v;
    }

    @SuppressWarnings("unchecked")
    private static String json(Object o) {
        if (o instanceof Map) {
            List<String> parts = new ArrayList<>();
            for (Map.Entry<String, Object> e : ((Map<String, Object>) o).entrySet()) {
                parts.add("\"" + e.getKey() + "\":" + json(e.getValue()));
            }
            return "{" + String.join(",", parts) + "}";
        }
        if (o instanceof String) {
            return "\"" + ((String) o).replace("\\", "\\\\").replace("\"", "\\\"") + "\"";
        }
        if (o instanceof Double) {
            double d = (Double) o;
            return Double.isFinite(d) ? String.format("%.3f", d) : "null";
        }
        return String.valueOf(o);
    }
}
