package dev.ferrocket.compat;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;

/**
 * A ferrocket {@code standalone} process with its Kafka listener, for the Spring module: the same
 * broker.conf and namesrv.conf as {@code BrokerDeployment.start(Mode.STANDALONE, …)} of common/
 * writes, the same process handling ({@link FerrocketProcess}, log below {@link TestDirs#root()}),
 * without the RocketMQ admin client this module does not have: ready = NameServer, broker and Kafka
 * ports accept connections.
 */
public final class SpringCompatBroker implements AutoCloseable {
    private static final Duration READY_TIMEOUT = Duration.ofSeconds(20);
    private static final Duration CLOSE_GRACE = Duration.ofSeconds(5);
    /** A tracing ERROR line, as scripts/test.sh matches it. */
    private static final Pattern ERROR_LINE = Pattern.compile("^[0-9T:.-]+Z +ERROR ");

    private final FerrocketProcess process;
    private final int kafkaPort;

    private SpringCompatBroker(FerrocketProcess process, int kafkaPort) {
        this.process = process;
        this.kafkaPort = kafkaPort;
    }

    /** Starts {@code -Dferrocket.bin} with {@code overrides} added to broker.conf; waits until it listens. */
    public static SpringCompatBroker start(String name, Map<String, String> overrides) throws Exception {
        String bin = System.getProperty("ferrocket.bin", "").trim();
        if (bin.isEmpty() || !Path.of(bin).isAbsolute() || !Files.isExecutable(Path.of(bin))) {
            throw new IllegalStateException("-Dferrocket.bin=<absolute path of the ferrocket binary> is required"
                + " (got '" + bin + "'), or -Dspring.compat.bootstrap=host:port for a broker already running");
        }
        Path dir = TestDirs.fresh("broker-standalone-" + name);
        int namesrvPort = Ports.free();
        int brokerPort = Ports.freeBrokerPort();
        int kafkaPort = Ports.free();

        Map<String, String> ns = new LinkedHashMap<>();
        ns.put("listenPort", Integer.toString(namesrvPort));
        ns.put("kvConfigPath", dir.resolve("kvConfig.json").toString());
        Path nsConf = ConfigFiles.write(dir.resolve("namesrv.conf"), ns);

        Map<String, String> b = new LinkedHashMap<>();
        b.put("brokerClusterName", "FerroCluster");
        b.put("brokerName", "ferro-broker-a");
        b.put("brokerId", "0");
        b.put("brokerIP1", "127.0.0.1");
        b.put("listenPort", Integer.toString(brokerPort));
        b.put("storePathRootDir", dir.resolve("store").toString());
        b.put("mappedFileSizeCommitLog", Integer.toString(16 * 1024 * 1024));
        b.put("cleanFileForciblyEnable", "false");
        b.put("flushDiskType", "ASYNC_FLUSH");
        b.put("autoCreateTopicEnable", "true");
        b.put("autoCreateSubscriptionGroup", "true");
        b.put("defaultTopicQueueNums", "8");
        b.put("kafkaListenPort", Integer.toString(kafkaPort));
        b.put("kafkaAdvertisedAddress", "127.0.0.1:" + kafkaPort);
        b.putAll(overrides);
        Path brokerConf = ConfigFiles.write(dir.resolve("broker.conf"), b);

        FerrocketProcess p = new FerrocketProcess("standalone", dir, dir.resolve("ferrocket-standalone.log"),
            List.of(bin, "standalone", "-c", brokerConf.toString(), "--namesrv-config", nsConf.toString()));
        SpringCompatBroker broker = new SpringCompatBroker(p, kafkaPort);
        try {
            p.start();
            p.awaitPort(namesrvPort, READY_TIMEOUT);
            p.awaitPort(brokerPort, READY_TIMEOUT);
            p.awaitPort(kafkaPort, READY_TIMEOUT);
            return broker;
        } catch (Throwable t) {
            broker.close();
            throw t;
        }
    }

    public String bootstrap() {
        return "127.0.0.1:" + kafkaPort;
    }

    /** Fails if the process died (a crash must not pass for a slow answer). */
    public void assertAlive() {
        if (!process.isAlive()) {
            throw new AssertionError("ferrocket died with exit code " + process.exitCode() + "\n" + logTail(80));
        }
    }

    public String logTail(int lines) {
        return process.logTail(lines);
    }

    /** The log's ERROR lines (a broker in normal operation logs none). */
    public List<String> errorLines() {
        try {
            return Files.readAllLines(process.log, StandardCharsets.UTF_8).stream()
                .filter(line -> ERROR_LINE.matcher(line).find())
                .toList();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + process.log, e);
        }
    }

    /** SIGTERM, SIGKILL after 5 s; returns the exit code (-1 if it had to be killed). */
    public int stop() throws InterruptedException {
        return process.terminate(CLOSE_GRACE);
    }

    @Override
    public void close() {
        FerrocketProcess.terminateAll(List.of(process), CLOSE_GRACE);
    }

    @Override
    public String toString() {
        return "ferrocket standalone, Kafka at " + bootstrap() + " (" + process.workDir + ")";
    }
}
