// The official 5.x Node.js SDK (rocketmq-client-nodejs 1.0.8) on ferrocket's gRPC listener, with
// no proxy: a producer on plaintext and on TLS (one port, the SDK's sslEnabled) and a FIFO
// producer; what they sent is read back through the broker's query by key
// (`ferrocket admin query-msg-by-key`); a SimpleConsumer on each receives and acks, and gets an
// unacked message again as delivery attempt 2; two FIFO PushConsumers of an orderly group keep
// each message group's order; a PushConsumer failing past the group's max attempts sends the
// message to the dead letter queue. Its own ferrocket standalone (../node/ferrocket.mjs).
// kill -9 mid-consumption and ACL 1.0: grpc5_crash_acl.test.mjs.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { format } from 'node:util';
import { bin, brokerDir, freePort, startFerrocket, stopFerrocket } from '../node/ferrocket.mjs';

const run = Math.random().toString(36).slice(2, 8);
let broker, endpoints, Producer, SimpleConsumer, PushConsumer, ConsumeResult, passed = 0;
// The SDK's own logger (egg-logger, one file under $HOME shared by every client) refuses lines
// after the first client's shutdown closed it: each client logs here instead, printed on failure.
const clientLog = [];
const logger = Object.fromEntries(['info', 'warn', 'error', 'debug'].map((l) => [l, (...a) => clientLog.push(`${l} ${format(...a)}`)]));

before(async () => {
  const dir = brokerDir('node5');
  // grpc-js verifies the server against its root certificates: a certificate for 127.0.0.1 made
  // here, trusted through GRPC_DEFAULT_SSL_ROOTS_FILE_PATH, which grpc-js reads when it loads: the
  // SDK is imported after it is set.
  execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', join(dir, 'key.pem'),
    '-out', join(dir, 'cert.pem'), '-days', '2', '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1'],
  { stdio: 'ignore' });
  process.env.GRPC_DEFAULT_SSL_ROOTS_FILE_PATH = join(dir, 'cert.pem');
  ({ Producer, SimpleConsumer, PushConsumer, ConsumeResult } = await import('rocketmq-client-nodejs'));
  const grpc = await freePort();
  broker = await startFerrocket(dir, {
    cluster: 'Js5Cluster', broker: 'js5-a', waitPorts: [grpc],
    // Long polls of 1..3 s: a PushConsumer's shutdown waits for its receive in flight.
    conf: [`grpcListenPort=${grpc}`, `tls.server.certPath=${dir}/cert.pem`, `tls.server.keyPath=${dir}/key.pem`,
      'grpcClientConsumerMinLongPollingTimeoutMillis=1000', 'grpcClientConsumerMaxLongPollingTimeoutMillis=3000'],
  });
  endpoints = `127.0.0.1:${grpc}`;
});

after(async () => {
  if (passed !== 7) console.log(`---- the SDK's log ----\n${clientLog.slice(-60).join('\n')}`);
  await stopFerrocket(broker, passed === 7);
});

const admin = (...args) => execFileSync(bin, ['admin', '-n', broker.ns, ...args], { encoding: 'utf8', timeout: 60000, stdio: 'pipe' });

/** Creates a topic (with `attrs`, e.g. +message.type=FIFO) and waits for its route. */
async function createTopic(base, ...attrs) {
  const topic = `${base}-${run}-${Math.random().toString(36).slice(2, 6)}`;
  admin('update-topic', '-t', topic, '-c', 'Js5Cluster', '-r', '4', '-w', '4', ...attrs.flatMap((a) => ['-a', a]));
  const deadline = Date.now() + 30000;
  for (;;) {
    try {
      if (admin('topic-route', '-t', topic).includes('js5-a')) return topic;
    } catch {
      // TOPIC_NOT_EXIST until the broker registered it with the NameServer.
    }
    assert.ok(Date.now() < deadline, `no route for ${topic}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** [queue id, body length] of the one message stored under `key`, waiting for the broker's
 * index (built after the send is answered) to have it. */
async function stored(topic, key, ms = 15000) {
  const deadline = Date.now() + ms;
  for (;;) {
    let out;
    try {
      out = admin('query-msg-by-key', '-t', topic, '-k', key);
    } catch (e) {
      out = `${e.stderr}`; // no route yet: a DLQ topic is made at its first message
    }
    const queue = /queue: (\d+)/.exec(out);
    const size = /body: (\d+) bytes/.exec(out);
    if (out.includes(`keys: ${key}  tags: node5`) && queue && size) return [Number(queue[1]), Number(size[1])];
    assert.ok(Date.now() < deadline, `no message stored under ${key}: ${out}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function producer(topic, sslEnabled) {
  const p = new Producer({ endpoints, sslEnabled, topic, requestTimeout: 10000, logger });
  await p.startup();
  return p;
}

for (const ssl of [false, true]) {
  test(`a producer on ${ssl ? 'TLS' : 'plaintext'} sends and the broker stores what it sent`, async () => {
    const topic = await createTopic('node5-send');
    const p = await producer(topic, ssl);
    const keys = [];
    const ids = new Set();
    try {
      for (let i = 0; i < 5; i++) {
        const key = `k-${i}-${Math.random().toString(36).slice(2, 8)}`;
        keys.push(key);
        ids.add((await p.send({ topic, tag: 'node5', keys: [key], body: Buffer.from(`body ${key}`) })).messageId);
      }
    } finally {
      await p.shutdown();
    }
    assert.equal(ids.size, 5);
    for (const key of keys) assert.equal((await stored(topic, key))[1], `body ${key}`.length);
    passed++;
  });
}

test('a FIFO producer keeps each message group on one queue', async () => {
  const topic = await createTopic('node5-fifo', '+message.type=FIFO');
  const p = await producer(topic, false);
  const sent = { 'order-1': [], 'order-2': [], 'order-3': [] };
  try {
    for (let i = 0; i < 4; i++) {
      for (const group of Object.keys(sent)) {
        const key = `${group}-${i}-${Math.random().toString(36).slice(2, 6)}`;
        await p.send({ topic, tag: 'node5', keys: [key], messageGroup: group, body: Buffer.from(`${group} step ${i}`) });
        sent[group].push(key);
      }
    }
  } finally {
    await p.shutdown();
  }
  for (const [group, keys] of Object.entries(sent)) {
    const queues = new Set();
    for (const k of keys) queues.add((await stored(topic, k))[0]);
    assert.equal(queues.size, 1, `message group ${group} spread over queues ${[...queues]}`);
  }
  passed++;
});

/** Receives until every body of `want` came (acking each when `ack`); the messages. */
async function receive(c, want, invisibleMs, ack) {
  const got = [];
  const seen = new Set();
  const deadline = Date.now() + 60000;
  while (![...want].every((b) => seen.has(b)) && Date.now() < deadline) {
    for (const m of await c.receive(16, invisibleMs)) {
      got.push(m);
      seen.add(m.body.toString());
      if (ack) await c.ack(m);
    }
  }
  assert.ok([...want].every((b) => seen.has(b)), `received ${[...seen]}, wanted ${[...want]}`);
  return got;
}

for (const ssl of [false, true]) {
  test(`a simple consumer on ${ssl ? 'TLS' : 'plaintext'} receives, acks and gets an unacked message again`, async () => {
    const topic = await createTopic('node5-recv');
    const p = await producer(topic, ssl);
    const bodies = new Set([0, 1, 2, 3, 4].map((i) => `m-${i}-${Math.random().toString(36).slice(2, 8)}`));
    const c = new SimpleConsumer({
      endpoints, sslEnabled: ssl, logger, requestTimeout: 10000, awaitDuration: 5000,
      consumerGroup: `node5-g-${Math.random().toString(36).slice(2, 8)}`, subscriptions: new Map([[topic, '*']]),
    });
    try {
      for (const b of bodies) await p.send({ topic, tag: 'node5', keys: [b], body: Buffer.from(b) });
      await c.startup();
      const got = await receive(c, bodies, 30000, true);
      assert.deepEqual(got.map((m) => m.body.toString()).sort(), [...bodies].sort(), 'each message once');
      assert.ok(got.every((m) => m.deliveryAttempt === 1));
      await p.send({ topic, tag: 'node5', keys: ['again'], body: Buffer.from('again') });
      const [first] = await receive(c, new Set(['again']), 10000, false);
      const [back] = await receive(c, new Set(['again']), 30000, true);
      assert.deepEqual([first.deliveryAttempt, back.deliveryAttempt], [1, 2]);
      assert.equal(first.messageId, back.messageId);
    } finally {
      await c.shutdown();
      await p.shutdown();
    }
    passed++;
  });
}

/** `p`, or a failure naming `what` after `ms`. */
const within = (p, ms, what) => Promise.race([p, new Promise((_, reject) => {
  setTimeout(() => reject(new Error(`no ${what} within ${ms} ms`)), ms).unref();
})]);

/** The group made with `ferrocket admin update-sub-group` (mqadmin updateSubGroup). */
const subGroup = (group, ...flags) => assert.match(admin('update-sub-group', '-g', group, '-c', 'Js5Cluster', ...flags), /OK/);

async function pushConsumer(group, topic, consume) {
  const c = new PushConsumer({
    endpoints, logger, requestTimeout: 10000, consumerGroup: group, subscriptions: new Map([[topic, '*']]),
    messageListener: { consume },
  });
  await c.startup();
  return c;
}

test('two FIFO push consumers keep each message group in order', async () => {
  const topic = await createTopic('node5-pfifo', '+message.type=FIFO');
  const group = `node5-fifo-g-${Math.random().toString(36).slice(2, 8)}`;
  subGroup(group, '-o');
  const steps = {};
  let consumed = 0, all;
  const allConsumed = new Promise((resolve) => { all = resolve; });
  const consume = (m) => {
    const [g, step] = m.body.toString().split(':');
    (steps[g] ??= []).push(Number(step));
    if (++consumed === 24) all();
    return ConsumeResult.SUCCESS;
  };
  const consumers = [await pushConsumer(group, topic, consume), await pushConsumer(group, topic, consume)];
  try {
    const p = await producer(topic, false);
    try {
      for (let i = 0; i < 8; i++) {
        for (const g of ['ga', 'gb', 'gc']) {
          await p.send({ topic, tag: 'node5', keys: [`${g}-${i}`], messageGroup: g, body: Buffer.from(`${g}:${i}`) });
        }
      }
    } finally {
      await p.shutdown();
    }
    await within(allConsumed, 60000, '24 FIFO messages consumed');
    const inOrder = [0, 1, 2, 3, 4, 5, 6, 7];
    assert.deepEqual(steps, { ga: inOrder, gb: inOrder, gc: inOrder });
  } finally {
    await Promise.all(consumers.map((c) => c.shutdown()));
  }
  passed++;
});

test('failures past max attempts go to the dead letter queue', async () => {
  const topic = await createTopic('node5-dlq');
  const group = `node5-dlq-g-${Math.random().toString(36).slice(2, 8)}`;
  subGroup(group, '-r', '1');
  const attempts = [];
  const c = await pushConsumer(group, topic, (m) => {
    attempts.push(m.deliveryAttempt);
    return ConsumeResult.FAILURE;
  });
  try {
    const key = `doomed-${Math.random().toString(36).slice(2, 8)}`;
    const p = await producer(topic, false);
    try {
      await p.send({ topic, tag: 'node5', keys: [key], body: Buffer.from('doomed') });
    } finally {
      await p.shutdown();
    }
    // retryMaxTimes 1: delivered twice (max attempts 2), then stored in %DLQ%<group>.
    assert.deepEqual(await stored(`%DLQ%${group}`, key, 60000), [0, 'doomed'.length]);
    assert.deepEqual(attempts, [1, 2]);
  } finally {
    await c.shutdown();
  }
  passed++;
});
