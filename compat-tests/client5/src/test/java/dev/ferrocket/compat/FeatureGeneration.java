package dev.ferrocket.compat;

import java.util.List;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.remoting.protocol.subscription.SubscriptionGroupConfig;
import org.apache.rocketmq.tools.admin.DefaultMQAdminExt;

/** RocketMQ 5.3.1 side of {@link FeatureGenerationApi}. */
public final class FeatureGeneration implements FeatureGenerationApi {

    @Override
    public List<MessageExt> queryMsgByKey(DefaultMQAdminExt admin, String cluster, String topic, String key, int maxNum,
        long begin, long end) throws Exception {
        return admin.queryMessage(cluster, topic, key, maxNum, begin, end).getMessageList();
    }

    @Override
    public List<MessageExt> queryMsgByUniqueKey(DefaultMQAdminExt admin, String cluster, String topic, String uniqKey)
        throws Exception {
        return admin.queryMessageByUniqKey(cluster, topic, uniqKey, 32, 0, Long.MAX_VALUE).getMessageList();
    }

    @Override
    public MessageExt queryMsgById(DefaultMQAdminExt admin, String cluster, String topic, String offsetMsgId)
        throws Exception {
        return admin.queryMessage(cluster, topic, offsetMsgId);
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
        switch (property) {
            case "TIMER_DELAY_SEC" -> m.setDelayTimeSec(value);
            case "TIMER_DELAY_MS" -> m.setDelayTimeMs(value);
            case "TIMER_DELIVER_MS" -> m.setDeliverTimeMs(value);
            default -> throw new IllegalArgumentException(property);
        }
    }
}
