package dev.ferrocket.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.alibaba.fastjson.JSON;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.rocketmq.common.TopicConfig;
import org.apache.rocketmq.common.message.MessageQueue;
import org.apache.rocketmq.remoting.protocol.subscription.ExponentialRetryPolicy;
import org.apache.rocketmq.remoting.protocol.subscription.GroupRetryPolicy;
import org.apache.rocketmq.remoting.protocol.subscription.GroupRetryPolicyType;
import org.apache.rocketmq.remoting.protocol.subscription.SubscriptionGroupConfig;
import org.apache.rocketmq.tools.admin.DefaultMQAdminExt;
import org.junit.jupiter.api.Test;

/**
 * The Java broker's config files make the round trip Java → ferrocket → Java without loss. The
 * Java broker of this module (5.x) writes them after mqadmin's updateSubGroup with a retry policy
 * (plus a topic with attributes and a committed offset); ferrocket opens that store, rewrites every
 * file (new topic, new group, new offset; delayOffset.json at shutdown); every member Java wrote is
 * still there with its value, and the Java broker started again on the rewritten files reports the
 * group's retry policy unchanged. Client 5.x only: 4.9 has no group retry policy.
 */
class JavaConfigRoundTripTest {
    private static final List<String> FILES =
        List.of("topics.json", "subscriptionGroup.json", "consumerOffset.json", "delayOffset.json");

    @Test
    void javaConfigFilesSurviveAFerrocketRewrite() throws Exception {
        String group = Compat.unique("retry-policy-group");
        String topic = Compat.unique("attr-topic");
        Path store;
        Map<String, String> javaWrote = new LinkedHashMap<>();
        try (Ferrocket ns = Ferrocket.startNamesrv("javacfg-ns", Map.of());
             JavaBroker java = JavaBroker.start("JavaCfgCluster", "javacfg-broker", ns.addr())) {
            store = Path.of(java.controller().getMessageStoreConfig().getStorePathRootDir());
            DefaultMQAdminExt admin = Compat.admin(ns.addr());
            try {
                admin.createAndUpdateSubscriptionGroupConfig(java.addr(), retryPolicyGroup(group));
                TopicConfig tc = new TopicConfig(topic, 4, 4, 6);
                tc.setAttributes(Map.of("+message.type", "NORMAL"));
                admin.createAndUpdateTopicConfig(java.addr(), tc);
                admin.updateConsumeOffset(java.addr(), group, new MessageQueue(topic, "javacfg-broker", 1), 7);
            } finally {
                admin.shutdown();
            }
        }
        // The Java broker persisted its files at shutdown.
        for (String f : FILES) {
            Path p = store.resolve("config").resolve(f);
            if (Files.exists(p)) {
                javaWrote.put(f, Files.readString(p, StandardCharsets.UTF_8));
            }
        }
        assertTrue(javaWrote.get("subscriptionGroup.json").contains("EXPONENTIAL"),
            "the Java broker wrote the retry policy: " + javaWrote.get("subscriptionGroup.json"));

        Map<String, String> overrides = new LinkedHashMap<>();
        overrides.put("storePathRootDir", store.toString());
        overrides.put("mappedFileSizeConsumeQueue", Integer.toString(30_000 * 20));
        overrides.put("maxHashSlotNum", "10000");
        overrides.put("maxIndexNum", "40000");
        try (BrokerDeployment d = BrokerDeployment.start(BrokerDeployment.Mode.SEPARATE, "javacfg", overrides)) {
            d.createTopic(Compat.unique("ferro-topic"), 2, 2, 6);
            SubscriptionGroupConfig plain = new SubscriptionGroupConfig();
            plain.setGroupName(Compat.unique("ferro-group"));
            d.admin().createAndUpdateSubscriptionGroupConfig(d.brokerAddr(), plain);
            d.admin().updateConsumeOffset(d.brokerAddr(), group, new MessageQueue(topic, d.brokerName(), 2), 3);
            assertEquals(0, d.stopBroker(), "ferrocket exit code");
        }
        for (Map.Entry<String, String> e : javaWrote.entrySet()) {
            String ours = Files.readString(store.resolve("config").resolve(e.getKey()), StandardCharsets.UTF_8);
            assertKept(e.getKey(), JSON.parseObject(e.getValue()), JSON.parseObject(ours), "");
        }

        // Back to Java: the group's retry policy is what mqadmin set.
        try (Ferrocket ns = Ferrocket.startNamesrv("javacfg-ns2", Map.of());
             JavaBroker java = JavaBroker.startOn("JavaCfgCluster", "javacfg-broker", ns.addr(), store)) {
            SubscriptionGroupConfig back = java.controller().getSubscriptionGroupManager().findSubscriptionGroupConfig(group);
            assertNotNull(back, "group " + group + " lost");
            GroupRetryPolicy policy = back.getGroupRetryPolicy();
            assertEquals(GroupRetryPolicyType.EXPONENTIAL, policy.getType());
            ExponentialRetryPolicy exp = policy.getExponentialRetryPolicy();
            assertEquals(2000, exp.getInitial());
            assertEquals(60000, exp.getMax());
            assertEquals(3, exp.getMultiplier());
            assertEquals(5, back.getRetryMaxTimes());
        }
    }

    private static SubscriptionGroupConfig retryPolicyGroup(String group) {
        SubscriptionGroupConfig g = new SubscriptionGroupConfig();
        g.setGroupName(group);
        g.setRetryMaxTimes(5);
        GroupRetryPolicy policy = new GroupRetryPolicy();
        policy.setType(GroupRetryPolicyType.EXPONENTIAL);
        policy.setExponentialRetryPolicy(new ExponentialRetryPolicy(2000, 60000, 3));
        g.setGroupRetryPolicy(policy);
        return g;
    }

    /** Every member of {@code java} is in {@code ours} with the same value (objects member by member). */
    private static void assertKept(String file, Object java, Object ours, String path) {
        if (path.equals("/dataVersion")) {
            return; // ferrocket moves the version, as any writer does
        }
        if (java instanceof Map<?, ?> j && ours instanceof Map<?, ?> o) {
            // Java writes bare integer keys in offset tables ({0:5}), ferrocket quoted ones.
            Map<String, Object> mine = new LinkedHashMap<>();
            o.forEach((k, v) -> mine.put(String.valueOf(k), v));
            for (Map.Entry<?, ?> e : j.entrySet()) {
                String key = String.valueOf(e.getKey());
                String at = path + "/" + key;
                assertTrue(mine.containsKey(key), file + ": " + at + " lost in ferrocket's rewrite; ferrocket wrote "
                    + mine.keySet());
                assertKept(file, e.getValue(), mine.get(key), at);
            }
        } else {
            assertEquals(JSON.toJSONString(java), JSON.toJSONString(ours), file + ": " + path + " changed");
        }
    }
}
