package dev.ferrocket.compat;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.rocketmq.client.consumer.DefaultMQPullConsumer;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.tools.admin.DefaultMQAdminExt;

/**
 * A {@link BrokerDeployment} with the clients most test classes share: the admin client, a producer,
 * a pull consumer that reads queues directly, and a raw remoting client. Closing it stops the
 * clients, then the deployment.
 */
final class DeploymentClients implements AutoCloseable {
    final BrokerDeployment env;
    final DefaultMQAdminExt admin;
    final DefaultMQProducer producer;
    final DefaultMQPullConsumer reader;
    final BrokerRpc rpc;

    private DeploymentClients(BrokerDeployment env, DefaultMQAdminExt admin, DefaultMQProducer producer,
                              DefaultMQPullConsumer reader) {
        this.env = env;
        this.admin = admin;
        this.producer = producer;
        this.reader = reader;
        this.rpc = new BrokerRpc();
    }

    static DeploymentClients start(BrokerDeployment.Mode mode, String name) throws Exception {
        BrokerDeployment env = BrokerDeployment.start(mode, name, Map.of());
        DefaultMQProducer producer = null;
        try {
            DefaultMQAdminExt admin = env.admin();
            producer = Clients.producer(env.namesrvAddr());
            return new DeploymentClients(env, admin, producer, Clients.pull(env.namesrvAddr(), Compat.unique("reader")));
        } catch (Throwable t) {
            if (producer != null) {
                producer.shutdown();
            }
            env.close();
            throw t;
        }
    }

    @Override
    public void close() {
        List<Runnable> stops = new ArrayList<>();
        stops.add(producer::shutdown);
        stops.add(reader::shutdown);
        Clients.shutdownAll(stops, 10_000);
        rpc.close();
        env.close();
        Clients.awaitBackgroundShutdowns(10_000);
    }
}
