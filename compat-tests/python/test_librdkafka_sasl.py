"""librdkafka (confluent-kafka) with SASL against the ACL accounts (aclEnable=true): for PLAIN,
SCRAM-SHA-256 and SCRAM-SHA-512 on SASL_PLAINTEXT and (once the Kafka port speaks TLS,
tls.server.mode=permissive) SASL_SSL, a good account produces and consumes in its group, a wrong
password is reported as an authentication error, an account without permission on the topic as a
topic authorization error. The broker here is its own (ACL on), not the session's."""

import os
import shutil
import socket
import ssl
import subprocess
import tempfile
import time
import uuid

import pytest
from confluent_kafka import Consumer, KafkaError, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from ferrocket_proc import free_port, wait_port

RUN = uuid.uuid4().hex[:8]
TOPIC, GROUP = f"sasl-{RUN}", f"sasl-g-{RUN}"
USER, SECRET = "rdkUser01", "rdkSecret01"
OTHER, OTHER_SECRET = "rdkOther01", "otherSecret01"
ADMIN, ADMIN_SECRET = "rdkAdmin01", "adminSecret01"
MECHANISMS = ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]


class SaslBroker:
    def __init__(self, binary, root):
        self.root = root
        conf = os.path.join(root, "conf")
        os.makedirs(conf)
        with open(os.path.join(conf, "plain_acl.yml"), "w") as f:
            f.write(f"""accounts:
  - accessKey: {USER}
    secretKey: {SECRET}
    defaultTopicPerm: DENY
    defaultGroupPerm: DENY
    topicPerms: ['{TOPIC}=PUB|SUB']
    groupPerms: ['{GROUP}=SUB']
  - accessKey: {OTHER}
    secretKey: {OTHER_SECRET}
    defaultTopicPerm: DENY
  - accessKey: {ADMIN}
    secretKey: {ADMIN_SECRET}
    admin: true
""")
        self.cert, key = os.path.join(root, "cert.pem"), os.path.join(root, "key.pem")
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", self.cert,
                        "-days", "2", "-subj", "/CN=localhost"], check=True, capture_output=True, timeout=60)
        ns, broker = free_port(), free_port()
        while abs(broker - ns) <= 2:
            broker = free_port() + 10
        self.kafka_port = free_port()
        while min(abs(self.kafka_port - p) for p in (ns, broker)) <= 2:
            self.kafka_port = free_port() + 20
        with open(os.path.join(root, "broker.conf"), "w") as f:
            f.write("\n".join([
                "brokerClusterName=PySaslCluster", "brokerName=py-sasl-a", "brokerIP1=127.0.0.1",
                f"listenPort={broker}", f"storePathRootDir={root}/store", "cleanFileForciblyEnable=false",
                "aclEnable=true", f"rocketmqHome={root}",
                f"kafkaListenPort={self.kafka_port}", f"kafkaAdvertisedAddress=127.0.0.1:{self.kafka_port}",
                "tls.server.mode=permissive", f"tls.server.certPath={self.cert}", f"tls.server.keyPath={key}",
            ]) + "\n")
        with open(os.path.join(root, "namesrv.conf"), "w") as f:
            f.write(f"listenPort={ns}\n")
        self.log = open(os.path.join(root, "ferrocket.log"), "w")
        self.proc = subprocess.Popen(
            [binary, "standalone", "-c", f"{root}/broker.conf", "--namesrv-config", f"{root}/namesrv.conf"],
            stdout=self.log, stderr=subprocess.STDOUT)
        if not wait_port(self.kafka_port, 30):
            self.stop()
            raise RuntimeError(f"ferrocket did not start; log {root}/ferrocket.log")

    def speaks_tls(self):
        ctx = ssl.create_default_context()
        ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
        try:
            with socket.create_connection(("127.0.0.1", self.kafka_port), timeout=5) as s:
                with ctx.wrap_socket(s):
                    return True
        except (OSError, ssl.SSLError):
            return False

    def conf(self, protocol, mechanism, user, password):
        c = {"bootstrap.servers": f"127.0.0.1:{self.kafka_port}", "security.protocol": protocol,
             "sasl.mechanism": mechanism, "sasl.username": user, "sasl.password": password}
        if protocol == "SASL_SSL":
            c.update({"ssl.ca.location": self.cert, "ssl.endpoint.identification.algorithm": "none"})
        return c

    def errors(self):
        with open(os.path.join(self.root, "ferrocket.log")) as f:
            return [line for line in f if " ERROR " in line]

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()


@pytest.fixture(scope="module")
def broker():
    binary = os.environ.get("FERROCKET_BIN") or os.path.join(
        os.path.dirname(__file__), "..", "..", "target", "release", "ferrocket")
    root = tempfile.mkdtemp(prefix="ferrocket-py-sasl-")
    b = SaslBroker(os.path.abspath(binary), root)
    admin = AdminClient(b.conf("SASL_PLAINTEXT", "SCRAM-SHA-512", ADMIN, ADMIN_SECRET))
    for f in admin.create_topics([NewTopic(TOPIC, num_partitions=1, replication_factor=1)]).values():
        f.result(30)
    yield b
    errors = b.errors()
    b.stop()
    assert not errors, f"ERROR lines in {root}/ferrocket.log: {errors[:3]}"
    for secret in (SECRET, OTHER_SECRET, ADMIN_SECRET, "wrongPassword"):
        with open(os.path.join(root, "ferrocket.log")) as f:
            assert secret not in f.read(), "a secret reached the broker log"
    shutil.rmtree(root, ignore_errors=True)


@pytest.mark.parametrize("mechanism", MECHANISMS)
@pytest.mark.parametrize("protocol", ["SASL_PLAINTEXT", "SASL_SSL"])
def test_sasl_accounts(broker, protocol, mechanism):
    if protocol == "SASL_SSL" and not broker.speaks_tls():
        pytest.skip("the broker's Kafka port does not speak TLS yet (tls.server.mode=permissive): SASL_SSL skipped")
    value = f"{protocol}-{mechanism}-{uuid.uuid4().hex}".encode()
    p = Producer(broker.conf(protocol, mechanism, USER, SECRET))
    results = []
    p.produce(TOPIC, value=value, on_delivery=lambda err, msg: results.append(err))
    assert p.flush(30) == 0 and results == [None], results

    c = Consumer({**broker.conf(protocol, mechanism, USER, SECRET), "group.id": GROUP,
                  "auto.offset.reset": "earliest", "enable.auto.commit": False})
    c.subscribe([TOPIC])
    seen, deadline = False, time.monotonic() + 30
    try:
        while not seen and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is not None:
                assert m.error() is None, m.error()
                seen = m.value() == value
        c.commit(asynchronous=False)
    finally:
        c.close()
    assert seen, "the consumer read what the producer wrote"

    # A wrong password: librdkafka reports an authentication error.
    auth_errors = []
    bad = Producer({**broker.conf(protocol, mechanism, USER, "wrongPassword"), "error_cb": auth_errors.append})
    deadline = time.monotonic() + 30
    while not any(e.code() == KafkaError._AUTHENTICATION for e in auth_errors) and time.monotonic() < deadline:
        bad.poll(0.2)
    assert any(e.code() == KafkaError._AUTHENTICATION for e in auth_errors), auth_errors

    # An account without permission on the topic: a topic authorization error on delivery.
    denied = []
    other = Producer({**broker.conf(protocol, mechanism, OTHER, OTHER_SECRET), "message.timeout.ms": 20000})
    other.produce(TOPIC, value=b"x", on_delivery=lambda err, msg: denied.append(err))
    other.flush(30)
    assert denied and denied[0] is not None and denied[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED, denied
