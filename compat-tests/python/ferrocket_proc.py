"""A ferrocket standalone process (NameServer + broker) for the Python compat tests: this
directory's (the C++ client, librdkafka) and compat-tests/python5's (the 5.x gRPC SDK), which need
separate virtualenvs because both SDKs install a package named `rocketmq`.
"""

import os
import shutil
import socket
import subprocess
import tempfile
import time


def free_port():
    """A free port below Linux's ephemeral range, with the broker's p-2 (VIP) and p+1 (HA) free."""
    for p in range(12000 + os.getpid() % 8000, 32000, 7):
        ok = True
        for q in (p - 2, p, p + 1):
            with socket.socket() as s:
                try:
                    s.bind(("127.0.0.1", q))
                except OSError:
                    ok = False
        if ok:
            return p
    raise RuntimeError("no free port")


def wait_port(port, seconds):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return True
        except OSError:
            time.sleep(0.1)
    return False


class Ferrocket:
    """`extra_conf`: more broker.conf lines; `ports`: more ports to wait for at start."""

    def __init__(self, binary, root, extra_conf=(), ports=()):
        self.binary, self.root = binary, root
        self.ns_port = free_port()
        self.broker_port = free_port()
        while abs(self.broker_port - self.ns_port) <= 2:
            self.broker_port = free_port() + 10
        self.namesrv = f"127.0.0.1:{self.ns_port}"
        self.kafka_port = free_port()
        while min(abs(self.kafka_port - p) for p in (self.ns_port, self.broker_port)) <= 2:
            self.kafka_port = free_port() + 20
        self.kafka = f"127.0.0.1:{self.kafka_port}"
        with open(os.path.join(root, "broker.conf"), "w") as f:
            f.write("\n".join([
                "brokerClusterName=PyCluster", "brokerName=py-broker-a", "brokerIP1=127.0.0.1",
                f"listenPort={self.broker_port}", f"storePathRootDir={root}/store",
                "mappedFileSizeCommitLog=67108864", "flushDiskType=SYNC_FLUSH",
                # The machine's disk must not decide: above 85 % (diskSpaceCleanForciblyRatio)
                # a broker deletes CommitLog segments not yet consumed.
                "cleanFileForciblyEnable=false",
                # Unknown transactions are checked every second, once a second old.
                "transactionCheckInterval=1000", "transactionTimeOut=1000",
                # The Kafka front end, for librdkafka (confluent-kafka) in test_librdkafka.py.
                f"kafkaListenPort={self.kafka_port}", f"kafkaAdvertisedAddress=127.0.0.1:{self.kafka_port}",
                *extra_conf,
            ]) + "\n")
        with open(os.path.join(root, "namesrv.conf"), "w") as f:
            f.write(f"listenPort={self.ns_port}\n")
        self.log = open(os.path.join(root, "ferrocket.log"), "w")
        self.proc = subprocess.Popen(
            [binary, "standalone", "-c", f"{root}/broker.conf", "--namesrv-config", f"{root}/namesrv.conf"],
            stdout=self.log, stderr=subprocess.STDOUT, env={**os.environ, "HOME": root})
        if not all(wait_port(p, 30) for p in (self.ns_port, self.broker_port, self.kafka_port, *ports)):
            self.stop()
            raise RuntimeError(f"ferrocket did not start; log {root}/ferrocket.log")

    def admin(self, *args):
        out = subprocess.run([self.binary, "admin", "-n", self.namesrv, *args], capture_output=True, text=True,
                             timeout=60)
        assert out.returncode == 0, f"ferrocket admin {args}: {out.stderr}"
        return out.stdout

    def create_topic(self, topic, queues=4):
        self.admin("update-topic", "-t", topic, "-c", "PyCluster", "-r", str(queues), "-w", str(queues))
        # The broker registers the new topic with the NameServer after answering (as Java's does):
        # until then topic-route exits non-zero (TOPIC_NOT_EXIST), which means "not yet" here.
        deadline = time.monotonic() + 30
        last = None
        while time.monotonic() < deadline:
            last = subprocess.run([self.binary, "admin", "-n", self.namesrv, "topic-route", "-t", topic],
                                  capture_output=True, text=True, timeout=60)
            if last.returncode == 0 and "py-broker-a" in last.stdout:
                return
            time.sleep(0.2)
        raise AssertionError(f"no route for {topic} within 30 s; last answer: {last.stdout}{last.stderr}")

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


def session_broker(extra_conf=(), ports=(), root_setup=None):
    """A pytest session fixture's body: starts the binary in $FERROCKET_BIN (default
    target/release/ferrocket) with $HOME in a fresh directory (clients write their logs under
    $HOME/logs), yields it, then stops it and fails on a non-zero exit or an ERROR log line.
    `root_setup(root)` runs before the start and returns more broker.conf lines."""
    binary = os.environ.get("FERROCKET_BIN") or os.path.join(
        os.path.dirname(__file__), "..", "..", "target", "release", "ferrocket")
    root = tempfile.mkdtemp(prefix="ferrocket-py-")
    os.environ["HOME"] = root
    conf = [*extra_conf, *(root_setup(root) if root_setup else ())]
    f = Ferrocket(os.path.abspath(binary), root, conf, ports)
    yield f
    errors = f.errors()
    rc = f.stop() or f.proc.returncode
    assert rc == 0, f"ferrocket exited {rc} on SIGTERM; log {root}/ferrocket.log"
    assert not errors, f"ERROR lines in {root}/ferrocket.log: {errors[:3]}"
    # Kept for inspection when something above failed; a passing run leaves nothing in /tmp.
    shutil.rmtree(root, ignore_errors=True)
