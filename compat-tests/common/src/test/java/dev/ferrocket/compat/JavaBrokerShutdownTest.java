package dev.ferrocket.compat;

import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** An orderly Java broker shutdown (UNREGISTER_BROKER, then channel close) empties its routes at once. */
@ExtendWith(DumpLogsOnFailure.class)
class JavaBrokerShutdownTest {
    private static final String CLUSTER = "CompatShutdownCluster";
    private static final String BROKER = "compat-broker-shutdown";

    @Test
    void stoppedBrokerLeavesClusterInfoAndRoutesAtOnce() throws Exception {
        try (FerrocketWithJavaBroker env = FerrocketWithJavaBroker.start("broker-shutdown", CLUSTER, BROKER)) {
            String topic = Compat.unique("short-lived");
            env.createTopicAndAwaitRoute(topic, 4, 4, 6);

            long stopped = System.nanoTime();
            env.broker.close();

            Wait.until("ferrocket to drop " + BROKER + " from cluster info and from the routes of " + topic
                    + " and TBW102 after BrokerController.shutdown()", Duration.ofSeconds(5),
                () -> {
                    env.namesrv.assertAlive();
                    Generation.Cluster cluster = NamesrvQueries.cluster(env.admin);
                    return !cluster.brokers().containsKey(BROKER)
                        && !cluster.clusters().getOrDefault(CLUSTER, java.util.Set.of()).contains(BROKER)
                        && NamesrvQueries.routeOrNull(env.admin, topic) == null
                        && NamesrvQueries.routeOrNull(env.admin, "TBW102") == null;
                });
            System.out.printf("[compat %s] broker gone from ferrocket %d ms after shutdown%n",
                env.generation.tag(), Duration.ofNanos(System.nanoTime() - stopped).toMillis());
        }
    }
}
