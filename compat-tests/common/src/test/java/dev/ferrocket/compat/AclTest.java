package dev.ferrocket.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.rocketmq.acl.common.AclClientRPCHook;
import org.apache.rocketmq.acl.common.SessionCredentials;
import org.apache.rocketmq.client.consumer.DefaultMQPullConsumer;
import org.apache.rocketmq.client.consumer.PullResult;
import org.apache.rocketmq.client.consumer.PullStatus;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.PlainAccessConfig;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;
import org.apache.rocketmq.remoting.RPCHook;
import org.apache.rocketmq.tools.admin.DefaultMQAdminExt;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * ACL 1.0 ({@code aclEnable=true}, {@code <rocketmqHome>/conf/plain_acl.yml}) with the official
 * client's {@link AclClientRPCHook}: signed sends and pulls are served; an unsigned client, a wrong
 * secret and a topic the account may not publish to are refused with the broker's AclException
 * remark and store nothing; the ACL admin API mqadmin uses (updateAclConfig, deleteAclConfig,
 * clusterAclConfigVersion, updateGlobalWhiteAddr) edits the file and takes effect; a file edited by
 * hand is reloaded while the broker runs.
 */
@ExtendWith(BrokerLogsOnFailure.class)
class AclTest {
    static final String USER = "RocketMQUser";
    static final String USER_SECRET = "12345678";
    static final String ADMIN = "AdminUser";
    static final String ADMIN_SECRET = "87654321";

    static String aclFile(String topic, String perm) {
        return "accounts:\n"
            + "  - accessKey: " + USER + "\n"
            + "    secretKey: " + USER_SECRET + "\n"
            + "    admin: false\n"
            + "    defaultTopicPerm: DENY\n"
            + "    defaultGroupPerm: SUB\n"
            + "    topicPerms:\n"
            + "      - " + topic + "=" + perm + "\n"
            + "  - accessKey: " + ADMIN + "\n"
            + "    secretKey: " + ADMIN_SECRET + "\n"
            + "    admin: true\n";
    }

    static RPCHook hook(String ak, String sk) {
        return new AclClientRPCHook(new SessionCredentials(ak, sk));
    }

    static DefaultMQProducer producer(String namesrv, RPCHook hook) throws Exception {
        DefaultMQProducer p = hook == null ? new DefaultMQProducer(Compat.unique("pg-acl"))
            : new DefaultMQProducer(Compat.unique("pg-acl"), hook);
        p.setNamesrvAddr(namesrv);
        p.setInstanceName(Compat.unique("acl-producer"));
        p.setRetryTimesWhenSendFailed(0);
        p.setSendMsgTimeout(5_000);
        p.start();
        return p;
    }

    /** Every message and cause in the chain: the client wraps the broker's remark. */
    static String describe(Throwable t) {
        StringBuilder sb = new StringBuilder();
        for (Throwable c = t; c != null; c = c.getCause()) {
            sb.append(c).append(" | ");
        }
        return sb.toString();
    }

    static void assertRefused(String why, DefaultMQProducer p, String topic) {
        Exception e = assertThrows(Exception.class,
            () -> p.send(new Message(topic, "TagA", "refused".getBytes(StandardCharsets.UTF_8))), "a send that " + why);
        String text = describe(e);
        assertTrue(text.contains("AclException") && text.contains(why), "expected '" + why + "' in: " + text);
    }

    static List<String> pullAll(DefaultMQPullConsumer puller, String topic) throws Exception {
        List<String> bodies = new ArrayList<>();
        for (MessageQueue q : puller.fetchSubscribeMessageQueues(topic)) {
            long offset = 0;
            while (true) {
                PullResult r = puller.pull(q, "*", offset, 32);
                if (r.getPullStatus() != PullStatus.FOUND) {
                    break;
                }
                for (MessageExt m : r.getMsgFoundList()) {
                    bodies.add(new String(m.getBody(), StandardCharsets.UTF_8));
                }
                offset = r.getNextBeginOffset();
            }
        }
        bodies.sort(null);
        return bodies;
    }

    @Test
    void signedClientsAreServedOthersRefusedAndTheAdminApiEditsTheFile() throws Exception {
        String topic = Compat.unique("acl");
        String denied = Compat.unique("acl-denied");
        Path home = TestDirs.fresh("acl-home");
        Path file = home.resolve("conf").resolve("plain_acl.yml");
        Files.createDirectories(file.getParent());
        Files.writeString(file, aclFile(topic, "PUB|SUB"));
        Map<String, String> conf = Map.of("aclEnable", "true", "rocketmqHome", home.toString());
        List<Runnable> shutdowns = new ArrayList<>();
        try (BrokerDeployment d = BrokerDeployment.start(BrokerDeployment.Mode.STANDALONE, "acl", conf)) {
            String ns = d.namesrvAddr();
            DefaultMQProducer signed = producer(ns, hook(USER, USER_SECRET));
            DefaultMQProducer unsigned = producer(ns, null);
            DefaultMQProducer wrongSecret = producer(ns, hook(USER, "wrongSecret"));
            shutdowns.addAll(List.of(signed::shutdown, unsigned::shutdown, wrongSecret::shutdown));
            List<String> sent = new ArrayList<>();
            for (int i = 0; i < 5; i++) {
                String body = "acl-" + i;
                SendResult r = signed.send(new Message(topic, "TagA", body.getBytes(StandardCharsets.UTF_8)));
                assertEquals(SendStatus.SEND_OK, r.getSendStatus(), "signed send: " + r);
                sent.add(body);
            }
            assertRefused("No accessKey is configured", unsigned, topic);
            assertRefused("Check signature failed for accessKey=" + USER, wrongSecret, topic);
            assertRefused("No default permission for topic:" + denied, signed, denied);

            DefaultMQPullConsumer puller = new DefaultMQPullConsumer(Compat.unique("cg-acl"), hook(USER, USER_SECRET));
            puller.setNamesrvAddr(ns);
            puller.setInstanceName(Compat.unique("acl-puller"));
            puller.start();
            shutdowns.add(puller::shutdown);
            assertEquals(sent, pullAll(puller, topic), "the signed sends and nothing of the refused ones");

            // What mqadmin's ACL commands call, as a non-admin and as an admin.
            DefaultMQAdminExt userAdmin = new DefaultMQAdminExt(hook(USER, USER_SECRET));
            userAdmin.setNamesrvAddr(ns);
            userAdmin.setInstanceName(Compat.unique("acl-user-admin"));
            userAdmin.start();
            shutdowns.add(userAdmin::shutdown);
            DefaultMQAdminExt admin = new DefaultMQAdminExt(hook(ADMIN, ADMIN_SECRET));
            admin.setNamesrvAddr(ns);
            admin.setInstanceName(Compat.unique("acl-admin"));
            admin.start();
            shutdowns.add(admin::shutdown);

            PlainAccessConfig newUser = new PlainAccessConfig();
            newUser.setAccessKey("NewUser01");
            newUser.setSecretKey("NewSecret01");
            newUser.setDefaultTopicPerm("DENY");
            newUser.setDefaultGroupPerm("SUB");
            newUser.setTopicPerms(List.of(denied + "=PUB"));
            Exception notAdmin = assertThrows(Exception.class,
                () -> userAdmin.createAndUpdatePlainAccessConfig(d.brokerAddr(), newUser));
            assertTrue(describe(notAdmin).contains("Need admin permission for request code=50"), describe(notAdmin));
            long before = admin.examineBrokerClusterAclVersionInfo(d.brokerAddr()).getAclConfigDataVersion().getCounter().get();
            admin.createAndUpdatePlainAccessConfig(d.brokerAddr(), newUser);
            assertTrue(Files.readString(file).contains("NewUser01"), "updateAclConfig wrote " + file);
            var info = admin.examineBrokerClusterAclVersionInfo(d.brokerAddr());
            assertEquals(before + 1, info.getAclConfigDataVersion().getCounter().get(), "clusterAclConfigVersion after the update");
            assertEquals(d.brokerName(), info.getBrokerName());
            DefaultMQProducer newProducer = producer(ns, hook("NewUser01", "NewSecret01"));
            shutdowns.add(newProducer::shutdown);
            SendResult r = newProducer.send(new Message(denied, "TagA", "new user".getBytes(StandardCharsets.UTF_8)));
            assertEquals(SendStatus.SEND_OK, r.getSendStatus(), "the new account publishes to its topic: " + r);

            admin.deletePlainAccessConfig(d.brokerAddr(), "NewUser01");
            assertRefused("No acl config for NewUser01", newProducer, denied);

            // A file edited by hand is reloaded (Java's watcher checks every 5 s).
            Files.writeString(file, aclFile(topic, "SUB"));
            Wait.until("the broker to reload the edited " + file, Duration.ofSeconds(30), () -> {
                try {
                    signed.send(new Message(topic, "TagA", "after reload".getBytes(StandardCharsets.UTF_8)));
                    return false;
                } catch (Exception e) {
                    return describe(e).contains("No default permission for topic:" + topic);
                }
            });

            admin.updateGlobalWhiteAddrConfig(d.brokerAddr(), "127.0.0.1");
            assertTrue(Files.readString(file).contains("127.0.0.1"), "updateGlobalWhiteAddr wrote " + file);
            r = unsigned.send(new Message(topic, "TagA", "white".getBytes(StandardCharsets.UTF_8)));
            assertEquals(SendStatus.SEND_OK, r.getSendStatus(), "a white-listed address needs no signature: " + r);
        } finally {
            Clients.shutdownAll(shutdowns, 10_000);
        }
    }
}
