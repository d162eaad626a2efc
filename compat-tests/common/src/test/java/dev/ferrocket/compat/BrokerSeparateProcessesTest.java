package dev.ferrocket.compat;

/** {@link BrokerClientTests} against separate {@code ferrocket namesrv} and {@code ferrocket broker} processes. */
class BrokerSeparateProcessesTest extends BrokerClientTests {
    @Override
    protected BrokerDeployment.Mode mode() {
        return BrokerDeployment.Mode.SEPARATE;
    }
}
