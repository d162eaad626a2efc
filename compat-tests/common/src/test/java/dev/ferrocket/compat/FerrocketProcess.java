package dev.ferrocket.compat;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * One ferrocket child process of a {@link BrokerDeployment}, {@link MultiBrokerCluster} or
 * {@link HaCluster} ({@code namesrv}, {@code broker} or {@code standalone}),
 * restartable with the same command line. Its stdout and stderr are appended to one log file across
 * restarts, with a header line per start.
 */
final class FerrocketProcess {
    final String label;
    final Path workDir;
    final Path log;
    final List<String> command;
    private volatile Process process;
    private int starts;

    FerrocketProcess(String label, Path workDir, Path log, List<String> command) {
        this.label = label;
        this.workDir = workDir;
        this.log = log;
        this.command = List.copyOf(command);
    }

    boolean isAlive() {
        Process p = process;
        return p != null && p.isAlive();
    }

    boolean everStarted() {
        return process != null;
    }

    /** The exit code if it has exited, else null. */
    Integer exitCode() {
        Process p = process;
        return p == null || p.isAlive() ? null : p.exitValue();
    }

    void start() throws IOException {
        if (isAlive()) {
            throw new IllegalStateException("ferrocket " + label + " is already running");
        }
        starts++;
        Files.writeString(log, "==== [compat] start #" + starts + " at " + Instant.now() + ": "
                + String.join(" ", command) + "\n", StandardCharsets.UTF_8,
            StandardOpenOption.CREATE, StandardOpenOption.APPEND);
        ProcessBuilder builder = new ProcessBuilder(command)
            .directory(workDir.toFile())
            .redirectErrorStream(true)
            .redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile()));
        if (System.getenv("RUST_LOG") == null) {
            builder.environment().put("RUST_LOG", System.getProperty("ferrocket.rustLog", "info"));
        }
        process = builder.start();
    }

    /** Waits until {@code port} on 127.0.0.1 accepts connections; fails at once if the process exits. */
    void awaitPort(int port, Duration timeout) {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (System.nanoTime() - deadline < 0) {
            if (!process.isAlive()) {
                throw new IllegalStateException("ferrocket " + label + " exited with code " + process.exitValue()
                    + " before listening on port " + port + "\n" + logTail(60));
            }
            try (Socket socket = new Socket()) {
                socket.connect(new InetSocketAddress("127.0.0.1", port), 200);
                return;
            } catch (IOException notYet) {
                Wait.sleep(50);
            }
        }
        throw new IllegalStateException("ferrocket " + label + " did not accept connections on port " + port
            + " within " + timeout.toSeconds() + " s\n" + logTail(60));
    }

    /** SIGTERM, then SIGKILL after {@code timeout}; returns the exit code (-1 if it had to be killed). */
    int terminate(Duration timeout) throws InterruptedException {
        Process p = process;
        if (p == null) {
            return -1;
        }
        if (!p.isAlive()) {
            return p.exitValue();
        }
        p.destroy();
        if (p.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
            return p.exitValue();
        }
        System.err.println("[compat] ferrocket " + label + " did not exit within " + timeout.toSeconds()
            + " s of SIGTERM, killing it");
        p.destroyForcibly();
        p.waitFor(10, TimeUnit.SECONDS);
        return -1;
    }

    /** SIGKILL (a crash); waits until the process is gone. */
    void kill() throws InterruptedException {
        Process p = process;
        if (p != null) {
            p.destroyForcibly();
            if (!p.waitFor(10, TimeUnit.SECONDS)) {
                throw new IllegalStateException("ferrocket " + label + " survived SIGKILL for 10 s");
            }
        }
    }

    /**
     * SIGTERMs {@code processes} in this order, each given {@code grace} before SIGKILL. If the
     * caller is interrupted, the current and all remaining processes are SIGKILLed without waiting.
     */
    static void terminateAll(List<FerrocketProcess> processes, Duration grace) {
        for (int i = 0; i < processes.size(); i++) {
            try {
                processes.get(i).terminate(grace);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                processes.subList(i, processes.size()).forEach(FerrocketProcess::killNow);
                return;
            }
        }
    }

    /** The last {@code lines} lines of each process's log, one after the other. */
    static String logTails(List<FerrocketProcess> processes, int lines) {
        StringBuilder out = new StringBuilder();
        for (FerrocketProcess p : processes) {
            out.append(p.logTail(lines)).append('\n');
        }
        return out.toString();
    }

    /** SIGKILL without waiting (when the caller was interrupted). */
    void killNow() {
        Process p = process;
        if (p != null) {
            p.destroyForcibly();
        }
    }

    String logTail(int lines) {
        List<String> all;
        try {
            all = Files.exists(log) ? Files.readAllLines(log, StandardCharsets.UTF_8) : List.of();
        } catch (IOException e) {
            return "(cannot read " + log + ": " + e + ")";
        }
        List<String> tail = new ArrayList<>(all.subList(Math.max(0, all.size() - lines), all.size()));
        Process p = process;
        String state = p == null ? "never started" : p.isAlive() ? "running" : "exited " + p.exitValue();
        return "---- last " + tail.size() + " of " + all.size() + " lines of " + log + " (" + state + ") ----\n"
            + String.join("\n", tail) + "\n---- end of ferrocket " + label + " log ----";
    }
}
