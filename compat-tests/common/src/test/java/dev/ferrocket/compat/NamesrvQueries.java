package dev.ferrocket.compat;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import org.apache.rocketmq.client.exception.MQClientException;
import org.apache.rocketmq.client.impl.MQClientManager;
import org.apache.rocketmq.tools.admin.DefaultMQAdminExt;

/**
 * NameServer queries through the official admin client, returned as version-neutral values.
 *
 * <p>The protocol types (TopicRouteData, ClusterInfo, ...) live in different packages in 4.9.x and
 * 5.x, but their getters are the same; {@code var} keeps this file free of their names, so it
 * compiles against either generation.
 */
public final class NamesrvQueries {
    /** ResponseCode.TOPIC_NOT_EXIST. */
    public static final int TOPIC_NOT_EXIST = 17;
    /** ResponseCode.QUERY_NOT_FOUND. */
    public static final int QUERY_NOT_FOUND = 22;

    private NamesrvQueries() {
    }

    /** GET_ROUTEINFO_BY_TOPIC (105); throws MQClientException with code 17 when there is none. */
    public static Generation.Route route(DefaultMQAdminExt admin, String topic) throws Exception {
        var data = admin.examineTopicRouteInfo(topic);
        List<Generation.QueueView> queues = new ArrayList<>();
        for (var q : data.getQueueDatas()) {
            queues.add(new Generation.QueueView(q.getBrokerName(), q.getReadQueueNums(), q.getWriteQueueNums(),
                q.getPerm(), q.getTopicSysFlag()));
        }
        List<Generation.BrokerView> brokers = new ArrayList<>();
        for (var b : data.getBrokerDatas()) {
            brokers.add(new Generation.BrokerView(b.getCluster(), b.getBrokerName(),
                b.getBrokerAddrs() == null ? Map.of() : new TreeMap<>(b.getBrokerAddrs())));
        }
        return new Generation.Route(queues, brokers);
    }

    /** The route, or null if the NameServer answers TOPIC_NOT_EXIST (17); other failures throw. */
    public static Generation.Route routeOrNull(DefaultMQAdminExt admin, String topic) throws Exception {
        try {
            return route(admin, topic);
        } catch (MQClientException e) {
            if (e.getResponseCode() == TOPIC_NOT_EXIST) {
                return null;
            }
            throw e;
        }
    }

    /** GET_BROKER_CLUSTER_INFO (106). */
    public static Generation.Cluster cluster(DefaultMQAdminExt admin) throws Exception {
        var info = admin.examineBrokerClusterInfo();
        Map<String, Generation.BrokerView> brokers = new TreeMap<>();
        if (info.getBrokerAddrTable() != null) {
            info.getBrokerAddrTable().forEach((name, b) -> brokers.put(name, new Generation.BrokerView(
                b.getCluster(), b.getBrokerName(), b.getBrokerAddrs() == null ? Map.of() : new TreeMap<>(b.getBrokerAddrs()))));
        }
        Map<String, Set<String>> clusters = new TreeMap<>();
        if (info.getClusterAddrTable() != null) {
            info.getClusterAddrTable().forEach((name, members) -> clusters.put(name, new TreeSet<>(members)));
        }
        return new Generation.Cluster(brokers, clusters);
    }

    /** GET_ALL_TOPIC_LIST_FROM_NAMESERVER (206). */
    public static Set<String> allTopics(DefaultMQAdminExt admin) throws Exception {
        return new TreeSet<>(admin.fetchAllTopicList().getTopicList());
    }

    /** GET_TOPICS_BY_CLUSTER (224). */
    public static Set<String> topicsByCluster(DefaultMQAdminExt admin, String cluster) throws Exception {
        return new TreeSet<>(admin.fetchTopicsByCLuster(cluster).getTopicList());
    }

    /**
     * GET_SYSTEM_TOPIC_LIST_FROM_NS (304), through the client API the admin tools use; when the
     * answer names a broker the client also asks that broker (305) and merges its list.
     */
    public static Set<String> systemTopics(DefaultMQAdminExt admin) throws Exception {
        var api = MQClientManager.getInstance().getOrCreateMQClientInstance(admin).getMQClientAPIImpl();
        return new TreeSet<>(api.getSystemTopicList(5_000).getTopicList());
    }

    /** GET_KVLIST_BY_NAMESPACE (219). */
    public static Map<String, String> kvList(DefaultMQAdminExt admin, String namespace) throws Exception {
        return new TreeMap<>(admin.getKVListByNamespace(namespace).getTable());
    }
}
