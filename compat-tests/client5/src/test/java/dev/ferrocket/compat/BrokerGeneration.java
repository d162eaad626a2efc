package dev.ferrocket.compat;

import java.util.Map;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.remoting.protocol.heartbeat.MessageModel;
import org.apache.rocketmq.remoting.protocol.subscription.SubscriptionGroupConfig;
import org.apache.rocketmq.tools.admin.DefaultMQAdminExt;

/** RocketMQ 5.3.1 side of {@link BrokerGenerationApi}. */
public final class BrokerGeneration implements BrokerGenerationApi {

    @Override
    public void setBroadcasting(DefaultMQPushConsumer consumer) {
        consumer.setMessageModel(MessageModel.BROADCASTING);
    }

    @Override
    public void createTopic(DefaultMQAdminExt admin, String key, String topic, int queueNum) throws Exception {
        admin.createTopic(key, topic, queueNum, Map.of());
    }

    @Override
    public void createSubscriptionGroup(DefaultMQAdminExt admin, String brokerAddr, String group, int retryQueueNums,
        int retryMaxTimes) throws Exception {
        SubscriptionGroupConfig config = new SubscriptionGroupConfig();
        config.setGroupName(group);
        config.setRetryQueueNums(retryQueueNums);
        config.setRetryMaxTimes(retryMaxTimes);
        admin.createAndUpdateSubscriptionGroupConfig(brokerAddr, config);
    }
}
