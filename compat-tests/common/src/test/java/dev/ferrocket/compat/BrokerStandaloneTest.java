package dev.ferrocket.compat;

/** {@link BrokerClientTests} against {@code ferrocket standalone} (NameServer and broker in one process). */
class BrokerStandaloneTest extends BrokerClientTests {
    @Override
    protected BrokerDeployment.Mode mode() {
        return BrokerDeployment.Mode.STANDALONE;
    }
}
