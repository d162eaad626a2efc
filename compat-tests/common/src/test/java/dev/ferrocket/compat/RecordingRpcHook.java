package dev.ferrocket.compat;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.rocketmq.remoting.RPCHook;
import org.apache.rocketmq.remoting.protocol.RemotingCommand;

/**
 * Records every request an official client (admin tool, Java broker) sends and the answer it got,
 * as {@code label addr request code -> code "remark"} lines, so failures show what went over the
 * wire. Every line is also appended to {@code target/compat-work/rpc-calls.log}; the time of the
 * first request of each code is kept per hook.
 */
public final class RecordingRpcHook implements RPCHook {
    private static final List<String> LINES = new ArrayList<>();
    private static final Path FILE = TestDirs.root().resolve("rpc-calls.log");

    private final String label;
    private final Map<Integer, Long> firstSentNanos = new ConcurrentHashMap<>();

    public RecordingRpcHook(String label) {
        this.label = label;
    }

    @Override
    public void doBeforeRequest(String remoteAddr, RemotingCommand request) {
        firstSentNanos.putIfAbsent(request.getCode(), System.nanoTime());
    }

    @Override
    public void doAfterResponse(String remoteAddr, RemotingCommand request, RemotingCommand response) {
        String line = label + " " + remoteAddr + " request " + request.getCode()
            + (response == null ? " -> no response (oneway or timeout)"
            : " -> " + response.getCode() + (response.getRemark() == null ? "" : " \"" + response.getRemark() + "\""));
        synchronized (LINES) {
            LINES.add(line);
            try {
                Files.createDirectories(FILE.getParent());
                Files.writeString(FILE, line + "\n", StandardCharsets.UTF_8,
                    StandardOpenOption.CREATE, StandardOpenOption.APPEND);
            } catch (IOException ignored) {
                // the in-memory record is what failures print; the file is a convenience
            }
        }
    }

    /** {@link System#nanoTime()} when a request with {@code code} was first sent, or null. */
    public Long firstSentNanos(int code) {
        return firstSentNanos.get(code);
    }

    /** All lines recorded since the last call (repeats collapsed), and forgets them. */
    public static String drainAll() {
        synchronized (LINES) {
            StringBuilder out = new StringBuilder();
            int i = 0;
            while (i < LINES.size()) {
                int j = i;
                while (j + 1 < LINES.size() && LINES.get(j + 1).equals(LINES.get(i))) {
                    j++;
                }
                out.append("  ").append(LINES.get(i)).append(j > i ? "   (x" + (j - i + 1) + ")" : "").append('\n');
                i = j + 1;
            }
            LINES.clear();
            return out.toString();
        }
    }
}
