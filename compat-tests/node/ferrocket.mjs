// One ferrocket standalone (NameServer + broker in one process) for a Node test file: started in
// `before`, stopped in `after`, where a non-zero exit on SIGTERM or an ERROR log line fails the
// file. Used by kafkajs (this directory) and the 5.x gRPC SDK (compat-tests/node5).
// FERROCKET_BIN names the binary (default: target/release/ferrocket).
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import { createServer, connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
export const bin = process.env.FERROCKET_BIN || join(here, '..', '..', 'target', 'release', 'ferrocket');

export const freePort = () => new Promise((resolve) => {
  const s = createServer();
  s.listen(0, '127.0.0.1', () => { const p = s.address().port; s.close(() => resolve(p)); });
});
export const listening = (port) => new Promise((resolve) => {
  const c = connect(port, '127.0.0.1', () => { c.destroy(); resolve(true); });
  c.on('error', () => resolve(false));
});

/** A fresh directory for a broker named `name` (its store, configs and log). */
export const brokerDir = (name) => mkdtempSync(join(tmpdir(), `ferrocket-${name}-`));

/**
 * Starts `ferrocket standalone` in `dir` with broker.conf = the common lines + `conf`, and waits
 * until every port of `waitPorts` listens. Returns { proc, dir, ns } (ns: the NameServer address).
 */
export async function startFerrocket(dir, { cluster, broker, conf, waitPorts }) {
  // freePort lets its port go again, so a later call can find the same one: the NameServer,
  // bound first, would then hold a port the caller picked for the broker (kafkaListenPort,
  // grpcListenPort), and the broker could not start.
  let ns = await freePort();
  while (waitPorts.includes(ns)) ns = await freePort();
  const port = 20000 + Math.floor(Math.random() * 8000);
  writeFileSync(join(dir, 'broker.conf'), [
    `brokerClusterName=${cluster}`, `brokerName=${broker}`, 'brokerIP1=127.0.0.1', `listenPort=${port}`,
    `storePathRootDir=${dir}/store`, 'mappedFileSizeCommitLog=67108864',
    // The machine's disk must not decide: above 85 % a broker deletes segments not yet consumed.
    'cleanFileForciblyEnable=false', ...conf, ''].join('\n'));
  writeFileSync(join(dir, 'namesrv.conf'), `listenPort=${ns}\n`);
  const proc = spawn(bin, ['standalone', '-c', join(dir, 'broker.conf'), '--namesrv-config', join(dir, 'namesrv.conf')],
    { stdio: ['ignore', 'pipe', 'pipe'] });
  proc.log = [];
  proc.stdout.on('data', (d) => proc.log.push(d));
  proc.stderr.on('data', (d) => proc.log.push(d));
  const deadline = Date.now() + 30000;
  for (const p of [ns, port, ...waitPorts]) {
    while (!(await listening(p))) {
      assert.ok(Date.now() < deadline, `ferrocket did not listen on port ${p}; log:\n${Buffer.concat(proc.log)}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  return { proc, dir, ns: `127.0.0.1:${ns}` };
}

/**
 * Stops it with SIGTERM: fails unless it exits 0 with no ERROR line (nor any of `secrets`) in its
 * log; returns the log. The directory is removed when `passed`, kept for inspection otherwise.
 */
export async function stopFerrocket({ proc, dir }, passed, secrets = []) {
  const exited = new Promise((resolve) => proc.on('exit', (code) => resolve(code)));
  proc.kill('SIGTERM');
  const code = await exited;
  const text = Buffer.concat(proc.log).toString();
  writeFileSync(join(dir, 'ferrocket.log'), text);
  assert.equal(code, 0, `ferrocket exited ${code} on SIGTERM; log in ${dir}`);
  assert.deepEqual(text.split('\n').filter((l) => / ERROR /.test(l)), [], `ERROR lines in ${dir}/ferrocket.log`);
  for (const secret of secrets) {
    assert.ok(!text.includes(secret), 'a secret reached the broker log');
  }
  if (passed) rmSync(dir, { recursive: true, force: true });
  return text;
}
