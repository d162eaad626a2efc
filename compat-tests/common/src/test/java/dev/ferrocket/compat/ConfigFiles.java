package dev.ferrocket.compat;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;

/** Writes the {@code key=value} files ferrocket and the Java broker read (broker.conf, namesrv.conf). */
final class ConfigFiles {
    private ConfigFiles() {
    }

    /** Writes {@code values} in their iteration order (ISO-8859-1, as java.util.Properties reads); returns {@code file}. */
    static Path write(Path file, Map<String, String> values) {
        StringBuilder text = new StringBuilder("# written by the compat tests\n");
        values.forEach((k, v) -> text.append(k).append('=').append(v).append('\n'));
        try {
            return Files.writeString(file, text.toString(), StandardCharsets.ISO_8859_1);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write " + file, e);
        }
    }
}
