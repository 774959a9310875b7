// Runs a plugin's logic natively (node --test), the way the host calls the
// component: pods go through the packed wire form, pod-meta answers from the
// case, answers are checked as the host checks them.

import { isEvictable, packPods, pressureOf, unpackPods, useMeta } from './index.js';

export const MI = 1n << 20n;
export const GI = 1n << 30n;
export const MINUTE_MS = 60_000n;
export const NOW_MS = 1_700_000_000_000n;

/** A running best-effort pod with stats, one container, priority 0, no usage. */
export class Pod {
  constructor(namespace, name) {
    this.info = {
      priority: 0, qos: 2, isStatic: false, isCritical: false, hasStats: true,
      memoryRequestBytes: 0n, memoryUsageBytes: 0n, cpuRequestMillis: 0n, cpuUsageMillis: 0n,
      diskRequestBytes: 0n, diskUsageBytes: 0n, inodesUsed: 0n, processCount: 0n,
      containerCount: 1, restartCount: 0, startTimeUnixMs: NOW_MS - 60n * MINUTE_MS,
    };
    this.meta = { namespace, name, uid: `${namespace}-${name}`, labels: {}, annotations: {} };
  }

  key() { return `${this.meta.namespace}/${this.meta.name}`; }
  priority(p) { this.info.priority = p; return this; }
  critical() { this.info.isCritical = true; this.info.priority = Math.max(this.info.priority, 2_000_000_000); return this; }
  static() { this.info.isStatic = true; this.info.isCritical = true; return this; }
  noStats() { this.info.hasStats = false; return this; }
  memory(request, usage) {
    this.info.memoryRequestBytes = request; this.info.memoryUsageBytes = usage;
    if (request > 0n && this.info.qos === 2) this.info.qos = 1;
    return this;
  }
  disk(request, usage) { this.info.diskRequestBytes = request; this.info.diskUsageBytes = usage; return this; }
  inodes(used) { this.info.inodesUsed = used; return this; }
  processes(n) { this.info.processCount = n; return this; }
  restarts(n) { this.info.restartCount = n; return this; }
  label(k, v) { this.meta.labels[k] = v; return this; }
  annotation(k, v) { this.meta.annotations[k] = v; return this; }
}

/** Answers pod-meta from a list of pod metas (and image tags). */
export class Snapshot {
  constructor(pods, tags = []) { this.pods = pods; this.tags = tags; }
  pod(i) { return this.pods[i] ?? { namespace: '', name: '', uid: '', labels: {}, annotations: {} }; }
  podNamespace(i) { return this.pod(i).namespace; }
  podName(i) { return this.pod(i).name; }
  podUid(i) { return this.pod(i).uid; }
  podLabel(i, k) { return Object.hasOwn(this.pod(i).labels, k) ? this.pod(i).labels[k] : undefined; }
  podAnnotation(i, k) { return Object.hasOwn(this.pod(i).annotations, k) ? this.pod(i).annotations[k] : undefined; }
  imageTags(i) { return this.tags[i] ?? []; }
}

export function checkIndices(answer, n, what) {
  const seen = new Set();
  for (const i of answer) {
    if (!(i >= 0 && i < n)) throw new Error(`${what} index ${i} out of range (${n} ${what}s)`);
    if (seen.has(i)) throw new Error(`${what} index ${i} listed twice`);
    seen.add(i);
  }
}

/** A 4-core, 8 GiB, 110-pod node with `signal`'s threshold met. */
export class EvictionCase {
  constructor(signal = 'memory-available') {
    const [available, capacity, threshold] = {
      memory: [50n * MI, 8n * GI, 100n * MI], pid: [1000n, 32768n, 3276n],
      disk: [5n * GI, 100n * GI, 10n * GI], inodes: [10000n, 6000000n, 300000n],
    }[pressureOf(signal)];
    this.node = {
      memoryCapacityBytes: 8n * GI, memoryAllocatableBytes: 8n * GI - 256n * MI, cpuCapacityMillis: 4000n,
      cpuAllocatableMillis: 3900n, podsCapacity: 110, podCount: 0, pidCapacity: 32768n,
      nodefsCapacityBytes: 100n * GI, imagefsCapacityBytes: 0n,
    };
    this.pressure = [{ signal, available, capacity, threshold }];
    this.pods = [];
  }

  pod(...pods) { this.pods.push(...pods); return this; }

  rank(policy) {
    const node = { ...this.node, podCount: this.pods.length };
    const infos = unpackPods(packPods(this.pods.map((p) => p.info)));
    const old = useMeta(new Snapshot(this.pods.map((p) => p.meta)));
    try {
      return Array.from(policy.rank(node, this.pressure, infos));
    } finally {
      useMeta(old);
    }
  }

  rankNames(policy) {
    const answer = this.rank(policy);
    checkIndices(answer, this.pods.length, 'pod');
    return answer.map((i) => {
      const p = this.pods[i];
      if (!isEvictable(p.info)) throw new Error(`proposes critical or static pod ${p.key()}`);
      return p.key();
    });
  }
}

/** PodAccess from canned answers, recording calls; unknown targets refuse. */
export class MockPod {
  constructor(inProbe = true) { this.http = new Map(); this.errors = new Map(); this.calls = []; this.inProbe = inProbe; }
  serve(port, path, status, body) {
    this.http.set(`${port} ${path}`, { status, headers: [], body: new TextEncoder().encode(body) });
    return this;
  }
  fail(port, path, error) { this.errors.set(`${port} ${path}`, error); return this; }
  httpGet(port, path) {
    const key = `${port} ${path}`;
    this.calls.push(`GET ${key}`);
    if (this.errors.has(key)) throw new Error(this.errors.get(key));
    if (this.http.has(key)) return this.http.get(key);
    throw new Error('connection refused');
  }
  tcpConnect(port) { this.calls.push(`TCP ${port}`); throw new Error('connection refused'); }
  exec(container, command) { this.calls.push(`EXEC ${container} ${command.join(' ')}`); throw new Error(`container ${container} not found`); }
  sleep(ms) {
    this.calls.push(`SLEEP ${ms}`);
    if (this.inProbe) throw new Error('sleep is for hooks: a probe returns and lets the next period run');
  }
}

export function probeRequest(args = '', ...ports) {
  return { args, timeoutMs: 1000, podIp: '10.0.0.7', ports: ports.length ? ports : [8080],
    containers: ['app'], container: 'app', kind: 'readiness' };
}
