"""The official 5.x Python SDK (rocketmq-python-client 5.1.2) on brokers of their own (plaintext
gRPC): a kill -9 in the middle of a SimpleConsumer's work loses nothing and redelivers nothing
acked after a restart on the same store and ports (compat-tests/grpc5's Grpc5CrashTest); ACL 1.0
(`aclEnable=true`, plain_acl.yml) with the SDK's `Credentials`: a signed producer sends and a
signed SimpleConsumer receives and acks, a wrong secret is refused (Grpc5AclTest).
"""

import os
import time
import uuid

import pytest
from conftest import kill_and_restart
from rocketmq import ClientConfiguration, Credentials, FilterExpression, Message, Producer, SimpleConsumer


def config(f, ak="", sk=""):
    return ClientConfiguration(f.grpc, Credentials(ak, sk), request_timeout=10)


def message(name, body):
    m = Message()
    m.topic = name
    m.body = body.encode()
    m.tag = "py5"
    m.keys = body
    return m


def send_all(f, name, bodies, ak="", sk=""):
    p = Producer(config(f, ak, sk), (name,), tls_enable=False)
    p.startup()
    try:
        for b in bodies:
            p.send(message(name, b))
    finally:
        p.shutdown()


def simple_consumer(f, group, name, ak="", sk=""):
    c = SimpleConsumer(config(f, ak, sk), group, {name: FilterExpression("*")}, await_duration=5, tls_enable=False)
    c.startup()
    return c


def test_a_killed_broker_loses_nothing_and_redelivers_nothing_acked(own_broker):
    # Long polls of 1..3 s: an empty receive ends soon.
    f = own_broker("crash", ["grpcClientConsumerMinLongPollingTimeoutMillis=1000",
                             "grpcClientConsumerMaxLongPollingTimeoutMillis=3000"])
    name = f"py5-crash-{uuid.uuid4().hex[:8]}"
    f.create_topic(name, queues=2)
    sent = {f"crash-{i}-{uuid.uuid4().hex[:6]}" for i in range(40)}
    send_all(f, name, sorted(sent))
    c = simple_consumer(f, f"py5-crash-g-{uuid.uuid4().hex[:8]}", name)
    try:
        # Before the kill: 20 received and acked, at least 10 more received and not acked
        # (invisible for 10 s), the rest not received.
        acked, unacked = set(), set()
        deadline = time.monotonic() + 30
        while len(unacked) < 10 and time.monotonic() < deadline:
            for m in c.receive(16, 10):
                assert m.delivery_attempt == 1, m
                if len(acked) < 20:
                    c.ack(m)
                    acked.add(m.body.decode())
                else:
                    unacked.add(m.body.decode())
        assert len(acked) == 20 and len(unacked) >= 10, (acked, unacked)

        kill_and_restart(f)

        # Everything not acked comes (the unacked ones once their 10 s are up, as attempt 2);
        # an acked one, lost, would have come back by then too.
        after = {}
        deadline = time.monotonic() + 60
        while not sent - acked <= set(after) and time.monotonic() < deadline:
            try:
                got = c.receive(16, 30)
            except Exception:  # noqa: BLE001 - the channel reconnecting after the restart
                continue
            for m in got:
                after.setdefault(m.body.decode(), []).append(m.delivery_attempt)
                c.ack(m)
    finally:
        c.shutdown()
    assert not acked & set(after), f"acked before the kill, received again: {sorted(acked & set(after))}"
    assert sent - acked <= set(after), f"lost: {sorted(sent - acked - set(after))}"
    assert {b: after[b] for b in unacked} == {b: [2] for b in unacked}, "received but not acked: attempt 2, once"
    rest = sent - acked - unacked
    assert {b: after[b] for b in rest} == {b: [1] for b in rest}, "not received before the kill: attempt 1, once"


TOPIC, GROUP = "Py5AclTopic", "Py5AclGroup"
USER, SECRET = "py5User01", "py5Secret01"


def acl_files(root):
    """plain_acl.yml under rocketmqHome (the root); the topic in topics.json from the start
    (`ferrocket admin` does not sign its requests). The broker.conf lines for them."""
    os.makedirs(os.path.join(root, "conf"))
    with open(os.path.join(root, "conf", "plain_acl.yml"), "w") as out:
        out.write(f"""accounts:
  - accessKey: {USER}
    secretKey: {SECRET}
    defaultTopicPerm: DENY
    defaultGroupPerm: DENY
    topicPerms: ['{TOPIC}=PUB|SUB']
    groupPerms: ['{GROUP}=SUB']
""")
    os.makedirs(os.path.join(root, "store", "config"))
    with open(os.path.join(root, "store", "config", "topics.json"), "w") as out:
        out.write(f'{{"topicConfigTable":{{"{TOPIC}":{{"topicName":"{TOPIC}","readQueueNums":2,'
                  f'"writeQueueNums":2,"perm":6}}}}}}')
    return ["aclEnable=true", f"rocketmqHome={root}"]


def test_acl_a_signed_producer_and_simple_consumer_work_and_a_wrong_secret_is_refused(own_broker):
    f = own_broker("acl", setup=acl_files)
    sent = {f"acl-{i}-{uuid.uuid4().hex[:6]}" for i in range(3)}
    c = simple_consumer(f, GROUP, TOPIC, USER, SECRET)
    try:
        send_all(f, TOPIC, sorted(sent), USER, SECRET)
        got = []
        deadline = time.monotonic() + 30
        while len(got) < len(sent) and time.monotonic() < deadline:
            for m in c.receive(16, 30):
                got.append(m.body.decode())
                c.ack(m)
        assert sorted(got) == sorted(sent)
    finally:
        c.shutdown()
    # The SDK's start only logs a failed route query (as the broker answered UNAUTHORIZED); its
    # send raises "failed to fetch topic route" after the broker logged why it refused.
    log = os.path.join(f.root, "ferrocket.log")
    for ak, sk, why in ((USER, "wrongSecret01", f"Check signature failed for accessKey={USER}"), ("", "", "No accessKey is configured")):
        p = Producer(config(f, ak, sk), (TOPIC,), tls_enable=False)
        p.startup()
        try:
            with pytest.raises(Exception, match=f"failed to fetch topic:{TOPIC} route"):
                p.send(message(TOPIC, "refused"))
        finally:
            p.shutdown()
        refusals = [line for line in open(log) if "refused by the ACL" in line]
        assert refusals and why in refusals[-1], refusals
    text = open(os.path.join(f.root, "ferrocket.log")).read()
    assert SECRET not in text and "wrongSecret01" not in text, "a secret reached the broker log"
