package dev.ferrocket.compat;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import org.apache.rocketmq.client.apis.ClientConfiguration;
import org.apache.rocketmq.client.apis.ClientServiceProvider;
import org.apache.rocketmq.client.apis.message.Message;
import org.apache.rocketmq.client.apis.producer.Producer;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/**
 * Sync 1 KiB sends with the 5.x SDK over TLS and plaintext, one thread, as the issue measured
 * the Java proxy 5.3.3 in local mode (215/s TLS, 342/s plaintext; p50/p99 3.2/17.5 and 2.3/9.5
 * ms). Prints sends/s, p50/p99 and the broker's RSS. Not a {@code *Test}: run it with
 * {@code -Dtest=Grpc5SendBench -Dgrpc5.bench=true}.
 */
class Grpc5SendBench {
    private static final int WARMUP = 300;
    private static final int SENDS = 3000;

    @Test
    void syncSends() throws Exception {
        Assumptions.assumeTrue(Boolean.getBoolean("grpc5.bench"), "-Dgrpc5.bench=true");
        ClientServiceProvider provider = ClientServiceProvider.loadService();
        try (Grpc5Broker broker = Grpc5Broker.start("bench")) {
            broker.createTopic("Grpc5Bench", 4, "NORMAL");
            byte[] body = new byte[1024];
            Arrays.fill(body, (byte) 'x');
            for (boolean tls : new boolean[] {true, false}) {
                ClientConfiguration config = ClientConfiguration.newBuilder().setEndpoints(broker.grpcEndpoint())
                    .enableSsl(tls).setRequestTimeout(Duration.ofSeconds(10)).build();
                try (Producer p = provider.newProducerBuilder().setClientConfiguration(config)
                    .setTopics("Grpc5Bench").build()) {
                    Message m = provider.newMessageBuilder().setTopic("Grpc5Bench").setBody(body).build();
                    for (int i = 0; i < WARMUP; i++) {
                        p.send(m);
                    }
                    long[] nanos = new long[SENDS];
                    long start = System.nanoTime();
                    for (int i = 0; i < SENDS; i++) {
                        long t = System.nanoTime();
                        p.send(m);
                        nanos[i] = System.nanoTime() - t;
                    }
                    double seconds = (System.nanoTime() - start) / 1e9;
                    Arrays.sort(nanos);
                    System.out.printf("[grpc5-bench] %s: %.0f sends/s, p50 %.2f ms, p99 %.2f ms, broker RSS %d KiB%n",
                        tls ? "TLS" : "plaintext", SENDS / seconds, nanos[SENDS / 2] / 1e6,
                        nanos[SENDS * 99 / 100] / 1e6, broker.rssKib());
                    assertTrue(seconds > 0);
                }
            }
        }
    }
}
