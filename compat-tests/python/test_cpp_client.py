"""The official C++ client (librocketmq 2.0 through rocketmq-client-python) against ferrocket:
sync send and push consumption, a batch send (the C API's SendBatchMessage: the client writes the
batch flag as "1", which Java's broker reads as false), transactions (commit, rollback, unknown
answered by a check with commit or rollback), and a timer message set as a property."""

import ctypes
import threading
import time
import uuid

from rocketmq.client import (ConsumeStatus, Message, Producer, PushConsumer, SendStatus, TransactionMQProducer,
                             TransactionStatus)
from rocketmq.ffi import _CSendResult, dll

RUN = uuid.uuid4().hex[:8]


class Received:
    def __init__(self):
        self.lock = threading.Lock()
        self.by_key = {}

    def __call__(self, msg):
        with self.lock:
            self.by_key.setdefault(msg.keys.decode() if isinstance(msg.keys, bytes) else msg.keys, []).append(
                (time.time(), msg.body, msg.tags, msg.topic))
        return ConsumeStatus.CONSUME_SUCCESS

    def wait_for(self, keys, seconds):
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            with self.lock:
                if all(k in self.by_key for k in keys):
                    return dict(self.by_key)
            time.sleep(0.05)
        with self.lock:
            missing = [k for k in keys if k not in self.by_key]
        raise AssertionError(f"not received within {seconds} s: {missing}")


def message(topic, key, body, tag="TagPy"):
    m = Message(topic)
    m.set_keys(key)
    m.set_tags(tag)
    m.set_body(body)
    return m


def consumer(ferrocket, topic, rec):
    c = PushConsumer(f"py-cg-{topic}")
    c.set_namesrv_addr(ferrocket.namesrv)
    c.subscribe(topic, rec)
    c.start()
    return c


def producer(ferrocket, group):
    p = Producer(group)
    p.set_namesrv_addr(ferrocket.namesrv)
    p.start()
    return p


def as_text(v):
    return v.decode() if isinstance(v, bytes) else v


def test_sync_send_then_push_consume_each_message_once(ferrocket):
    topic = f"py-send-{RUN}"
    ferrocket.create_topic(topic)
    rec = Received()
    c = consumer(ferrocket, topic, rec)
    p = producer(ferrocket, f"py-pg-{RUN}")
    try:
        keys = [f"k{i}" for i in range(20)]
        for k in keys:
            r = p.send_sync(message(topic, k, f"body of {k}"))
            assert r.status == SendStatus.OK, f"send {k}: {r}"
        got = rec.wait_for(keys, 60)
        time.sleep(1)  # let a duplicate show up, if any
        for k in keys:
            assert len(rec.by_key[k]) == 1, f"{k} received {len(rec.by_key[k])} times"
            _, body, tags, t = got[k][0]
            assert (as_text(body), as_text(tags), as_text(t)) == (f"body of {k}", "TagPy", topic)
    finally:
        p.shutdown()
        c.shutdown()


def test_a_batch_send_stores_each_message(ferrocket):
    """The C++ client 2.x sends a batch as SEND_MESSAGE_V2 with "m":"1"; the Java broker reads that
    as false and stores the batch body as one garbled message. ferrocket stores each message."""
    topic = f"py-batch-{RUN}"
    ferrocket.create_topic(topic)
    rec = Received()
    c = consumer(ferrocket, topic, rec)
    p = producer(ferrocket, f"py-batch-pg-{RUN}")
    batch = dll.CreateBatchMessage()
    try:
        keys = [f"b{i}" for i in range(10)]
        msgs = [message(topic, k, f"body of {k}") for k in keys]
        for m in msgs:
            assert dll.AddMessage(batch, m) == 0
        cres = _CSendResult()
        assert dll.SendBatchMessage(p._handle, batch, ctypes.pointer(cres)) == 0, "SendBatchMessage failed"
        assert cres.sendStatus == SendStatus.OK.value, cres.sendStatus
        got = rec.wait_for(keys, 60)
        for k in keys:
            _, body, tags, t = got[k][0]
            assert (as_text(body), as_text(tags), as_text(t)) == (f"body of {k}", "TagPy", topic)
        assert set(rec.by_key) == set(keys), f"unexpected messages: {set(rec.by_key) - set(keys)}"
    finally:
        dll.DestroyBatchMessage(batch)
        p.shutdown()
        c.shutdown()


def test_transactions_commit_rollback_and_checked_outcomes(ferrocket):
    topic = f"py-tx-{RUN}"
    ferrocket.create_topic(topic)
    rec = Received()
    c = consumer(ferrocket, topic, rec)
    checked = {}
    outcome = {"u-commit": TransactionStatus.COMMIT, "u-rollback": TransactionStatus.ROLLBACK}

    def check(msg):
        k = as_text(msg.keys)
        checked[k] = checked.get(k, 0) + 1
        return outcome.get(k, TransactionStatus.UNKNOWN)

    p = TransactionMQProducer(f"py-tx-pg-{RUN}", check)
    p.set_namesrv_addr(ferrocket.namesrv)
    p.start()
    try:
        first_hand = {"commit": TransactionStatus.COMMIT, "rollback": TransactionStatus.ROLLBACK,
                      "u-commit": TransactionStatus.UNKNOWN, "u-rollback": TransactionStatus.UNKNOWN}
        for k, status in first_hand.items():
            r = p.send_message_in_transaction(message(topic, k, f"tx {k}"), lambda m, a, s=status: s)
            assert r.status == SendStatus.OK, f"half message {k}: {r}"
        got = rec.wait_for(["commit", "u-commit"], 60)
        # The rolled-back ones never come: wait until the check of u-rollback was answered, then a while.
        deadline = time.monotonic() + 30
        while "u-rollback" not in checked and time.monotonic() < deadline:
            time.sleep(0.1)
        assert checked.get("u-rollback", 0) >= 1, f"u-rollback never checked: {checked}"
        assert checked.get("u-commit", 0) >= 1, f"u-commit never checked: {checked}"
        assert "commit" not in checked, "a transaction committed first-hand was checked"
        time.sleep(2)
        assert sorted(rec.by_key) == ["commit", "u-commit"], f"delivered: {sorted(rec.by_key)}"
        for k in ("commit", "u-commit"):
            assert len(rec.by_key[k]) == 1, f"{k} delivered {len(rec.by_key[k])} times"
            assert as_text(got[k][0][1]) == f"tx {k}"
    finally:
        p.shutdown()
        c.shutdown()


def test_a_timer_property_delays_delivery(ferrocket):
    topic = f"py-timer-{RUN}"
    ferrocket.create_topic(topic)
    rec = Received()
    c = consumer(ferrocket, topic, rec)
    p = producer(ferrocket, f"py-timer-pg-{RUN}")
    try:
        m = message(topic, "timer", "in two seconds")
        m.set_property("TIMER_DELAY_SEC", "2")
        sent = time.time()
        assert p.send_sync(m).status == SendStatus.OK
        assert p.send_sync(message(topic, "plain", "at once")).status == SendStatus.OK
        got = rec.wait_for(["timer", "plain"], 30)
        late = got["timer"][0][0] - sent
        assert late >= 2.0, f"the timer arrived {late:.3f} s after the send"
        assert late < 2.0 + 5, f"the timer arrived {late:.3f} s after the send"
    finally:
        p.shutdown()
        c.shutdown()
