package dev.ferrocket.compat;

import java.util.List;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.subscription.SubscriptionGroupConfig;
import org.apache.rocketmq.tools.admin.DefaultMQAdminExt;

/** RocketMQ 4.9.8 side of {@link FeatureGenerationApi}. */
public final class FeatureGeneration implements FeatureGenerationApi {

    @Override
    public List<MessageExt> queryMsgByKey(DefaultMQAdminExt admin, String cluster, String topic, String key, int maxNum,
        long begin, long end) throws Exception {
        return admin.queryMessage(topic, key, maxNum, begin, end).getMessageList();
    }

    @Override
    public List<MessageExt> queryMsgByUniqueKey(DefaultMQAdminExt admin, String cluster, String topic, String uniqKey)
        throws Exception {
        return admin.queryMessageByUniqKey(topic, uniqKey, 32, 0, Long.MAX_VALUE).getMessageList();
    }

    @Override
    public MessageExt queryMsgById(DefaultMQAdminExt admin, String cluster, String topic, String offsetMsgId)
        throws Exception {
        return admin.viewMessage(offsetMsgId);
    }

    @Override
    public void updateSubGroup(DefaultMQAdminExt admin, String brokerAddr, SubGroup g) throws Exception {
        SubscriptionGroupConfig c = new SubscriptionGroupConfig();
        c.setGroupName(g.groupName());
        c.setConsumeEnable(g.consumeEnable());
        c.setConsumeFromMinEnable(g.consumeFromMinEnable());
        c.setConsumeBroadcastEnable(g.consumeBroadcastEnable());
        c.setRetryQueueNums(g.retryQueueNums());
        c.setRetryMaxTimes(g.retryMaxTimes());
        c.setBrokerId(g.brokerId());
        c.setWhichBrokerWhenConsumeSlowly(g.whichBrokerWhenConsumeSlowly());
        c.setNotifyConsumerIdsChangedEnable(g.notifyConsumerIdsChangedEnable());
        admin.createAndUpdateSubscriptionGroupConfig(brokerAddr, c);
    }

    @Override
    public void setTimer(org.apache.rocketmq.common.message.Message m, String property, long value) {
        m.putUserProperty(property, Long.toString(value));
    }
}
