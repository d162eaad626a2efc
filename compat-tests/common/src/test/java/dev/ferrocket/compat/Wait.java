package dev.ferrocket.compat;

import java.time.Duration;
import java.util.concurrent.Callable;
import java.util.function.Predicate;

/**
 * Polling with a deadline: the only way these tests wait for something to happen. Each wait names
 * what it waits for, and on timeout fails with that name, the time spent and the last value or
 * exception seen, so a failure says what the server answered instead of "condition was false".
 */
public final class Wait {
    private static final long POLL_MILLIS = 100;

    private Wait() {
    }

    /** Polls {@code probe} until {@code done} accepts its value; returns that value. */
    public static <T> T until(String what, Duration timeout, Callable<T> probe, Predicate<? super T> done) {
        long start = System.nanoTime();
        long deadline = start + timeout.toNanos();
        T last = null;
        Throwable lastError = null;
        while (true) {
            try {
                last = probe.call();
                lastError = null;
                if (done.test(last)) {
                    return last;
                }
            } catch (Exception e) {
                lastError = e;
            }
            if (System.nanoTime() - deadline >= 0) {
                long spent = Duration.ofNanos(System.nanoTime() - start).toMillis();
                String detail = lastError != null
                    ? "last attempt threw " + lastError
                    : "last value: " + last;
                AssertionError failure = new AssertionError(
                    "timed out after " + spent + " ms waiting for " + what + "; " + detail);
                if (lastError != null) {
                    failure.initCause(lastError);
                }
                throw failure;
            }
            sleep(POLL_MILLIS);
        }
    }

    /** Polls until {@code condition} returns true. */
    public static void until(String what, Duration timeout, Callable<Boolean> condition) {
        until(what, timeout, condition, Boolean.TRUE::equals);
    }

    static void sleep(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while waiting", e);
        }
    }
}
