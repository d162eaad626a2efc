"""librdkafka (confluent-kafka) reading Kafka transactions from ferrocket (#27.2): a transactional
producer commits, aborts and leaves a transaction open beside a plain producer; a read_committed
consumer gets the committed and plain records only, nothing of the open transaction until it
commits, and its high watermark is the last stable offset; a read_uncommitted consumer gets every
record but the markers. Needs the transaction coordinator (#27.1)."""

import time
import uuid

from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

RUN = uuid.uuid4().hex[:8]


def reader(ferrocket, isolation):
    c = Consumer({"bootstrap.servers": ferrocket.kafka, "group.id": f"g-rc-{isolation}-{RUN}",
                  "isolation.level": isolation, "enable.auto.commit": False, "enable.partition.eof": True})
    return c


def read_until(c, into, done, seconds=30):
    deadline = time.monotonic() + seconds
    while not done(into) and time.monotonic() < deadline:
        m = c.poll(0.2)
        if m is None or m.error() is not None:
            continue
        into.append(m.value().decode())
    assert done(into), f"read within {seconds} s: {into}"
    return into


def test_read_committed_sees_committed_records_only(ferrocket):
    topic = f"rdk-rc-{RUN}"
    admin = AdminClient({"bootstrap.servers": ferrocket.kafka})
    for f in admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=1)]).values():
        f.result(30)
    tx = Producer({"bootstrap.servers": ferrocket.kafka, "transactional.id": f"rdk-tx-{RUN}"})
    plain = Producer({"bootstrap.servers": ferrocket.kafka})
    tx.init_transactions(30)
    tx.begin_transaction()
    tx.produce(topic, value=b"c1", partition=0)
    tx.produce(topic, value=b"c2", partition=0)
    tx.commit_transaction(30)
    tx.begin_transaction()
    tx.produce(topic, value=b"a1", partition=0)
    tx.produce(topic, value=b"a2", partition=0)
    tx.flush(30)
    tx.abort_transaction(30)
    plain.produce(topic, value=b"plain", partition=0)
    assert plain.flush(30) == 0
    tx.begin_transaction()
    tx.produce(topic, value=b"c3", partition=0)
    tx.commit_transaction(30)
    tx.begin_transaction()
    tx.produce(topic, value=b"o1", partition=0)
    tx.flush(30)

    tp = [TopicPartition(topic, 0, OFFSET_BEGINNING)]
    uncommitted = reader(ferrocket, "read_uncommitted")
    committed = reader(ferrocket, "read_committed")
    try:
        uncommitted.assign(tp)
        everything = read_until(uncommitted, [], lambda got: "o1" in got)
        assert everything == ["c1", "c2", "a1", "a2", "plain", "c3", "o1"], "every record, no marker"
        committed.assign(tp)
        seen = read_until(committed, [], lambda got: "c3" in got)
        assert seen == ["c1", "c2", "plain", "c3"], "no aborted record, nothing of the open transaction"
        # c1 c2 COMMIT a1 a2 ABORT plain c3 COMMIT | o1: a read_committed high watermark is the LSO.
        low, high = committed.get_watermark_offsets(TopicPartition(topic, 0), timeout=10, cached=False)
        assert (low, high) == (0, 9)
        tx.commit_transaction(30)
        read_until(committed, seen, lambda got: "o1" in got)
        assert seen == ["c1", "c2", "plain", "c3", "o1"]
    finally:
        committed.close()
        uncommitted.close()
