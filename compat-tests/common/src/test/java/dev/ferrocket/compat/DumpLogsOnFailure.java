package dev.ferrocket.compat;

import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.TestWatcher;

/**
 * On a failed test, prints the log tail of every ferrocket process that was running during it
 * (started before or by the test), and the requests the official admin client and Java broker
 * sent with the answers they got.
 */
public final class DumpLogsOnFailure implements TestWatcher, BeforeAllCallback {
    private long classStartedNanos;

    @Override
    public void beforeAll(ExtensionContext context) {
        classStartedNanos = System.nanoTime();
    }

    @Override
    public void testFailed(ExtensionContext context, Throwable cause) {
        StringBuilder out = new StringBuilder("\n[compat] " + context.getDisplayName() + " failed: " + cause + "\n");
        for (Ferrocket f : Ferrocket.STARTED) {
            if (f.isAlive() || f.startedNanos - classStartedNanos >= 0) {
                out.append(f).append('\n').append(f.logTail(40)).append('\n');
            }
        }
        String calls = RecordingRpcHook.drainAll();
        if (!calls.isEmpty()) {
            out.append("---- remoting calls made by the official client (request code -> response code) ----\n")
                .append(calls).append("---- end ----\n");
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
