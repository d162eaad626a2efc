package dev.ferrocket.compat;

import io.netty.buffer.ByteBuf;
import io.netty.channel.embedded.EmbeddedChannel;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.rocketmq.common.MQVersion;
import org.apache.rocketmq.remoting.netty.NettyEncoder;
import org.apache.rocketmq.remoting.protocol.RemotingCommand;

/**
 * Writes frames produced by the official encoder ({@link NettyEncoder}, the same handler the Java
 * client and broker put in their Netty pipelines) as lowercase hex, one frame per
 * {@code <tag>_<name>.hex}, with a {@code .txt} that says what the frame holds.
 */
public final class GoldenFrames {
    private final Path dir;
    private final String tag;
    private final List<Path> written = new ArrayList<>();

    public GoldenFrames(Path dir, String tag) throws IOException {
        this.dir = Files.createDirectories(dir);
        this.tag = tag;
    }

    /** Encodes {@code cmd}, checks the official decoder reads it back, writes hex and description. */
    public byte[] write(String name, String description, RemotingCommand cmd) throws Exception {
        Map<String, String> expectedExt = expectedExtFields(cmd);
        EmbeddedChannel channel = new EmbeddedChannel(new NettyEncoder());
        if (!channel.writeOutbound(cmd)) {
            throw new IllegalStateException("NettyEncoder produced nothing for " + name);
        }
        ByteBuf buf = channel.readOutbound();
        byte[] frame = new byte[buf.readableBytes()];
        buf.readBytes(frame);
        buf.release();
        channel.finishAndReleaseAll();

        RemotingCommand back = RemotingCommand.decode(Arrays.copyOfRange(frame, 4, frame.length));
        String same = sameCommand(cmd, expectedExt, back);
        if (same != null) {
            throw new AssertionError(name + ": the official decoder reads back a different command: " + same);
        }

        String base = tag + "_" + name;
        Path hex = dir.resolve(base + ".hex");
        Files.writeString(hex, HexFormat.of().formatHex(frame) + "\n", StandardCharsets.US_ASCII);
        Files.writeString(dir.resolve(base + ".txt"), describe(base, description, cmd, expectedExt, frame),
            StandardCharsets.UTF_8);
        written.add(hex);
        return frame;
    }

    public List<Path> written() {
        return written;
    }

    /**
     * The ext fields a receiver will see: the header object's fields plus extra ext fields. (For
     * FastCodesHeader classes in ROCKETMQ form the encoder writes the header fields straight to
     * the wire without copying them into the command's map.)
     */
    private static Map<String, String> expectedExtFields(RemotingCommand cmd) {
        Map<String, String> ext = new TreeMap<>();
        if (cmd.readCustomHeader() != null) {
            RemotingCommand probe = RemotingCommand.createRequestCommand(0, cmd.readCustomHeader());
            probe.makeCustomHeaderToNet();
            if (probe.getExtFields() != null) {
                ext.putAll(probe.getExtFields());
            }
        }
        if (cmd.getExtFields() != null) {
            ext.putAll(cmd.getExtFields());
        }
        return ext;
    }

    private static String sameCommand(RemotingCommand a, Map<String, String> ea, RemotingCommand b) {
        Map<String, String> eb = b.getExtFields() == null ? Map.of() : new TreeMap<>(b.getExtFields());
        if (a.getCode() != b.getCode() || a.getFlag() != b.getFlag() || a.getOpaque() != b.getOpaque()
            || a.getVersion() != b.getVersion() || a.getLanguage() != b.getLanguage()) {
            return "fixed fields " + a + " vs " + b;
        }
        if (!java.util.Objects.equals(a.getRemark(), b.getRemark())) {
            return "remark " + a.getRemark() + " vs " + b.getRemark();
        }
        if (!ea.equals(eb)) {
            return "extFields " + ea + " vs " + eb;
        }
        byte[] bodyA = a.getBody() == null ? new byte[0] : a.getBody();
        byte[] bodyB = b.getBody() == null ? new byte[0] : b.getBody();
        if (!Arrays.equals(bodyA, bodyB)) {
            return "body differs";
        }
        return null;
    }

    private String describe(String base, String description, RemotingCommand cmd, Map<String, String> ext, byte[] frame) {
        int headerWord = ((frame[4] & 0xff) << 24) | ((frame[5] & 0xff) << 16) | ((frame[6] & 0xff) << 8) | (frame[7] & 0xff);
        int headerLength = headerWord & 0xffffff;
        int serializeType = (headerWord >>> 24) & 0xff;
        int bodyLength = frame.length - 8 - headerLength;
        StringBuilder out = new StringBuilder();
        out.append(base).append(".hex: ").append(description).append('\n')
            .append("produced by: org.apache.rocketmq.remoting.netty.NettyEncoder of RocketMQ ")
            .append(MQVersion.getVersionDesc(MQVersion.CURRENT_VERSION)).append('\n')
            .append("frame bytes: ").append(frame.length).append(" (length field ").append(frame.length - 4)
            .append(", header ").append(headerLength).append(", body ").append(bodyLength).append(")\n")
            .append("serialize type byte: ").append(serializeType).append(serializeType == 0 ? " (JSON)" : " (ROCKETMQ)").append('\n')
            .append("code: ").append(cmd.getCode()).append('\n')
            .append("flag: ").append(cmd.getFlag())
            .append((cmd.getFlag() & 1) != 0 ? " (response)" : " (request)")
            .append((cmd.getFlag() & 2) != 0 ? " (oneway)" : "").append('\n')
            .append("opaque: ").append(cmd.getOpaque()).append('\n')
            .append("version: ").append(cmd.getVersion()).append('\n')
            .append("language: ").append(cmd.getLanguage()).append('\n')
            .append("remark: ").append(cmd.getRemark()).append('\n')
            .append("extFields: ").append(ext.isEmpty() && cmd.getExtFields() == null ? "null" : ext).append('\n');
        if (serializeType == 0) {
            out.append("header JSON: ").append(new String(frame, 8, headerLength, StandardCharsets.UTF_8)).append('\n');
        }
        if (bodyLength > 0) {
            out.append("body (UTF-8): ").append(new String(frame, 8 + headerLength, bodyLength, StandardCharsets.UTF_8)).append('\n');
        }
        return escapeControls(out.toString());
    }

    /** Control characters other than newline (\u0001/\u0002 in message properties) as escapes. */
    private static String escapeControls(String text) {
        StringBuilder out = new StringBuilder(text.length());
        for (char c : text.toCharArray()) {
            if (c < 0x20 && c != '\n') {
                out.append(String.format("\\u%04x", (int) c));
            } else {
                out.append(c);
            }
        }
        return out.toString();
    }
}
