// The official 5.x Node.js SDK (rocketmq-client-nodejs 1.0.8) on brokers of its own (plaintext
// gRPC, one per test): a kill -9 in the middle of a SimpleConsumer's work loses nothing and
// redelivers nothing acked after a restart on the same store and ports (compat-tests/grpc5's
// Grpc5CrashTest); ACL 1.0 (aclEnable=true, plain_acl.yml) with the SDK's sessionCredentials: a
// signed producer sends and a signed SimpleConsumer receives and acks, a wrong secret is refused
// (Grpc5AclTest).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { format } from 'node:util';
import { Producer, SimpleConsumer } from 'rocketmq-client-nodejs';
import { bin, brokerDir, freePort, listening, startFerrocket, stopFerrocket } from '../node/ferrocket.mjs';

const TOPIC = 'Js5AclTopic', GROUP = 'Js5AclGroup', USER = 'js5User01', SECRET = 'js5Secret01';
const rand = () => Math.random().toString(36).slice(2, 8);
// The SDK's own logger refuses lines after the first client's shutdown (see grpc5.test.mjs).
const clientLog = [];
const logger = Object.fromEntries(['info', 'warn', 'error', 'debug'].map((l) => [l, (...a) => clientLog.push(`${l} ${format(...a)}`)]));

/** A standalone in a fresh directory with a plaintext gRPC port; `setup(dir)` writes files first
 * and returns more broker.conf lines. `b.endpoints`, `b.grpc`. */
async function start(name, conf, setup = () => []) {
  const dir = brokerDir(name);
  const grpc = await freePort();
  const b = await startFerrocket(dir, {
    cluster: 'Js5OwnCluster', broker: 'js5-own', waitPorts: [grpc],
    conf: [`grpcListenPort=${grpc}`, ...conf, ...setup(dir)],
  });
  return Object.assign(b, { grpc, endpoints: `127.0.0.1:${grpc}` });
}

/** Runs `body(b)` against a broker of its own, stopped after (kept for inspection on a failure). */
async function withBroker(name, conf, setup, body) {
  const b = await start(name, conf, setup);
  let ok = false;
  try {
    await body(b);
    ok = true;
  } finally {
    if (!ok) console.log(`---- the SDK's log ----\n${clientLog.slice(-60).join('\n')}`);
    await stopFerrocket(b, ok, [SECRET, 'wrongSecret01']);
  }
}

/** kill -9, then the same command on the same store and ports; returns once every port listens
 * again (Grpc5Broker.killAndRestart). The log keeps both runs. */
async function killAndRestart(b) {
  const exited = new Promise((resolve) => b.proc.on('exit', resolve));
  b.proc.kill('SIGKILL');
  await exited;
  const proc = spawn(b.proc.spawnfile, b.proc.spawnargs.slice(1), { stdio: ['ignore', 'pipe', 'pipe'] });
  proc.log = b.proc.log;
  proc.stdout.on('data', (d) => proc.log.push(d));
  proc.stderr.on('data', (d) => proc.log.push(d));
  b.proc = proc;
  const port = Number(/listenPort=(\d+)/.exec(readFileSync(join(b.dir, 'broker.conf'), 'utf8'))[1]);
  const deadline = Date.now() + 30000;
  for (const p of [Number(b.ns.split(':')[1]), port, b.grpc]) {
    while (!(await listening(p))) {
      assert.ok(Date.now() < deadline, `ferrocket did not restart on port ${p}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

/** Creates a topic with `queues` queues and waits for its route. */
async function createTopic(b, topic, queues) {
  const admin = (...args) => execFileSync(bin, ['admin', '-n', b.ns, ...args], { encoding: 'utf8', timeout: 60000 });
  admin('update-topic', '-t', topic, '-c', 'Js5OwnCluster', '-r', `${queues}`, '-w', `${queues}`);
  const deadline = Date.now() + 30000;
  for (;;) {
    try {
      if (admin('topic-route', '-t', topic).includes('js5-own')) return;
    } catch {
      // TOPIC_NOT_EXIST until the broker registered it with the NameServer.
    }
    assert.ok(Date.now() < deadline, `no route for ${topic}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

const options = (b, sessionCredentials) => ({ endpoints: b.endpoints, sslEnabled: false, logger, requestTimeout: 10000, sessionCredentials });

async function sendAll(b, topic, bodies, credentials) {
  const p = new Producer({ ...options(b, credentials), topic });
  await p.startup();
  try {
    for (const body of bodies) await p.send({ topic, tag: 'node5', keys: [body], body: Buffer.from(body) });
  } finally {
    await p.shutdown();
  }
}

async function simpleConsumer(b, group, topic, credentials) {
  const c = new SimpleConsumer({ ...options(b, credentials), awaitDuration: 5000, consumerGroup: group, subscriptions: new Map([[topic, '*']]) });
  await c.startup();
  return c;
}

test('a killed broker loses nothing and redelivers nothing acked', async () => {
  // Long polls of 1..3 s: an empty receive ends soon. SYNC_FLUSH: an answered ack is on disk.
  const conf = ['flushDiskType=SYNC_FLUSH', 'grpcClientConsumerMinLongPollingTimeoutMillis=1000',
    'grpcClientConsumerMaxLongPollingTimeoutMillis=3000'];
  await withBroker('node5-crash', conf, undefined, async (b) => {
    const topic = `node5-crash-${rand()}`;
    await createTopic(b, topic, 2);
    const sent = new Set(Array.from({ length: 40 }, (_, i) => `crash-${i}-${rand()}`));
    await sendAll(b, topic, [...sent]);
    const c = await simpleConsumer(b, `node5-crash-g-${rand()}`, topic);
    const acked = new Set(), unacked = new Set(), after = new Map();
    const left = () => [...sent].filter((m) => !acked.has(m) && !after.has(m));
    try {
      // Before the kill: 20 received and acked, at least 10 more received and not acked
      // (invisible for 10 s), the rest not received.
      let deadline = Date.now() + 30000;
      while (unacked.size < 10 && Date.now() < deadline) {
        for (const m of await c.receive(16, 10000)) {
          assert.equal(m.deliveryAttempt, 1);
          if (acked.size < 20) {
            await c.ack(m);
            acked.add(m.body.toString());
          } else {
            unacked.add(m.body.toString());
          }
        }
      }
      assert.ok(acked.size === 20 && unacked.size >= 10, `acked ${acked.size}, unacked ${unacked.size}`);

      await killAndRestart(b);

      // Everything not acked comes (the unacked ones once their 10 s are up, as attempt 2);
      // an acked one, lost, would have come back by then too.
      deadline = Date.now() + 60000;
      while (left().length && Date.now() < deadline) {
        let got;
        try {
          got = await c.receive(16, 30000);
        } catch {
          continue; // the channel reconnecting after the restart
        }
        for (const m of got) {
          const body = m.body.toString();
          after.set(body, [...(after.get(body) ?? []), m.deliveryAttempt]);
          await c.ack(m);
        }
      }
    } finally {
      await c.shutdown();
    }
    assert.deepEqual([...acked].filter((m) => after.has(m)), [], 'acked before the kill, received again');
    assert.deepEqual(left(), [], 'lost');
    for (const m of sent) {
      if (!acked.has(m)) assert.deepEqual([m, after.get(m)], [m, [unacked.has(m) ? 2 : 1]], 'attempt 2 if received before, once');
    }
  });
});

/** plain_acl.yml under rocketmqHome (the directory); the topic in topics.json from the start
 * (`ferrocket admin` does not sign its requests). The broker.conf lines for them. */
function aclFiles(dir) {
  mkdirSync(join(dir, 'conf'));
  writeFileSync(join(dir, 'conf', 'plain_acl.yml'), `accounts:
  - accessKey: ${USER}
    secretKey: ${SECRET}
    defaultTopicPerm: DENY
    defaultGroupPerm: DENY
    topicPerms: ['${TOPIC}=PUB|SUB']
    groupPerms: ['${GROUP}=SUB']
`);
  mkdirSync(join(dir, 'store', 'config'), { recursive: true });
  writeFileSync(join(dir, 'store', 'config', 'topics.json'), JSON.stringify({
    topicConfigTable: { [TOPIC]: { topicName: TOPIC, readQueueNums: 2, writeQueueNums: 2, perm: 6 } },
  }));
  return ['aclEnable=true', `rocketmqHome=${dir}`];
}

/** The error and its causes, as one string. */
const chain = (e) => { const out = []; for (let c = e; c; c = c.cause) out.push(`${c.name}: ${c.code ?? ''} ${c.message}`); return out.join(' | '); };

test('ACL: a signed producer and simple consumer work, a wrong secret is refused', async () => {
  await withBroker('node5-acl', [], aclFiles, async (b) => {
    const creds = { accessKey: USER, accessSecret: SECRET };
    const sent = [0, 1, 2].map((i) => `acl-${i}-${rand()}`);
    const c = await simpleConsumer(b, GROUP, TOPIC, creds);
    const got = [];
    try {
      await sendAll(b, TOPIC, sent, creds);
      const deadline = Date.now() + 30000;
      while (got.length < sent.length && Date.now() < deadline) {
        for (const m of await c.receive(16, 30000)) {
          got.push(m.body.toString());
          await c.ack(m);
        }
      }
    } finally {
      await c.shutdown();
    }
    assert.deepEqual(got.sort(), sent.sort());
    const p = new Producer({ ...options(b, { accessKey: USER, accessSecret: 'wrongSecret01' }), topic: TOPIC });
    try {
      await assert.rejects(p.startup(), (e) => {
        assert.match(chain(e), /UNAUTHORIZED|Unauthorized|401/, chain(e));
        return true;
      });
    } finally {
      await p.shutdown(); // its channel, left open by the failed start, would keep the process alive
    }
  });
});
