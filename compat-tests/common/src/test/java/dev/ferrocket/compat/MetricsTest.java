package dev.ferrocket.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.apache.rocketmq.client.consumer.DefaultMQPullConsumer;
import org.apache.rocketmq.client.consumer.PullResult;
import org.apache.rocketmq.client.consumer.PullStatus;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageQueue;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Prometheus metrics ({@code metricsExporterType=PROM}, {@code metricsPromExporterPort},
 * {@code metricsLabel}) after traffic from the official client: the scrape shows the messages it
 * sent and pulled under Java 5.x's metric names and labels, with the values the traffic implies.
 */
@ExtendWith(BrokerLogsOnFailure.class)
class MetricsTest {
    static final int PERM_RW = 6;
    static final int COUNT = 5;

    @Test
    void scrapeAfterTrafficShowsWhatTheClientSentAndPulled() throws Exception {
        int port = Ports.free();
        Map<String, String> conf = Map.of("metricsExporterType", "PROM", "metricsPromExporterHost", "127.0.0.1",
            "metricsPromExporterPort", Integer.toString(port), "metricsLabel", "env:compat");
        try (BrokerDeployment d = BrokerDeployment.start(BrokerDeployment.Mode.STANDALONE, "metrics", conf)) {
            String topic = Compat.unique("metrics");
            String group = Compat.unique("cg-metrics");
            d.createTopic(topic, 1, 1, PERM_RW);
            d.awaitRoute(topic, 1, 1, PERM_RW);
            DefaultMQProducer producer = Clients.producer(d.namesrvAddr());
            DefaultMQPullConsumer puller = Clients.pull(d.namesrvAddr(), group);
            try {
                MessageQueue mq = new MessageQueue(topic, d.brokerName(), 0);
                for (int i = 0; i < COUNT; i++) {
                    FeatureClients.ok(producer.send(new Message(topic, "TagM", ("metrics-" + i).getBytes(StandardCharsets.UTF_8)), mq),
                        "send " + i);
                }
                PullResult r = puller.pull(mq, "*", 0, 32);
                assertEquals(PullStatus.FOUND, r.getPullStatus(), "pull: " + r);
                assertEquals(COUNT, r.getMsgFoundList().size(), "messages pulled");
            } finally {
                Clients.shutdownAll(List.of(producer::shutdown, puller::shutdown), 10_000);
            }

            HttpClient http = HttpClient.newHttpClient();
            HttpResponse<String> scrape = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/metrics"))
                .timeout(Duration.ofSeconds(10)).build(), HttpResponse.BodyHandlers.ofString());
            assertEquals(200, scrape.statusCode(), "GET /metrics");
            String text = scrape.body();
            String node = "cluster=\"" + BrokerDeployment.CLUSTER + "\"";
            assertEquals(COUNT, value(text, "rocketmq_messages_in_total", node, "topic=\"" + topic + "\"",
                "message_type=\"normal\"", "env=\"compat\""), "messages in");
            assertEquals(COUNT, value(text, "rocketmq_messages_out_total", node, "topic=\"" + topic + "\"",
                "consumer_group=\"" + group + "\""), "messages out");
            double in = value(text, "rocketmq_throughput_in_total", node, "topic=\"" + topic + "\"");
            assertTrue(in > COUNT * 9, "stored bytes in: " + in);
            assertEquals(in, value(text, "rocketmq_throughput_out_total", node, "topic=\"" + topic + "\""), "bytes out");
            assertEquals(COUNT, value(text, "rocketmq_message_size_count", node, "topic=\"" + topic + "\""), "message sizes");
            assertTrue(value(text, "rocketmq_rpc_latency_count", node, "request_code=\"310\"", "response_code=\"0\"") >= COUNT,
                "SEND_MESSAGE_V2 latencies recorded");
            assertTrue(value(text, "rocketmq_topic_number", node) >= 1, "topic number");

            HttpResponse<String> other = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/"))
                .timeout(Duration.ofSeconds(10)).build(), HttpResponse.BodyHandlers.ofString());
            assertEquals(404, other.statusCode(), "GET /");
        }
    }

    /** The value of the first sample of {@code name} carrying every label given. */
    static double value(String text, String name, String... labels) {
        for (String line : text.split("\n")) {
            if (!line.startsWith(name + "{") && !line.startsWith(name + " ")) {
                continue;
            }
            int close = line.lastIndexOf('}');
            String labelPart = close < 0 ? "" : line.substring(name.length() + 1, close);
            List<String> have = List.of(labelPart.split(","));
            if (have.containsAll(List.of(labels))) {
                return Double.parseDouble(line.substring(line.lastIndexOf(' ') + 1));
            }
        }
        throw new AssertionError("no " + name + " sample with " + List.of(labels) + " in:\n" + text);
    }
}
