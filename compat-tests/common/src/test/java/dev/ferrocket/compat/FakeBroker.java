package dev.ferrocket.compat;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.rocketmq.common.TopicConfig;
import org.apache.rocketmq.remoting.netty.NettyClientConfig;
import org.apache.rocketmq.remoting.netty.NettyRemotingClient;
import org.apache.rocketmq.remoting.protocol.RemotingCommand;

/**
 * A broker that exists only as REGISTER_BROKER requests sent over the official
 * {@link NettyRemotingClient}. It owns its client, so {@link #close()} closes its connection to
 * the NameServer without an UNREGISTER_BROKER, like a broker that crashed.
 */
public final class FakeBroker implements AutoCloseable {
    private static final long TIMEOUT_MILLIS = 5_000;

    private final Generation generation;
    private final String namesrvAddr;
    private final Generation.BrokerIdentity identity;
    private final Map<String, TopicConfig> topics = new LinkedHashMap<>();
    private final NettyRemotingClient client;
    private long dataVersion = 0;

    public FakeBroker(Generation generation, String namesrvAddr, Generation.BrokerIdentity identity,
                      List<Generation.TopicSpec> topics) {
        this.generation = generation;
        this.namesrvAddr = namesrvAddr;
        this.identity = identity;
        for (Generation.TopicSpec t : topics) {
            this.topics.put(t.name(), new TopicConfig(t.name(), t.readQueueNums(), t.writeQueueNums(), t.perm()));
        }
        Compat.init();
        this.client = new NettyRemotingClient(new NettyClientConfig());
        this.client.start();
    }

    public Generation.BrokerIdentity identity() {
        return identity;
    }

    /** Sends REGISTER_BROKER (new data version each time); fails unless the answer is SUCCESS. */
    public Generation.RegisterResult register() throws Exception {
        RemotingCommand request = generation.registerBrokerRequest(identity, topics, ++dataVersion,
            System.currentTimeMillis());
        RemotingCommand response = client.invokeSync(namesrvAddr, request, TIMEOUT_MILLIS);
        if (response.getCode() != 0) {
            throw new AssertionError("REGISTER_BROKER of " + identity + " answered code " + response.getCode()
                + " remark " + response.getRemark());
        }
        return generation.decodeRegisterResponse(response);
    }

    /** Closes the connection (no UNREGISTER_BROKER). */
    @Override
    public void close() {
        client.shutdown();
    }
}
