package dev.ferrocket.compat;

import java.util.HashMap;
import java.util.Map;
import java.util.TreeMap;
import org.apache.rocketmq.remoting.CommandCustomHeader;
import org.apache.rocketmq.remoting.protocol.RemotingCommand;
import org.apache.rocketmq.remoting.protocol.RemotingSerializable;

/**
 * The official protocol classes by name relative to the generation's protocol package
 * ({@code header.namesrv.GetRouteInfoRequestHeader}, {@code heartbeat.HeartbeatData}), for code
 * that builds many different headers and bodies without naming their (moved) packages.
 */
public final class Protocol {
    private Protocol() {
    }

    /** The class {@code <protocolPackage>.<relative>}, or null if this generation has none. */
    public static Class<?> typeOrNull(String relative) {
        try {
            return Class.forName(Generation.current().protocolPackage() + "." + relative);
        } catch (ClassNotFoundException e) {
            return null;
        }
    }

    /**
     * A header object filled from ext-field strings by the official decoder
     * ({@code RemotingCommand.decodeCommandCustomHeader}), exactly as a receiver would fill it.
     * Fails if the official encoder would not write back the same keys (a misspelt or
     * unsupported field would otherwise vanish silently).
     */
    public static CommandCustomHeader header(String relative, Map<String, String> fields) throws Exception {
        Class<?> type = typeOrNull(relative);
        if (type == null) {
            throw new IllegalArgumentException("no class " + relative + " in " + Generation.current().protocolPackage());
        }
        @SuppressWarnings("unchecked")
        Class<? extends CommandCustomHeader> headerType = (Class<? extends CommandCustomHeader>) type;
        RemotingCommand carrier = RemotingCommand.createRequestCommand(0, null);
        carrier.setExtFields(new HashMap<>(fields));
        CommandCustomHeader header = carrier.decodeCommandCustomHeader(headerType);

        RemotingCommand check = RemotingCommand.createRequestCommand(0, header);
        check.makeCustomHeaderToNet();
        Map<String, String> written = check.getExtFields() == null ? Map.of() : new TreeMap<>(check.getExtFields());
        if (!written.equals(new TreeMap<>(fields))) {
            throw new IllegalArgumentException(relative + " does not round-trip: given " + new TreeMap<>(fields)
                + ", the official encoder writes " + written);
        }
        return header;
    }

    /**
     * Decodes the custom header of {@code cmd} as {@code relative} with the official decoder and
     * returns the fields the official encoder writes for it (null fields absent).
     */
    public static Map<String, String> decodeHeader(RemotingCommand cmd, String relative) throws Exception {
        @SuppressWarnings("unchecked")
        Class<? extends CommandCustomHeader> type = (Class<? extends CommandCustomHeader>) typeOrNull(relative);
        if (type == null) {
            throw new IllegalArgumentException("no class " + relative + " in " + Generation.current().protocolPackage());
        }
        CommandCustomHeader header = cmd.decodeCommandCustomHeader(type);
        RemotingCommand probe = RemotingCommand.createRequestCommand(0, header);
        probe.makeCustomHeaderToNet();
        return probe.getExtFields() == null ? Map.of() : new TreeMap<>(probe.getExtFields());
    }

    /** An official body object parsed from JSON by its own decoder, ready to {@code encode()} again. */
    public static RemotingSerializable body(String relative, String json) {
        Class<?> type = typeOrNull(relative);
        if (type == null) {
            throw new IllegalArgumentException("no class " + relative + " in " + Generation.current().protocolPackage());
        }
        return (RemotingSerializable) RemotingSerializable.decode(json.getBytes(java.nio.charset.StandardCharsets.UTF_8), type);
    }
}
