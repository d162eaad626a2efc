// kafkajs 2.2.4 (with its snappy and lz4 codec packages) against ferrocket's Kafka listener. kafkajs speaks only the old, non-flexible
// versions (Produce 7, Fetch 11, Metadata 6, JoinGroup 5, ...) and ignores the broker's minimums:
// the other end of the range from the Java 4.x client. Started here: one ferrocket standalone with
// kafkaListenPort (FERROCKET_BIN, default target/release/ferrocket).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { brokerDir, freePort, startFerrocket, stopFerrocket } from './ferrocket.mjs';
import kafkajs from 'kafkajs';
import SnappyCodec from 'kafkajs-snappy';
import LZ4Codec from '@2l/kafkajs-lz4';

const { Kafka, CompressionTypes, CompressionCodecs, logLevel } = kafkajs;
// kafkajs has gzip built in; snappy (pure JS) and lz4 (prebuilt lz4-napi) come as codec packages.
// zstd would need a native build (cppzst), so kafkajs is not run with it.
CompressionCodecs[CompressionTypes.Snappy] = SnappyCodec;
CompressionCodecs[CompressionTypes.LZ4] = new LZ4Codec().codec;
const run = Math.random().toString(36).slice(2, 8);
let broker, kafka, bootstrap, passed = false;

before(async () => {
  const kport = await freePort();
  broker = await startFerrocket(brokerDir('kafkajs'), {
    cluster: 'JsCluster', broker: 'js-a', waitPorts: [kport],
    conf: [`kafkaListenPort=${kport}`, `kafkaAdvertisedAddress=127.0.0.1:${kport}`],
  });
  bootstrap = `127.0.0.1:${kport}`;
  kafka = new Kafka({ clientId: 'compat-kafkajs', brokers: [bootstrap], logLevel: logLevel.NOTHING });
});

after(async () => {
  await stopFerrocket(broker, passed);
});

async function createTopic(topic, numPartitions) {
  const admin = kafka.admin();
  await admin.connect();
  try {
    assert.equal(await admin.createTopics({ topics: [{ topic, numPartitions, replicationFactor: 1 }] }), true);
  } finally {
    await admin.disconnect();
  }
}

/** Runs a group consumer until `n` messages came; returns them. */
async function consume(groupId, topic, n, ms = 60000) {
  const consumer = kafka.consumer({ groupId, sessionTimeout: 10000, heartbeatInterval: 500 });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  const got = [];
  let done;
  const all = new Promise((resolve) => { done = resolve; });
  await consumer.run({
    eachMessage: async ({ partition, message }) => {
      got.push({ partition, ...message });
      if (got.length >= n) done();
    },
  });
  const timer = setTimeout(() => done(), ms);
  await all;
  clearTimeout(timer);
  await consumer.disconnect();
  assert.equal(got.length, n, `${got.length} of ${n} messages within ${ms} ms`);
  return got;
}

for (const [name, compression] of [['none', CompressionTypes.None], ['gzip', CompressionTypes.GZIP],
  ['snappy', CompressionTypes.Snappy], ['lz4', CompressionTypes.LZ4]]) {
  test(`an idempotent producer (${name}) and a group consumer keep keys, headers and offsets`, async () => {
    const topic = `js-${name}-${run}`;
    await createTopic(topic, 2);
    const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
    await producer.connect();
    const sent = new Map();
    for (let i = 0; i < 20; i++) {
      const [meta] = await producer.send({
        topic, compression, acks: -1,
        messages: [{ partition: i % 2, key: i % 2 ? `k${i}` : null, value: `v${i}`, headers: { color: 'red', n: `${i}` } }],
      });
      sent.set(`v${i}`, meta);
    }
    await producer.disconnect();
    for (const q of [0, 1]) {
      const offsets = [...sent.values()].filter((m) => m.partition === q).map((m) => Number(m.baseOffset)).sort((a, b) => a - b);
      assert.deepEqual(offsets, [...Array(10).keys()], `dense offsets on partition ${q}`);
    }
    const got = await consume(`g-${topic}`, topic, 20);
    for (const m of got) {
      const v = m.value.toString();
      const i = Number(v.slice(1));
      assert.equal(String(sent.get(v).baseOffset), m.offset);
      assert.equal(m.key === null ? null : m.key.toString(), i % 2 ? `k${i}` : null);
      assert.equal(m.headers.color.toString(), 'red');
      assert.equal(m.headers.n.toString(), `${i}`);
    }
  });
}

test('a group resumes after its committed offsets', async () => {
  const topic = `js-resume-${run}`;
  await createTopic(topic, 3);
  const producer = kafka.producer();
  await producer.connect();
  await producer.send({ topic, messages: [...Array(12).keys()].map((i) => ({ partition: i % 3, value: `a${i}` })) });
  await consume(`g-${topic}`, topic, 12);
  await producer.send({ topic, messages: [...Array(6).keys()].map((i) => ({ partition: i % 3, value: `b${i}` })) });
  await producer.disconnect();
  const got = await consume(`g-${topic}`, topic, 6);
  assert.deepEqual(got.map((m) => m.value.toString()).sort(), [...Array(6).keys()].map((i) => `b${i}`));
  const admin = kafka.admin();
  await admin.connect();
  const [offsets] = await admin.fetchOffsets({ groupId: `g-${topic}`, topics: [topic] });
  await admin.disconnect();
  assert.deepEqual(offsets.partitions.map((p) => p.offset).sort(), ['6', '6', '6']);
});

test('a transactional producer commits and aborts', async () => {
  const topic = `kjs-tx-${run}`;
  const admin = kafka.admin();
  await admin.connect();
  await admin.createTopics({ topics: [{ topic, numPartitions: 1 }] });
  const producer = kafka.producer({ transactionalId: `tx-${run}`, idempotent: true, maxInFlightRequests: 1 });
  await producer.connect();
  try {
    const offsets = [];
    for (const [value, commit] of [['c1', true], ['a1', false], ['c2', true]]) {
      const tx = await producer.transaction();
      const [r] = await tx.send({ topic, messages: [{ value, partition: 0 }] });
      offsets.push(r.baseOffset);
      await (commit ? tx.commit() : tx.abort());
    }
    // Each transaction ends with one control record, which takes one offset.
    assert.deepEqual(offsets, ['0', '2', '4']);
    const [p0] = await admin.fetchTopicOffsets(topic);
    assert.equal(p0.high, '6');
  } finally {
    await producer.disconnect();
    await admin.disconnect();
  }
});

test('a read_committed consumer gets committed transactions only, an open one once it commits', async () => {
  const topic = `kjs-rc-${run}`;
  await createTopic(topic, 1);
  const admin = kafka.admin();
  const a = kafka.producer({ transactionalId: `rc-a-${run}`, idempotent: true, maxInFlightRequests: 1 });
  const b = kafka.producer({ transactionalId: `rc-b-${run}`, idempotent: true, maxInFlightRequests: 1 });
  // readUncommitted: false is kafkajs's default as well (Kafka#consumer): Fetch with
  // isolation_level=1. maxWaitTimeInMs: a fetch at the last stable offset comes back quickly.
  const consumer = kafka.consumer({
    groupId: `g-${topic}`, readUncommitted: false, sessionTimeout: 10000, heartbeatInterval: 500, maxWaitTimeInMs: 100,
  });
  await Promise.all([admin.connect(), a.connect(), b.connect()]);
  try {
    const send = async (tx, values) =>
      (await tx.send({ topic, messages: values.map((value) => ({ value, partition: 0 })) }))[0].baseOffset;
    // The log: c1 c2 COMMIT | a1 a2 ABORT | o1 (b, open) | c3 COMMIT (a) | o2 (b, still open).
    let tx = await a.transaction();
    assert.equal(await send(tx, ['c1', 'c2']), '0');
    await tx.commit();
    tx = await a.transaction();
    assert.equal(await send(tx, ['a1', 'a2']), '3');
    await tx.abort();
    const open = await b.transaction();
    assert.equal(await send(open, ['o1']), '6');
    tx = await a.transaction();
    assert.equal(await send(tx, ['c3']), '7');
    await tx.commit();
    assert.equal(await send(open, ['o2']), '9');
    // ListOffsets latest under read_committed (kafkajs's admin default) is the last stable offset:
    // the open transaction's first offset, which holds back c3, committed after it, as well.
    const high = async () => (await admin.fetchTopicOffsets(topic))[0].high;
    assert.equal(await high(), '6');

    // The consumer's state, moved by its own events only: `position` is the offset it fetches
    // next (past each delivered record, and past a batch filtered away whole: aborted records and
    // markers); `fetchesAtLso` counts fetches begun once it stood at the last stable offset.
    const got = [];
    let position = 0, fetchesAtLso = -1;
    const waiters = new Set();
    const moved = () => {
      if (position >= 6 && fetchesAtLso < 0) fetchesAtLso = 0;
      for (const w of waiters) if (w.cond()) w.done();
    };
    const until = (what, cond, ms = 30000) => new Promise((resolve, reject) => {
      const w = { cond };
      const timer = setTimeout(() => {
        waiters.delete(w);
        reject(new Error(`${what}: not within ${ms} ms (at offset ${position}, got ${JSON.stringify(got)})`));
      }, ms);
      w.done = () => { waiters.delete(w); clearTimeout(timer); resolve(); };
      waiters.add(w);
      moved();
    });
    consumer.on(consumer.events.END_BATCH_PROCESS, ({ payload }) => {
      if (payload.topic === topic && payload.batchSize === 0) position = Math.max(position, Number(payload.lastOffset) + 1);
      moved();
    });
    consumer.on(consumer.events.FETCH_START, () => {
      if (fetchesAtLso >= 0) fetchesAtLso++;
      moved();
    });
    await consumer.connect();
    await consumer.subscribe({ topic, fromBeginning: true });
    await consumer.run({
      eachMessage: async ({ partition, message }) => {
        got.push({ partition, offset: message.offset, value: message.value.toString() });
        position = Math.max(position, Number(message.offset) + 1);
        moved();
      },
    });
    // Two fetches begun at the last stable offset: the first one's answer has been handled (a
    // fetcher handles its batches before it fetches again), so anything readable up to and past
    // the open transaction would have reached eachMessage by now.
    await until('the consumer past the aborted transaction, one fetch at offset 6', () => fetchesAtLso >= 2);
    assert.deepEqual(got, [{ partition: 0, offset: '0', value: 'c1' }, { partition: 0, offset: '1', value: 'c2' }]);

    await open.commit();
    await until('the open transaction\'s records once it committed', () => got.length >= 5);
    assert.deepEqual(got, [
      { partition: 0, offset: '0', value: 'c1' }, { partition: 0, offset: '1', value: 'c2' },
      { partition: 0, offset: '6', value: 'o1' }, { partition: 0, offset: '7', value: 'c3' },
      { partition: 0, offset: '9', value: 'o2' },
    ]);
    assert.equal(await high(), '11');
  } finally {
    await consumer.disconnect();
    await Promise.all([a.disconnect(), b.disconnect()]);
    await admin.disconnect();
  }
  passed = true;
});
