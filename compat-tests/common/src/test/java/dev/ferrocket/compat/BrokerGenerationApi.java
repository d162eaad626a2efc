package dev.ferrocket.compat;

import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.tools.admin.DefaultMQAdminExt;

/**
 * The few client and admin calls of the broker tests whose types or signatures differ between
 * 4.9 and 5.x. Each module provides {@code dev.ferrocket.compat.BrokerGeneration} implementing it.
 */
public interface BrokerGenerationApi {

    static BrokerGenerationApi current() {
        return new BrokerGeneration();
    }

    /** {@code setMessageModel(MessageModel.BROADCASTING)} (MessageModel moved package in 5.x). */
    void setBroadcasting(DefaultMQPushConsumer consumer);

    /**
     * {@code DefaultMQAdminExt.createTopic(key, newTopic, queueNum, ...)}: creates the topic on every
     * broker of the route of {@code key} (e.g. the cluster name), read = write = {@code queueNum}.
     */
    void createTopic(DefaultMQAdminExt admin, String key, String topic, int queueNum) throws Exception;

    /** UPDATE_AND_CREATE_SUBSCRIPTIONGROUP (200) with a SubscriptionGroupConfig (moved package in 5.x). */
    void createSubscriptionGroup(DefaultMQAdminExt admin, String brokerAddr, String group, int retryQueueNums,
        int retryMaxTimes) throws Exception;
}
