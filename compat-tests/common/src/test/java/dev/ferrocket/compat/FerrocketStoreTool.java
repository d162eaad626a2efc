package dev.ferrocket.compat;

import com.alibaba.fastjson.JSON;
import com.alibaba.fastjson.JSONObject;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * {@code <ferrocket.bin> store dump|load --dir <dir> <size flags>}: ferrocket's store opened on a
 * directory in the Java layout. stdout holds one JSON object per message ({@link StoreMessage});
 * stdout and stderr (the log) are kept under the work directory as
 * {@code ferrocket-store-<action>-<pid>-<n>.out|.log}.
 */
public final class FerrocketStoreTool {
    private static final AtomicInteger SEQ = new AtomicInteger();
    private static final long TIMEOUT_SECONDS = 60;

    private FerrocketStoreTool() {
    }

    /** Every message of every ConsumeQueue of the store, as {@code store dump} prints them. */
    public static List<StoreMessage> dump(Path dir, JavaStore.Sizes sizes) {
        return run("dump", dir, sizes, List.of());
    }

    /**
     * Appends each line (a message or {@code {"batch":[...]}}); returns what ferrocket printed back:
     * every stored message with its offsets and store time.
     */
    public static List<StoreMessage> load(Path dir, JavaStore.Sizes sizes, List<JSONObject> lines) {
        List<String> text = new ArrayList<>();
        for (JSONObject line : lines) {
            text.add(line.toJSONString());
        }
        return run("load", dir, sizes, text);
    }

    /** What one run left: exit code, stdout lines, the log file. */
    public record Result(String command, int exitCode, List<String> stdout, Path log) {
        /** The stdout lines as messages; fails unless the run exited 0 and printed only JSON objects. */
        public List<StoreMessage> messages() {
            if (exitCode != 0) {
                throw new AssertionError(command + " exited with code " + exitCode + "\n" + tail(log));
            }
            List<StoreMessage> messages = new ArrayList<>();
            int n = 0;
            for (String line : stdout) {
                n++;
                if (line.isBlank()) {
                    continue;
                }
                JSONObject o;
                try {
                    o = JSON.parseObject(line);
                } catch (RuntimeException e) {
                    throw new AssertionError(command + ": stdout line " + n + " is not a JSON object: " + line, e);
                }
                messages.add(StoreMessage.of(o));
            }
            return messages;
        }

        public String logTail() {
            return tail(log);
        }
    }

    /** A running {@code store load} that keeps the store open until {@link #finish()} closes its stdin. */
    public static final class Running implements AutoCloseable {
        private final String command;
        private final Process process;
        private final Path out;
        private final Path log;
        private Result result;

        private Running(String command, Process process, Path out, Path log) {
            this.command = command;
            this.process = process;
            this.out = out;
            this.log = log;
        }

        public boolean isAlive() {
            return process.isAlive();
        }

        public Path log() {
            return log;
        }

        /** Closes stdin (end of input) and waits for the exit. */
        public synchronized Result finish() {
            if (result == null) {
                try {
                    process.getOutputStream().close();
                    if (!process.waitFor(TIMEOUT_SECONDS, TimeUnit.SECONDS)) {
                        process.destroyForcibly().waitFor(5, TimeUnit.SECONDS);
                        throw new AssertionError(command + " did not finish within " + TIMEOUT_SECONDS + " s\n"
                            + tail(log));
                    }
                    result = new Result(command, process.exitValue(), Files.readAllLines(out, StandardCharsets.UTF_8),
                        log);
                } catch (IOException e) {
                    throw new AssertionError("could not finish " + command, e);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    process.destroyForcibly();
                    throw new AssertionError("interrupted while running " + command, e);
                }
            }
            return result;
        }

        @Override
        public void close() {
            finish();
        }
    }

    /** Starts {@code store load} and writes nothing: ferrocket holds the store open until finish(). */
    public static Running startLoad(Path dir, JavaStore.Sizes sizes) {
        return start("load", dir, sizes, List.of());
    }

    /** Runs {@code store <action>} to the end, whatever its exit code. */
    public static Result exec(String action, Path dir, JavaStore.Sizes sizes, List<String> stdin) {
        return start(action, dir, sizes, stdin).finish();
    }

    private static List<StoreMessage> run(String action, Path dir, JavaStore.Sizes sizes, List<String> stdin) {
        return exec(action, dir, sizes, stdin).messages();
    }

    private static Running start(String action, Path dir, JavaStore.Sizes sizes, List<String> stdin) {
        Path bin = Ferrocket.binary();
        String name = "ferrocket-store-" + action + "-" + ProcessHandle.current().pid() + "-" + SEQ.incrementAndGet();
        Path out = TestDirs.root().resolve(name + ".out");
        Path log = TestDirs.root().resolve(name + ".log");
        List<String> command = new ArrayList<>(List.of(bin.toString(), "store", action, "--dir", dir.toString()));
        command.addAll(sizes.ferrocketFlags());
        String what = String.join(" ", command);
        try {
            Files.createDirectories(TestDirs.root());
            if (!stdin.isEmpty()) {
                Files.write(TestDirs.root().resolve(name + ".in"), stdin, StandardCharsets.UTF_8);
            }
            ProcessBuilder builder = new ProcessBuilder(command)
                .redirectOutput(out.toFile())
                .redirectError(log.toFile());
            builder.environment().putIfAbsent("FERROCKET_LOG", System.getProperty("ferrocket.rustLog", "info"));
            Process process = builder.start();
            OutputStream in = process.getOutputStream();
            for (String line : stdin) {
                in.write(line.getBytes(StandardCharsets.UTF_8));
                in.write('\n');
            }
            in.flush();
            return new Running(what, process, out, log);
        } catch (IOException e) {
            throw new AssertionError("could not run " + what, e);
        }
    }

    private static String tail(Path log) {
        try {
            List<String> all = Files.readAllLines(log, StandardCharsets.UTF_8);
            return "---- last lines of " + log + " ----\n"
                + String.join("\n", all.subList(Math.max(0, all.size() - 40), all.size())) + "\n---- end ----";
        } catch (IOException e) {
            return "(cannot read " + log + ": " + e + ")";
        }
    }
}
