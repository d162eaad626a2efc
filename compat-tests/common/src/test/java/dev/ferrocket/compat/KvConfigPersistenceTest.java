package dev.ferrocket.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;

import com.alibaba.fastjson.JSON;
import com.alibaba.fastjson.JSONObject;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import org.apache.rocketmq.tools.admin.DefaultMQAdminExt;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** KV config lives in {@code kvConfigPath}, in the Java NameServer's file format, across restarts. */
@ExtendWith(DumpLogsOnFailure.class)
class KvConfigPersistenceTest {

    @Test
    void kvConfigReadsTheJavaFileAndSurvivesRestart() throws Exception {
        Path file = TestDirs.fresh("kv").resolve("kvConfig.json");
        // What a Java NameServer (KVConfigManager.persist) leaves behind.
        Files.writeString(file, "{\"configTable\":{\"ORDER_TOPIC_CONFIG\":{\"SeededTopic\":\"broker-a:4;broker-b:4\"}}}",
            StandardCharsets.UTF_8);
        Map<String, String> config = Map.of("kvConfigPath", file.toString());
        String namespace = Compat.unique("persisted-ns");

        try (Ferrocket first = Ferrocket.startNamesrv("kv-first", config)) {
            DefaultMQAdminExt admin = Compat.admin(first.addr());
            try {
                assertEquals("broker-a:4;broker-b:4", admin.getKVConfig("ORDER_TOPIC_CONFIG", "SeededTopic"),
                    "value loaded from a kvConfig.json written by the Java NameServer");
                admin.createAndUpdateKvConfig(namespace, "key", "value-1");
            } finally {
                admin.shutdown();
            }
        }

        JSONObject table = JSON.parseObject(Files.readString(file, StandardCharsets.UTF_8)).getJSONObject("configTable");
        assertEquals("value-1", table.getJSONObject(namespace).getString("key"), "kvConfig.json after stop: " + table);
        assertEquals("broker-a:4;broker-b:4", table.getJSONObject("ORDER_TOPIC_CONFIG").getString("SeededTopic"),
            "seeded entry in kvConfig.json after stop: " + table);

        try (Ferrocket second = Ferrocket.startNamesrv("kv-second", config)) {
            DefaultMQAdminExt admin = Compat.admin(second.addr());
            try {
                assertEquals("value-1", admin.getKVConfig(namespace, "key"), "value after a restart");
            } finally {
                admin.shutdown();
            }
        }
    }
}
