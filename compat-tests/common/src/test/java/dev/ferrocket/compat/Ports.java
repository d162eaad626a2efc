package dev.ferrocket.compat;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.util.concurrent.ThreadLocalRandom;

/** Free loopback ports for the servers a test starts. */
public final class Ports {
    private Ports() {
    }

    /** A port that is free right now on 127.0.0.1 (chosen by the OS). */
    public static int free() {
        try (ServerSocket socket = new ServerSocket()) {
            socket.setReuseAddress(false);
            socket.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
            return socket.getLocalPort();
        } catch (IOException e) {
            throw new IllegalStateException("no free port on 127.0.0.1", e);
        }
    }

    /** Ports {@link #freeBrokerPort} handed out in this JVM (a broker may not have bound them yet). */
    private static final java.util.Set<Integer> HANDED_OUT = java.util.concurrent.ConcurrentHashMap.newKeySet();

    /**
     * A port {@code p} such that {@code p - 2} (the broker's VIP/"fast" port), {@code p} and
     * {@code p + 1} (its default HA port) are all free. Taken below Linux's ephemeral range
     * (32768..60999), so no outgoing connection can occupy them between this check and the
     * broker's bind, and never one handed out before in this JVM.
     */
    public static synchronized int freeBrokerPort() {
        for (int attempt = 0; attempt < 500; attempt++) {
            int p = ThreadLocalRandom.current().nextInt(10_002, 32_000);
            if (HANDED_OUT.contains(p - 2) || HANDED_OUT.contains(p) || HANDED_OUT.contains(p + 1)) {
                continue;
            }
            if (isFree(p - 2) && isFree(p) && isFree(p + 1)) {
                HANDED_OUT.add(p - 2);
                HANDED_OUT.add(p);
                HANDED_OUT.add(p + 1);
                return p;
            }
        }
        throw new IllegalStateException("found no free port triple (p-2, p, p+1) in 10000..32000");
    }

    static boolean isFree(int port) {
        try (ServerSocket socket = new ServerSocket()) {
            socket.setReuseAddress(false);
            socket.bind(new InetSocketAddress("0.0.0.0", port));
            return true;
        } catch (IOException e) {
            return false;
        }
    }
}
