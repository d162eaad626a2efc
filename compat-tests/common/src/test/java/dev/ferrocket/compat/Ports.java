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

    /**
     * A port {@code p} such that {@code p - 2} (the Java broker's "fast" port), {@code p} and
     * {@code p + 1} (its HA port) are all free.
     */
    public static int freeBrokerPort() {
        for (int attempt = 0; attempt < 200; attempt++) {
            int p = ThreadLocalRandom.current().nextInt(20_000, 40_000);
            if (isFree(p - 2) && isFree(p) && isFree(p + 1)) {
                return p;
            }
        }
        throw new IllegalStateException("found no free port triple (p-2, p, p+1) in 20000..40000");
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
