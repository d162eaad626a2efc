package dev.ferrocket.compat;

import com.alibaba.fastjson.JSONObject;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.UnknownHostException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;
import org.apache.rocketmq.common.message.MessageExt;

/**
 * One message as a store holds it: the fields of a CommitLog record that {@code ferrocket store dump}
 * prints and {@code ferrocket store load} reads (one JSON object per line). {@code queueOffset},
 * {@code commitLogOffset} and {@code storeTimestamp} are assigned by the store; they are -1 while
 * unknown (a message about to be written).
 */
public record StoreMessage(
    String topic,
    int queueId,
    long queueOffset,
    long commitLogOffset,
    long storeTimestamp,
    long bornTimestamp,
    InetSocketAddress bornHost,
    InetSocketAddress storeHost,
    int flag,
    int sysFlag,
    int reconsumeTimes,
    long preparedTransactionOffset,
    byte[] body,
    Map<String, String> properties) {

    private static final HexFormat HEX = HexFormat.of();

    /** A message to write: offsets and store time unknown. Properties keep their insertion order. */
    public static StoreMessage toWrite(String topic, int queueId, long bornTimestamp, InetSocketAddress bornHost,
        InetSocketAddress storeHost, int flag, int sysFlag, int reconsumeTimes, long preparedTransactionOffset,
        byte[] body, Map<String, String> properties) {
        return new StoreMessage(topic, queueId, -1, -1, -1, bornTimestamp, bornHost, storeHost, flag, sysFlag,
            reconsumeTimes, preparedTransactionOffset, body, new LinkedHashMap<>(properties));
    }

    /** What the Java store returned ({@code MessageDecoder.decode} of a record). */
    public static StoreMessage of(MessageExt m) {
        return new StoreMessage(m.getTopic(), m.getQueueId(), m.getQueueOffset(), m.getCommitLogOffset(),
            m.getStoreTimestamp(), m.getBornTimestamp(), (InetSocketAddress) m.getBornHost(),
            (InetSocketAddress) m.getStoreHost(), m.getFlag(), m.getSysFlag(), m.getReconsumeTimes(),
            m.getPreparedTransactionOffset(), m.getBody() == null ? new byte[0] : m.getBody(),
            new TreeMap<>(m.getProperties()));
    }

    /** A line printed by {@code ferrocket store dump|load}. */
    public static StoreMessage of(JSONObject o) {
        Map<String, String> props = new TreeMap<>();
        JSONObject p = o.getJSONObject("properties");
        if (p != null) {
            p.forEach((k, v) -> props.put(k, String.valueOf(v)));
        }
        return new StoreMessage(o.getString("topic"), o.getIntValue("queueId"), o.getLongValue("queueOffset"),
            o.getLongValue("commitLogOffset"), o.getLongValue("storeTimestamp"), o.getLongValue("bornTimestamp"),
            parseHost(o.getString("bornHost")), parseHost(o.getString("storeHost")), o.getIntValue("flag"),
            o.getIntValue("sysFlag"), o.getIntValue("reconsumeTimes"), o.getLongValue("preparedTransactionOffset"),
            HEX.parseHex(Objects.requireNonNullElse(o.getString("bodyHex"), "")), props);
    }

    /** The JSON object {@code ferrocket store load} reads (store-assigned fields left out). */
    public JSONObject toLoadJson() {
        JSONObject o = new JSONObject(new LinkedHashMap<>());
        o.put("topic", topic);
        o.put("queueId", queueId);
        o.put("bornTimestamp", bornTimestamp);
        o.put("bornHost", formatHost(bornHost));
        o.put("storeHost", formatHost(storeHost));
        o.put("flag", flag);
        o.put("sysFlag", sysFlag);
        o.put("reconsumeTimes", reconsumeTimes);
        o.put("preparedTransactionOffset", preparedTransactionOffset);
        o.put("bodyHex", HEX.formatHex(body));
        o.put("properties", new LinkedHashMap<>(properties));
        return o;
    }

    /** {@code 1.2.3.4:5} or {@code [::1]:5}, as ferrocket prints a SocketAddr. */
    static String formatHost(InetSocketAddress a) {
        String ip = a.getAddress().getHostAddress();
        return (ip.contains(":") ? "[" + ip + "]" : ip) + ":" + a.getPort();
    }

    static InetSocketAddress parseHost(String s) {
        if (s == null) {
            return null;
        }
        int colon = s.lastIndexOf(':');
        String ip = s.substring(0, colon);
        if (ip.startsWith("[") && ip.endsWith("]")) {
            ip = ip.substring(1, ip.length() - 1);
        }
        try {
            // an IP literal: no name lookup
            return new InetSocketAddress(InetAddress.getByName(ip), Integer.parseInt(s.substring(colon + 1)));
        } catch (UnknownHostException | NumberFormatException e) {
            throw new IllegalArgumentException("not an ip:port: '" + s + "'", e);
        }
    }

    public String tags() {
        return properties.get("TAGS");
    }

    /** Non-empty entries of the KEYS property, split on a space as the Java IndexService does. */
    public List<String> keys() {
        String keys = properties.get("KEYS");
        List<String> out = new ArrayList<>();
        if (keys != null) {
            for (String k : keys.split(" ")) {
                if (!k.isEmpty()) {
                    out.add(k);
                }
            }
        }
        return out;
    }

    public String uniqKey() {
        return properties.get("UNIQ_KEY");
    }

    /** Short identification for failure messages. */
    public String id() {
        return topic + "/" + queueId + "@" + (queueOffset >= 0 ? queueOffset : "?")
            + " (commitLogOffset " + (commitLogOffset >= 0 ? commitLogOffset : "?") + ", " + body.length
            + "-byte body, keys " + properties.get("KEYS") + ")";
    }

    /**
     * Every field that differs, as {@code field: expected X, actual Y}. With {@code storeAssigned}
     * false, queueOffset, commitLogOffset and storeTimestamp are not compared (the message was only
     * written, not yet stored).
     */
    public List<String> differences(StoreMessage actual, boolean storeAssigned) {
        List<String> d = new ArrayList<>();
        diff(d, "topic", topic, actual.topic);
        diff(d, "queueId", queueId, actual.queueId);
        if (storeAssigned) {
            diff(d, "queueOffset", queueOffset, actual.queueOffset);
            diff(d, "commitLogOffset", commitLogOffset, actual.commitLogOffset);
            diff(d, "storeTimestamp", storeTimestamp, actual.storeTimestamp);
        }
        diff(d, "bornTimestamp", bornTimestamp, actual.bornTimestamp);
        diff(d, "bornHost", bornHost, actual.bornHost);
        diff(d, "storeHost", storeHost, actual.storeHost);
        diff(d, "flag", flag, actual.flag);
        diff(d, "sysFlag", sysFlag, actual.sysFlag);
        diff(d, "reconsumeTimes", reconsumeTimes, actual.reconsumeTimes);
        diff(d, "preparedTransactionOffset", preparedTransactionOffset, actual.preparedTransactionOffset);
        if (!Arrays.equals(body, actual.body)) {
            d.add("body: expected " + body.length + " bytes " + abbreviatedHex(body) + ", actual "
                + actual.body.length + " bytes " + abbreviatedHex(actual.body));
        }
        diff(d, "properties", new TreeMap<>(properties), new TreeMap<>(actual.properties));
        return d;
    }

    private static void diff(List<String> d, String field, Object expected, Object actual) {
        if (!Objects.equals(expected, actual)) {
            d.add(field + ": expected " + expected + ", actual " + actual);
        }
    }

    private static String abbreviatedHex(byte[] b) {
        String hex = HEX.formatHex(b, 0, Math.min(b.length, 24));
        return b.length > 24 ? hex + "…" : hex;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof StoreMessage m && differences(m, true).isEmpty();
    }

    @Override
    public int hashCode() {
        return Objects.hash(topic, queueId, queueOffset, commitLogOffset);
    }

    @Override
    public String toString() {
        return "StoreMessage{" + id() + ", props " + properties + "}";
    }
}
