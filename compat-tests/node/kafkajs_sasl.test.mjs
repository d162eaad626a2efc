// kafkajs 2.2.4 with SASL against the ACL accounts (aclEnable=true): for PLAIN, SCRAM-SHA-256 and
// SCRAM-SHA-512 on SASL_PLAINTEXT and (once the Kafka port speaks TLS, tls.server.mode=permissive)
// SASL_SSL, a good account produces and consumes in its group, a wrong password fails with
// KafkaJSSASLAuthenticationError, an account without permission on the topic gets
// TOPIC_AUTHORIZATION_FAILED. Its own ferrocket standalone (FERROCKET_BIN).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { connect as tlsConnect } from 'node:tls';
import { join } from 'node:path';
import { brokerDir, freePort, startFerrocket, stopFerrocket } from './ferrocket.mjs';
import kafkajs from 'kafkajs';

const { Kafka, logLevel } = kafkajs;
const run = Math.random().toString(36).slice(2, 8);
const TOPIC = `sasl-${run}`;
const GROUP = `sasl-g-${run}`;
const USER = ['jsUser001', 'jsSecret001'];
const OTHER = ['jsOther001', 'otherSecret01'];
const ADMIN = ['jsAdmin001', 'adminSecret01'];
let broker, kport, passed = 0;

const speaksTls = () => new Promise((resolve) => {
  const s = tlsConnect({ host: '127.0.0.1', port: kport, rejectUnauthorized: false }, () => { s.destroy(); resolve(true); });
  s.setTimeout(5000, () => { s.destroy(); resolve(false); });
  s.on('error', () => resolve(false));
});

function client(ssl, mechanism, [username, password]) {
  return new Kafka({
    clientId: 'compat-kafkajs-sasl', brokers: [`127.0.0.1:${kport}`], logLevel: logLevel.NOTHING,
    ssl: ssl ? { rejectUnauthorized: false } : false,
    sasl: { mechanism, username, password },
    retry: { retries: 2, initialRetryTime: 200 },
    connectionTimeout: 5000,
  });
}

before(async () => {
  const dir = brokerDir('kafkajs-sasl');
  mkdirSync(join(dir, 'conf'));
  writeFileSync(join(dir, 'conf', 'plain_acl.yml'), `accounts:
  - accessKey: ${USER[0]}
    secretKey: ${USER[1]}
    defaultTopicPerm: DENY
    defaultGroupPerm: DENY
    topicPerms: ['${TOPIC}=PUB|SUB']
    groupPerms: ['${GROUP}=SUB']
  - accessKey: ${OTHER[0]}
    secretKey: ${OTHER[1]}
    defaultTopicPerm: DENY
  - accessKey: ${ADMIN[0]}
    secretKey: ${ADMIN[1]}
    admin: true
`);
  execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', join(dir, 'key.pem'),
    '-out', join(dir, 'cert.pem'), '-days', '2', '-subj', '/CN=localhost'], { stdio: 'ignore' });
  kport = await freePort();
  broker = await startFerrocket(dir, {
    cluster: 'JsSaslCluster', broker: 'js-sasl-a', waitPorts: [kport],
    conf: ['aclEnable=true', `rocketmqHome=${dir}`, `kafkaListenPort=${kport}`, `kafkaAdvertisedAddress=127.0.0.1:${kport}`,
      'tls.server.mode=permissive', `tls.server.certPath=${dir}/cert.pem`, `tls.server.keyPath=${dir}/key.pem`],
  });
  const admin = client(false, 'scram-sha-512', ADMIN).admin();
  await admin.connect();
  try {
    assert.equal(await admin.createTopics({ topics: [{ topic: TOPIC, numPartitions: 1, replicationFactor: 1 }] }), true);
  } finally {
    await admin.disconnect();
  }
});

after(async () => {
  await stopFerrocket(broker, passed === 6, [USER[1], OTHER[1], ADMIN[1], 'wrongPassword']);
});

/** The error and its causes, as one string. */
const chain = (e) => { const out = []; for (let c = e; c; c = c.cause || c.originalError) out.push(`${c.name}: ${c.type || ''} ${c.message}`); return out.join(' | '); };

for (const ssl of [false, true]) {
  for (const mechanism of ['plain', 'scram-sha-256', 'scram-sha-512']) {
    test(`${ssl ? 'SASL_SSL' : 'SASL_PLAINTEXT'} ${mechanism}`, async (t) => {
      if (ssl && !(await speaksTls())) {
        t.skip("the broker's Kafka port does not speak TLS yet (tls.server.mode=permissive): SASL_SSL skipped");
        passed += 1;
        return;
      }
      const value = `${ssl}-${mechanism}-${Math.random()}`;
      const good = client(ssl, mechanism, USER);
      const producer = good.producer();
      await producer.connect();
      await producer.send({ topic: TOPIC, messages: [{ value }] });
      await producer.disconnect();

      const consumer = good.consumer({ groupId: GROUP, sessionTimeout: 10000, heartbeatInterval: 500 });
      await consumer.connect();
      await consumer.subscribe({ topic: TOPIC, fromBeginning: true });
      let done;
      const seen = new Promise((resolve) => { done = resolve; });
      await consumer.run({ eachMessage: async ({ message }) => { if (message.value.toString() === value) done(true); } });
      const timer = setTimeout(() => done(false), 30000);
      const ok = await seen;
      clearTimeout(timer);
      await consumer.disconnect();
      assert.ok(ok, 'the consumer read what the producer wrote');

      const wrong = client(ssl, mechanism, [USER[0], 'wrongPassword']).producer();
      const authError = await wrong.connect().then(() => null, (e) => e);
      assert.ok(authError && /SASLAuthentication/.test(chain(authError)), `a wrong password: ${authError && chain(authError)}`);

      const other = client(ssl, mechanism, OTHER).producer();
      await other.connect();
      const denied = await other.send({ topic: TOPIC, messages: [{ value: 'x' }] }).then(() => null, (e) => e);
      await other.disconnect();
      assert.ok(denied && /TOPIC_AUTHORIZATION_FAILED/.test(chain(denied)), `no permission: ${denied && chain(denied)}`);
      passed += 1;
    });
  }
}
