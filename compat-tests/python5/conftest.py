"""A ferrocket standalone with its gRPC listener (`grpcListenPort`, TLS and plaintext on one port)
for the official 5.x Python SDK, `rocketmq-python-client` 5.1.2 from PyPI.

The SDK's TLS channel verifies the server against gRPC's root certificates, so the broker gets a
certificate made here for 127.0.0.1 and gRPC trusts it through GRPC_DEFAULT_SSL_ROOTS_FILE_PATH
(read when the first channel is made).
"""

import os
import socket
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "python"))
from ferrocket_proc import free_port, session_broker  # noqa: E402



def grpc_port():
    """A free port clear of the ones `Ferrocket` picks from the same range."""
    for p in range(free_port() + 40, 32000, 7):
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
