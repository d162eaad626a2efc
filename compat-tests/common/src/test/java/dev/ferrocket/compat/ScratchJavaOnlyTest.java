package dev.ferrocket.compat;

import java.nio.file.Path;
import org.apache.rocketmq.store.config.FlushDiskType;
import org.junit.jupiter.api.Test;

class ScratchJavaOnlyTest {
    @Test
    void javaWrittenJavaReopened() throws Exception {
        Path dir = TestDirs.fresh("scratch-java-only");
        StoreInteropTest.JavaWritten w = StoreInteropTest.writeWithJava(dir, StoreInteropTest.corpus(5, 600));
        for (int i = 0; i < 2; i++) {
            try (JavaStore java = JavaStore.open(dir, StoreInteropTest.SIZES, FlushDiskType.ASYNC_FLUSH)) {
                StoreInteropTest.assertJavaReads(java, w.messages());
            }
        }
    }
}
