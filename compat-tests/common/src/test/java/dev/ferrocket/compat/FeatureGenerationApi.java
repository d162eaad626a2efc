package dev.ferrocket.compat;

import java.util.List;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.tools.admin.DefaultMQAdminExt;

/**
 * What the feature tests (query, mqadmin, DLQ) call differently in 4.9 and 5.x: the mqadmin
 * message-query commands (5.x passes a cluster name, 4.9 does not; 4.9 views by offset id alone)
 * and the SubscriptionGroupConfig class (moved package). Each module provides
 * {@code dev.ferrocket.compat.FeatureGeneration}.
 */
public interface FeatureGenerationApi {

    static FeatureGenerationApi current() {
        return new FeatureGeneration();
    }

    /** mqadmin queryMsgByKey: {@code queryMessage([cluster,] topic, key, maxNum, begin, end)}. */
    List<MessageExt> queryMsgByKey(DefaultMQAdminExt admin, String cluster, String topic, String key, int maxNum,
        long begin, long end) throws Exception;

    /** mqadmin queryMsgByUniqueKey: {@code queryMessageByUniqKey([cluster,] topic, id, 32, 0, Long.MAX_VALUE)}. */
    List<MessageExt> queryMsgByUniqueKey(DefaultMQAdminExt admin, String cluster, String topic, String uniqKey)
        throws Exception;

    /**
     * mqadmin queryMsgById with an offset message id: 4.9 {@code viewMessage(offsetMsgId)},
     * 5.x {@code queryMessage(cluster, topic, offsetMsgId)} (which views it by offset too).
     */
    MessageExt queryMsgById(DefaultMQAdminExt admin, String cluster, String topic, String offsetMsgId) throws Exception;

    /** mqadmin updateSubGroup: UPDATE_AND_CREATE_SUBSCRIPTIONGROUP (200) with these fields. */
    void updateSubGroup(DefaultMQAdminExt admin, String brokerAddr, SubGroup group) throws Exception;

    /**
     * A timer message: 5.x {@code setDelayTimeSec} / {@code setDelayTimeMs} / {@code setDeliverTimeMs};
     * 4.9 has no such API, so its users set the property ({@code TIMER_DELAY_SEC}, {@code TIMER_DELAY_MS},
     * {@code TIMER_DELIVER_MS}) as a user property.
     */
    void setTimer(org.apache.rocketmq.common.message.Message m, String property, long value);

    /** The fields of a SubscriptionGroupConfig the tests set and read back. */
    record SubGroup(String groupName, boolean consumeEnable, boolean consumeFromMinEnable,
                    boolean consumeBroadcastEnable, int retryQueueNums,
                    int retryMaxTimes, long brokerId, long whichBrokerWhenConsumeSlowly,
                    boolean notifyConsumerIdsChangedEnable) {
    }
}
