// Native tests of the SDK and its examples: node --test plugins/sdk-js/test/
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { packPods, unpackPods } from '../src/index.js';
import { EvictionCase, MI, MockPod, Pod, probeRequest } from '../src/testing.js';
import { BatchFirst } from '../examples/eviction-batch-first/policy.js';
import { JsonHealth } from '../examples/probe-json-health/probe.js';

const policy = (config) => { const p = new BatchFirst(); p.configure(config); return p; };
const batchCase = () => new EvictionCase().pod(
  new Pod('web', 'frontend').memory(0n, 800n * MI),
  new Pod('jobs', 'report').memory(0n, 100n * MI).label('workload-class', 'batch'),
  new Pod('infra', 'dns').memory(0n, 900n * MI),
  new Pod('jobs', 'etl').memory(0n, 300n * MI).label('workload-class', 'batch'),
  new Pod('jobs', 'service').memory(0n, 50n * MI).label('workload-class', 'service'),
);

test('batch first in upstream order, then the rest, without protected', () => {
  assert.deepEqual(batchCase().rankNames(policy('{"protectNamespaces": ["infra"]}')),
    ['jobs/etl', 'jobs/report', 'web/frontend', 'jobs/service']);
});

test('no config is upstream with batch first', () => {
  assert.deepEqual(batchCase().rankNames(policy('')),
    ['jobs/etl', 'jobs/report', 'infra/dns', 'web/frontend', 'jobs/service']);
});

test('critical and static pods are left out', () => {
  const c = batchCase().pod(new Pod('kube-system', 'etcd').static().label('workload-class', 'batch'),
    new Pod('kube-system', 'dns').critical());
  assert.equal(c.rankNames(policy('')).length, 5);
});

test('bad config is refused', () => {
  for (const config of ['{"protectNamespaces": "kube-system"}', '{"batchLabel": ""}', '{"protect": 1}']) {
    assert.throws(() => new BatchFirst().configure(config));
  }
});

test('packed pods round-trip and malformed lists are refused', () => {
  // Numbers below 2^52, BigInt above: exact either way.
  const pods = [{ priority: -5, qos: 0, isStatic: true, isCritical: false, hasStats: true, memoryRequestBytes: 1,
    memoryUsageBytes: 2 ** 52 - 1, cpuRequestMillis: 2n ** 52n, cpuUsageMillis: 4, diskRequestBytes: 5, diskUsageBytes: 6,
    inodesUsed: 7, processCount: 8, containerCount: 2 ** 32 - 1, restartCount: 9, startTimeUnixMs: 2n ** 64n - 1n }];
  assert.deepEqual(unpackPods(packPods(pods)), pods);
  const bad = new BigUint64Array(11); bad[0] = 7n << 32n;
  assert.throws(() => unpackPods(bad), /unknown qos 7/);
  assert.throws(() => unpackPods(new BigUint64Array(12)));
});

const check = (args, pod, ...ports) => new JsonHealth().check(probeRequest(args, ...ports), pod);

test('healthy document succeeds', () => {
  const pod = new MockPod().serve(8080, '/health', 200, '{"status":"ok"}');
  assert.equal(check('', pod).outcome, 'success');
  assert.deepEqual(pod.calls, ['GET 8080 /health']);
});

test('wrong value, missing field or bad status fail', () => {
  const pod = new MockPod().serve(8080, '/health', 200, '{"status":"degraded"}')
    .serve(8080, '/empty', 200, '{}').serve(8080, '/down', 503, '{"status":"ok"}');
  assert.deepEqual(check('', pod), { outcome: 'failure', message: 'status is "degraded", expected "ok"' });
  assert.equal(check('{"path": "/empty"}', pod).outcome, 'failure');
  assert.match(check('{"path": "/down"}', pod).message, /HTTP 503/);
});

test('not JSON is unknown and connection errors fail', () => {
  assert.equal(check('', new MockPod().serve(8080, '/health', 200, 'OK')).outcome, 'unknown');
  assert.match(check('', new MockPod()).message, /connection refused/);
});

test('bad args or an ambiguous port fail with a reason', () => {
  const pod = new MockPod();
  assert.match(check('{"prot": 1}', pod).message, /^invalid probe args/);
  assert.match(check('', pod, 8080, 9090).message, /need a "port"/);
  assert.deepEqual(pod.calls, []);
});

test('require-limits refuses only in chosen namespaces', async () => {
  const { RequireLimits } = await import('../examples/admission-require-limits/policy.js');
  const { useMeta } = await import('../src/index.js');
  const { Snapshot } = await import('../src/testing.js');
  const r = new RequireLimits();
  r.configure('{"namespaces": ["prod"]}');
  const full = { name: 'app', isInit: false, hasCpuLimit: true, hasMemoryLimit: true };
  const init = { name: 'init', isInit: true, hasCpuLimit: true, hasMemoryLimit: false };
  const admit = (namespace, containers) => {
    const old = useMeta(new Snapshot([{ namespace, name: 'p', uid: '', labels: {}, annotations: {} }]));
    try { return r.admit({ index: 0, containers }); } finally { useMeta(old); }
  };
  admit('dev', [init]);
  admit('prod', [full]);
  assert.throws(() => admit('prod', [full, init]), /container "init" has no memory limit/);
});

// ---- eviction-psi-guard (world pressure-eviction-policy)

import { PsiGuard, candidates } from '../examples/eviction-psi-guard/policy.js';

const reading = (readUnixMs, fullPercent) => {
  const line = (avg10) => ({ avg10, avg60: 0, avg300: 0, totalUs: 0 });
  const resource = (avg10) => ({ some: line(avg10 * 2), full: line(avg10) });
  return { cpu: resource(0), memory: resource(fullPercent * 100), io: resource(0), readUnixMs };
};
const psiPod = (priority, request, usage, extra = {}) => ({
  priority, qos: 1, isStatic: false, isCritical: false, hasStats: true,
  memoryRequestBytes: request, memoryUsageBytes: usage, ...extra,
});

test('psi guard asks only after pressure held for forSeconds, as the Rust plugin', () => {
  const g = new PsiGuard();
  g.configure('{"memoryFullAvg10Percent": 20, "forSeconds": 10}');
  const pods = [psiPod(0, 100, 50), psiPod(0, 100, 900)];
  assert.equal(g.watch({}, reading(0, 25), pods), undefined);
  assert.equal(g.watch({}, reading(9999, 30), pods), undefined);
  const asked = g.watch({}, reading(10000, 30), pods);
  assert.deepEqual(asked.pods, [1]);
  assert.equal(asked.reason, 'memory full avg10 30.00% at or over 20% for 10 s');
  assert.equal(g.watch({}, reading(15000, 30), pods), undefined);
});

test('psi guard orders by priority, then memory above request, never critical', () => {
  const pods = [psiPod(100, 0, 5000), psiPod(0, 100, 300), psiPod(0, 100, 2000),
    psiPod(-10, 0, 10000, { isCritical: true }), psiPod(-5, 1000, 900)];
  assert.deepEqual(candidates(pods), [2, 1, 0]);
});

test('psi guard refuses a limit outside (0, 100]', () => {
  for (const config of ['{"memoryFullAvg10Percent": 0}', '{"memoryFullAvg10Percent": 101}', '{"forSeconds": -1}']) {
    assert.throws(() => new PsiGuard().configure(config));
  }
});
