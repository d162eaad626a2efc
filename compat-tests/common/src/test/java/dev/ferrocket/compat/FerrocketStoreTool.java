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

    private static List<StoreMessage> run(String action, Path dir, JavaStore.Sizes sizes, List<String> stdin) {
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
            try (OutputStream in = process.getOutputStream()) {
                for (String line : stdin) {
                    in.write(line.getBytes(StandardCharsets.UTF_8));
                    in.write('\n');
                }
            }
            if (!process.waitFor(TIMEOUT_SECONDS, TimeUnit.SECONDS)) {
                process.destroyForcibly().waitFor(5, TimeUnit.SECONDS);
                throw new AssertionError(what + " did not finish within " + TIMEOUT_SECONDS + " s\n" + tail(log));
            }
            if (process.exitValue() != 0) {
                throw new AssertionError(what + " exited with code " + process.exitValue() + "\n" + tail(log));
            }
            List<StoreMessage> messages = new ArrayList<>();
            int n = 0;
            for (String line : Files.readAllLines(out, StandardCharsets.UTF_8)) {
                n++;
                if (line.isBlank()) {
                    continue;
                }
                JSONObject o;
                try {
                    o = JSON.parseObject(line);
                } catch (RuntimeException e) {
                    throw new AssertionError(what + ": stdout line " + n + " is not a JSON object: " + line, e);
                }
                messages.add(StoreMessage.of(o));
            }
            return messages;
        } catch (IOException e) {
            throw new AssertionError("could not run " + what, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError("interrupted while running " + what, e);
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
