package dev.ferrocket.compat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * {@code ferrocket standalone} (NameServer and broker in one process) with a gRPC port
 * ({@code grpcListenPort}), for the 5.x SDK. TLS follows the broker's {@code tls.server.mode}
 * (default permissive: TLS and plaintext on the one port, a self-signed certificate as none is
 * configured). Topics are made with {@code ferrocket admin update-topic -a message.type=...}.
 */
final class Grpc5Broker implements AutoCloseable {
    static final String CLUSTER = "Grpc5Cluster";
    private static final Duration READY = Duration.ofSeconds(30);

    private final Path bin;
    private final FerrocketProcess process;
    final int namesrvPort;
    final int brokerPort;
    final int grpcPort;

    private Grpc5Broker(Path bin, FerrocketProcess process, int namesrvPort, int brokerPort, int grpcPort) {
        this.bin = bin;
        this.process = process;
        this.namesrvPort = namesrvPort;
        this.brokerPort = brokerPort;
        this.grpcPort = grpcPort;
    }

    static Grpc5Broker start(String name) throws Exception {
        return start(name, Map.of());
    }

    /** As {@link #start(String)}, with {@code extra} broker.conf keys over the defaults. */
    static Grpc5Broker start(String name, Map<String, String> extra) throws Exception {
        String value = System.getProperty("ferrocket.bin", "").trim();
        Path bin = Path.of(value);
        if (value.isEmpty() || !bin.isAbsolute() || !Files.isExecutable(bin)) {
            throw new IllegalStateException("-Dferrocket.bin=/abs/path/to/ferrocket is needed, got '" + value + "'");
        }
        Path dir = TestDirs.fresh("grpc5-" + name);
        int namesrvPort = Ports.free();
        int brokerPort = Ports.freeBrokerPort();
        int grpcPort = Ports.free();
        Map<String, String> ns = new LinkedHashMap<>();
        ns.put("listenPort", Integer.toString(namesrvPort));
        ns.put("kvConfigPath", dir.resolve("kvConfig.json").toString());
        Map<String, String> b = new LinkedHashMap<>();
        b.put("brokerClusterName", CLUSTER);
        b.put("brokerName", "grpc5-broker");
        b.put("brokerId", "0");
        b.put("brokerIP1", "127.0.0.1");
        b.put("listenPort", Integer.toString(brokerPort));
        b.put("grpcListenPort", Integer.toString(grpcPort));
        b.put("storePathRootDir", dir.resolve("store").toString());
        b.put("mappedFileSizeCommitLog", Integer.toString(16 * 1024 * 1024));
        b.put("cleanFileForciblyEnable", "false");
        b.put("flushDiskType", "ASYNC_FLUSH");
        b.putAll(extra);
        Path nsConf = ConfigFiles.write(dir.resolve("namesrv.conf"), ns);
        Path brokerConf = ConfigFiles.write(dir.resolve("broker.conf"), b);
        FerrocketProcess p = new FerrocketProcess("standalone", dir, dir.resolve("ferrocket-standalone.log"),
            List.of(bin.toString(), "standalone", "-c", brokerConf.toString(), "--namesrv-config", nsConf.toString()));
        p.start();
        Grpc5Broker broker = new Grpc5Broker(bin, p, namesrvPort, brokerPort, grpcPort);
        try {
            p.awaitPort(namesrvPort, READY);
            p.awaitPort(brokerPort, READY);
            p.awaitPort(grpcPort, READY);
        } catch (RuntimeException e) {
            broker.close();
            throw e;
        }
        return broker;
    }

    /** SIGKILL (a crash), then a start on the same ports and store; returns once every port listens. */
    void killAndRestart() throws Exception {
        process.kill();
        process.start();
        process.awaitPort(namesrvPort, READY);
        process.awaitPort(brokerPort, READY);
        process.awaitPort(grpcPort, READY);
    }

    String namesrvAddr() {
        return "127.0.0.1:" + namesrvPort;
    }

    String grpcEndpoint() {
        return "127.0.0.1:" + grpcPort;
    }

    /** {@code ferrocket admin update-topic} with {@code -a +message.type=<type>}; retried until the broker is registered. */
    void createTopic(String topic, int queues, String messageType) throws Exception {
        List<String> cmd = new ArrayList<>(List.of(bin.toString(), "admin", "-n", namesrvAddr(), "update-topic",
            "-t", topic, "-c", CLUSTER, "-r", Integer.toString(queues), "-w", Integer.toString(queues),
            "-a", "+message.type=" + messageType));
        Wait.until("update-topic " + topic, READY, () -> {
            Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
            String out = new String(p.getInputStream().readAllBytes());
            return p.waitFor(20, TimeUnit.SECONDS) && p.exitValue() == 0 && out.contains("OK");
        });
    }

    /** The broker process's resident set size in KiB (Linux), or -1. */
    long rssKib() {
        String dir = process.workDir.toString();
        return ProcessHandle.allProcesses()
            .filter(h -> h.info().commandLine().orElse("").contains(dir))
            .findFirst()
            .map(h -> {
                try {
                    for (String line : Files.readAllLines(Path.of("/proc", Long.toString(h.pid()), "status"))) {
                        if (line.startsWith("VmRSS:")) {
                            return Long.parseLong(line.replaceAll("[^0-9]", ""));
                        }
                    }
                } catch (Exception e) {
                    return -1L;
                }
                return -1L;
            })
            .orElse(-1L);
    }

    String logTail() {
        return process.logTail(80);
    }

    @Override
    public void close() throws InterruptedException {
        int code = process.terminate(Duration.ofSeconds(20));
        if (code != 0) {
            System.err.println("[compat] ferrocket standalone exited with " + code + "\n" + logTail());
        }
    }
}
