"""A ferrocket standalone with its gRPC listener (`grpcListenPort`, TLS and plaintext on one port)
for the official 5.x Python SDK, `rocketmq-python-client` 5.1.2 from PyPI.

The SDK's TLS channel verifies the server against gRPC's root certificates, so the broker gets a
certificate made here for 127.0.0.1 and gRPC trusts it through GRPC_DEFAULT_SSL_ROOTS_FILE_PATH
(read when the first channel is made).

`own_broker` starts more brokers for one test, on plaintext gRPC: for a kill -9 and a restart on
the same store and ports (`kill_and_restart`), or with ACL 1.0 on.
"""

import os
import shutil
import socket
import subprocess
import sys
import tempfile

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "python"))
from ferrocket_proc import Ferrocket, free_port, session_broker, wait_port  # noqa: E402


def grpc_port(taken=()):
    """A free port clear of the ones `Ferrocket` picks from the same range (and of `taken`)."""
    for p in range(free_port() + 40, 32000, 7):
        if p in taken:
            continue
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", p))
                return p
            except OSError:
                pass
    raise RuntimeError("no free port")


GRPC_PORT = grpc_port()


def certificate(root):
    cert, key = os.path.join(root, "grpc-cert.pem"), os.path.join(root, "grpc-key.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                    "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
                    "-keyout", key, "-out", cert], check=True, capture_output=True)
    os.environ["GRPC_DEFAULT_SSL_ROOTS_FILE_PATH"] = cert
    return [f"grpcListenPort={GRPC_PORT}", f"tls.server.certPath={cert}", f"tls.server.keyPath={key}"]


@pytest.fixture(scope="session")
def ferrocket():
    for f in session_broker(ports=(GRPC_PORT,), root_setup=certificate):
        f.grpc = f"127.0.0.1:{GRPC_PORT}"
        yield f


@pytest.fixture
def own_broker(request):
    """`start(name, conf=(), setup=None)`: a standalone of its own with a plaintext gRPC port
    (`.grpc`); `setup(root)` runs before the start (files under the root) and returns more
    broker.conf lines. Each is stopped after
    the test, which fails on a non-zero exit or an ERROR log line."""
    binary = os.path.abspath(os.environ.get("FERROCKET_BIN") or os.path.join(
        os.path.dirname(__file__), "..", "..", "target", "release", "ferrocket"))
    started, failed = [], request.session.testsfailed

    def start(name, conf=(), setup=None):
        root = tempfile.mkdtemp(prefix=f"ferrocket-py5-{name}-")
        more = setup(root) if setup else ()
        port = grpc_port(taken=(GRPC_PORT,))
        f = Ferrocket(binary, root, [f"grpcListenPort={port}", *conf, *more], ports=(port,))
        f.grpc, f.grpc_port = f"127.0.0.1:{port}", port
        started.append(f)
        return f

    yield start
    for f in started:
        errors = f.errors()
        f.stop()
        assert f.proc.returncode == 0, f"ferrocket exited {f.proc.returncode} on SIGTERM; log {f.root}/ferrocket.log"
        assert not errors, f"ERROR lines in {f.root}/ferrocket.log: {errors[:3]}"
        if request.session.testsfailed == failed:  # kept for inspection after a failure
            shutil.rmtree(f.root, ignore_errors=True)


def kill_and_restart(f):
    """kill -9, then the same command on the same store and ports; returns once every port listens
    again (Grpc5Broker.killAndRestart in compat-tests/grpc5)."""
    f.proc.kill()
    f.proc.wait()
    f.log.close()
    f.log = open(os.path.join(f.root, "ferrocket.log"), "a")
    f.proc = subprocess.Popen(f.proc.args, stdout=f.log, stderr=subprocess.STDOUT, env={**os.environ, "HOME": f.root})
    ports = (f.ns_port, f.broker_port, f.kafka_port, f.grpc_port)
    assert all(wait_port(p, 30) for p in ports), f"ferrocket did not restart; log {f.root}/ferrocket.log"
