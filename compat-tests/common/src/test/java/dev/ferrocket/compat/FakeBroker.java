package dev.ferrocket.compat;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.rocketmq.common.TopicConfig;
import org.apache.rocketmq.remoting.netty.NettyClientConfig;
import org.apache.rocketmq.remoting.netty.NettyRemotingClient;
import org.apache.rocketmq.remoting.protocol.RemotingCommand;
import org.apache.rocketmq.remoting.protocol.SerializeType;

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
    private final SerializeType serializeType;
    private long dataVersion = 0;

    public FakeBroker(Generation generation, String namesrvAddr, Generation.BrokerIdentity identity,
                      List<Generation.TopicSpec> topics) {
        this(generation, namesrvAddr, identity, topics, SerializeType.JSON);
    }

    /** A fake broker whose requests use {@code serializeType} headers (JSON or ROCKETMQ binary). */
    public FakeBroker(Generation generation, String namesrvAddr, Generation.BrokerIdentity identity,
                      List<Generation.TopicSpec> topics, SerializeType serializeType) {
        this.serializeType = serializeType;
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
        RemotingCommand request = RegisterBroker.request(generation, identity, topics, ++dataVersion,
            System.currentTimeMillis());
        RemotingCommand response = invoke(request);
        if (response.getCode() != 0) {
            throw new AssertionError("REGISTER_BROKER of " + identity + " answered code " + response.getCode()
                + " remark " + response.getRemark());
        }
        return RegisterBroker.decodeResponse(response);
    }

    /** Sends any request on this broker's connection, in its serialize type, and returns the answer. */
    public RemotingCommand invoke(RemotingCommand request) throws Exception {
        request.setSerializeTypeCurrentRPC(serializeType);
        return client.invokeSync(namesrvAddr, request, TIMEOUT_MILLIS);
    }

    /**
     * Closes the connection (no UNREGISTER_BROKER). The client's shutdown closes its channels first
     * and then spends ~3 s stopping threads (5.x), so it finishes in the background.
     */
    @Override
    public void close() {
        Thread stopper = new Thread(client::shutdown, "fake-broker-shutdown-" + identity.brokerName());
        stopper.setDaemon(true);
        stopper.start();
    }
}
