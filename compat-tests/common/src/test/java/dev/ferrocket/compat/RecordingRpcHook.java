package dev.ferrocket.compat;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import org.apache.rocketmq.remoting.RPCHook;
import org.apache.rocketmq.remoting.protocol.RemotingCommand;

/**
 * Records every request the official client sends and the response it got, as
 * {@code addr code -> code "remark"} lines, so failures show what went over the wire. Every line
 * is also appended to {@code target/compat-work/rpc-calls.log}.
 */
public final class RecordingRpcHook implements RPCHook {
    private static final List<String> LINES = new ArrayList<>();
    private static final Path FILE = TestDirs.root().resolve("rpc-calls.log");

    @Override
    public void doBeforeRequest(String remoteAddr, RemotingCommand request) {
    }

    @Override
    public void doAfterResponse(String remoteAddr, RemotingCommand request, RemotingCommand response) {
        String line = remoteAddr + " request " + request.getCode()
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

    /** All lines recorded since the last call, one per line, and forgets them. */
    public static String drainAll() {
        synchronized (LINES) {
            StringBuilder out = new StringBuilder();
            LINES.forEach(l -> out.append("  ").append(l).append('\n'));
            LINES.clear();
            return out.toString();
        }
    }
}
