package dev.ferrocket.compat;

import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.TestWatcher;

/**
 * On a failed test, prints the log tail of every ferrocket process of every {@link BrokerDeployment}
 * and {@link MultiBrokerCluster} running during it, and the last remoting calls the official clients
 * made (request code → response code and remark).
 */
public final class BrokerLogsOnFailure implements TestWatcher, BeforeAllCallback {
    private static final int CALL_LINES = 120;
    private long classStartedNanos;

    @Override
    public void beforeAll(ExtensionContext context) {
        classStartedNanos = System.nanoTime();
    }

    @Override
    public void testFailed(ExtensionContext context, Throwable cause) {
        StringBuilder out = new StringBuilder("\n[compat] " + context.getRequiredTestClass().getSimpleName() + "."
            + context.getDisplayName() + " failed: " + cause + "\n");
        for (BrokerDeployment d : BrokerDeployment.STARTED) {
            if (d.isAlive() || d.startedNanos - classStartedNanos >= 0) {
                out.append(d).append('\n').append(d.logTails(60));
            }
        }
        for (MultiBrokerCluster c : MultiBrokerCluster.STARTED) {
            if (c.isAlive() || c.startedNanos - classStartedNanos >= 0) {
                out.append(c).append('\n').append(c.logTails(60));
            }
        }
        List<String> calls = Arrays.asList(RecordingRpcHook.drainAll().split("\n"));
        if (!calls.isEmpty() && !(calls.size() == 1 && calls.get(0).isEmpty())) {
            out.append("---- last remoting calls made by the official clients (request code -> response code), ")
                .append(Math.min(CALL_LINES, calls.size())).append(" of ").append(calls.size()).append(" ----\n")
                .append(String.join("\n", calls.subList(Math.max(0, calls.size() - CALL_LINES), calls.size())))
                .append("\n---- end ----\n");
        }
        System.err.println(out);
    }

    @Override
    public void testSuccessful(ExtensionContext context) {
        RecordingRpcHook.drainAll();
    }

    @Override
    public void testAborted(ExtensionContext context, Throwable cause) {
        RecordingRpcHook.drainAll();
    }
}
