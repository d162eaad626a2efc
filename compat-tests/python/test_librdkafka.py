"""librdkafka (through its official Python binding, confluent-kafka) against ferrocket's Kafka
listener: every compression codec, idempotent and plain producers, duplicate and null headers,
binary and null keys, a consumer group with committed offsets, a message from the official
RocketMQ C++ client read as a Kafka record, and a transactional producer committing and aborting."""

import time
import uuid

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from rocketmq.client import Message, Producer as RocketProducer, SendStatus

RUN = uuid.uuid4().hex[:8]


def create_topic(ferrocket, topic, partitions):
    admin = AdminClient({"bootstrap.servers": ferrocket.kafka})
    for f in admin.create_topics([NewTopic(topic, num_partitions=partitions, replication_factor=1)]).values():
        f.result(30)


def consume(ferrocket, group, topic, n, seconds=60):
    c = Consumer({"bootstrap.servers": ferrocket.kafka, "group.id": group, "auto.offset.reset": "earliest",
                  "enable.auto.commit": False})
    c.subscribe([topic])
    got = []
    deadline = time.monotonic() + seconds
    try:
        while len(got) < n and time.monotonic() < deadline:
            m = c.poll(0.2)
            if m is None:
                continue
            assert m.error() is None, m.error()
            got.append(m)
        if got:
            c.commit(asynchronous=False)
    finally:
        c.close()
    assert len(got) == n, f"{len(got)} of {n} records within {seconds} s"
    return got


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
@pytest.mark.parametrize("idempotent", [False, True])
def test_every_codec_round_trips_keys_headers_and_offsets(ferrocket, codec, idempotent):
    topic = f"rdk-{codec}-{int(idempotent)}-{RUN}"
    create_topic(ferrocket, topic, 2)
    p = Producer({"bootstrap.servers": ferrocket.kafka, "compression.type": codec, "linger.ms": 5,
                  "enable.idempotence": idempotent})
    delivered = {}

    def on_delivery(err, msg):
        assert err is None, err
        delivered[msg.value().decode()] = (msg.partition(), msg.offset())

    for i in range(30):
        key = None if i % 3 == 0 else f"k{i}".encode() if i % 3 == 1 else bytes([0, 255, i])
        headers = [("h", b"1"), ("h", b"2"), ("nul", None)]
        p.produce(topic, value=f"v{i}".encode(), key=key, partition=i % 2, headers=headers, on_delivery=on_delivery)
    assert p.flush(30) == 0
    assert len(delivered) == 30
    for q in (0, 1):
        assert sorted(o for (pp, o) in delivered.values() if pp == q) == list(range(15)), "dense offsets from 0"
    got = consume(ferrocket, f"g-{topic}", topic, 30)
    for m in got:
        i = int(m.value().decode()[1:])
        assert (m.partition(), m.offset()) == delivered[m.value().decode()]
        assert m.key() == (None if i % 3 == 0 else f"k{i}".encode() if i % 3 == 1 else bytes([0, 255, i]))
        assert m.headers() == [("h", b"1"), ("h", b"2"), ("nul", None)]


def test_a_group_resumes_after_its_committed_offsets(ferrocket):
    topic = f"rdk-resume-{RUN}"
    create_topic(ferrocket, topic, 3)
    p = Producer({"bootstrap.servers": ferrocket.kafka})
    for i in range(30):
        p.produce(topic, value=f"a{i}".encode(), partition=i % 3)
    p.flush(30)
    group = f"g-resume-{RUN}"
    consume(ferrocket, group, topic, 30)
    for i in range(9):
        p.produce(topic, value=f"b{i}".encode(), partition=i % 3)
    p.flush(30)
    got = consume(ferrocket, group, topic, 9)
    assert sorted(m.value().decode() for m in got) == sorted(f"b{i}" for i in range(9))
    c = Consumer({"bootstrap.servers": ferrocket.kafka, "group.id": group})
    committed = c.committed([TopicPartition(topic, q) for q in range(3)], timeout=10)
    c.close()
    assert [tp.offset for tp in committed] == [13, 13, 13]


def test_a_rocketmq_cpp_message_is_a_kafka_record(ferrocket):
    topic = f"rdk-cross-{RUN}"
    create_topic(ferrocket, topic, 1)
    rp = RocketProducer(f"PID-rdk-{RUN}")
    rp.set_namesrv_addr(ferrocket.namesrv)
    rp.start()
    try:
        m = Message(topic)
        m.set_keys("cross-key")
        m.set_tags("TagC")
        m.set_property("color", "blue")
        m.set_body("from the C++ client")
        deadline = time.monotonic() + 30
        while True:
            try:
                r = rp.send_sync(m)
                break
            except Exception:  # the route may take a moment to reach the NameServer
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        assert r.status == SendStatus.OK
    finally:
        rp.shutdown()
    got = consume(ferrocket, f"g-cross-{RUN}", topic, 1)[0]
    assert got.value() == b"from the C++ client"
    assert got.key() == b"cross-key"
    headers = dict(got.headers())
    assert headers["TAGS"] == b"TagC" and headers["color"] == b"blue"


def test_a_transactional_producer_commits_and_aborts(ferrocket):
    """librdkafka's transactions (FindCoordinator v0-2 for the transactional id): committed and
    aborted transactions each end with one control record per partition, so offsets count them."""
    topic = f"rdk-tx-{RUN}"
    create_topic(ferrocket, topic, 1)
    p = Producer({"bootstrap.servers": ferrocket.kafka, "transactional.id": f"tx-{RUN}"})
    p.init_transactions(30)
    offsets = []

    def on_delivery(err, msg):
        assert err is None, err
        offsets.append(msg.offset())

    for value, commit in [(b"c1", True), (b"a1", False), (b"c2", True)]:
        p.begin_transaction()
        p.produce(topic, value=value, partition=0, on_delivery=on_delivery)
        p.flush(30)
        if commit:
            p.commit_transaction(30)
        else:
            p.abort_transaction(30)
    assert offsets == [0, 2, 4], "each transaction's marker takes one offset"
    c = Consumer({"bootstrap.servers": ferrocket.kafka, "group.id": f"g-tx-{RUN}"})
    low, high = c.get_watermark_offsets(TopicPartition(topic, 0), timeout=30)
    c.close()
    assert (low, high) == (0, 6)