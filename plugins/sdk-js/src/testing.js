// Runs a plugin's logic natively (node --test), the way the host calls the
// component: pods go through the packed wire form, pod-meta answers from the
// case, answers are checked as the host checks them.

import { isEvictable, packPods, pressureOf, unpackPods, useHost, useMeta } from './index.js';
import { planContainersOf, planImagesOf } from './gc.js';

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

const EXACT = 1n << 52n;
/** As the component gives u64s to the plugin: a Number below 2^52, else BigInt. */
const u64 = (v) => (BigInt(v) < EXACT ? Number(v) : BigInt(v));

/** An image for a GcCase: unused, unpinned, 100 MiB, first seen a day and last used an hour before NOW_MS. */
export class Image {
  constructor(tag) {
    this.info = {
      sizeBytes: 100n * MI, firstSeenUnixMs: NOW_MS - 24n * 60n * MINUTE_MS,
      lastUsedUnixMs: NOW_MS - 60n * MINUTE_MS, inUse: false, pinned: false,
    };
    this.tags = [tag];
  }

  tag(t) { this.tags.push(t); return this; }
  size(bytes) { this.info.sizeBytes = BigInt(bytes); return this; }
  inUse() { this.info.inUse = true; return this; }
  pinned() { this.info.pinned = true; return this; }
  /** Last used `minutes` before NOW_MS (and first seen no later). */
  usedMinutesAgo(minutes) {
    this.info.lastUsedUnixMs = NOW_MS - BigInt(minutes) * MINUTE_MS;
    if (this.info.firstSeenUnixMs > this.info.lastUsedUnixMs) this.info.firstSeenUnixMs = this.info.lastUsedUnixMs;
    return this;
  }
  /** First seen (pulled) `minutes` before NOW_MS, and not used since. */
  seenMinutesAgo(minutes) {
    this.info.firstSeenUnixMs = NOW_MS - BigInt(minutes) * MINUTE_MS;
    this.info.lastUsedUnixMs = this.info.firstSeenUnixMs;
    return this;
  }
}

/**
 * One GC cycle: a 100 GiB image filesystem with 50 GiB free, nothing to free,
 * upstream's 2 minute minimum image age; images and dead containers added.
 * The host's clock reads NOW_MS during the calls.
 */
export class GcCase {
  constructor() {
    this.disk = { capacityBytes: 100n * GI, availableBytes: 50n * GI, bytesToFree: 0n, minAgeMs: 2n * MINUTE_MS, maxAgeMs: 0n };
    this.images = [];
    this.dead = [];
    this.pods = [];
  }

  bytesToFree(bytes) {
    this.disk.bytesToFree = BigInt(bytes);
    const left = this.disk.availableBytes - BigInt(bytes);
    this.disk.availableBytes = left > 0n ? left : 0n;
    return this;
  }

  image(...images) { this.images.push(...images); return this; }

  /** Dead container `rank` (0 = newest) of evict unit `unit`, finished `minutes` ago; its pod index is `unit`. */
  deadContainer(unit, rank, minutes) {
    this.dead.push({ podDeleted: false, finishedUnixMs: NOW_MS - BigInt(minutes) * MINUTE_MS, perContainerRank: rank, unit, pod: unit });
    return this;
  }

  podDeleted(unit) {
    for (const d of this.dead) if (d.unit === unit) d.podDeleted = true;
    return this;
  }

  call(f, tags) {
    const oldMeta = useMeta(new Snapshot(this.pods, tags));
    const oldHost = useHost({ log: (...args) => oldHost.log(...args), nowUnixMs: () => NOW_MS });
    try {
      return Array.from(f(), Number);
    } finally {
      useHost(oldHost);
      useMeta(oldMeta);
    }
  }

  /** Calls strategy.planImages as the host would (the default when it has none); the raw answer. */
  planImages(strategy) {
    const d = Object.fromEntries(Object.entries(this.disk).map(([k, v]) => [k, u64(v)]));
    const infos = this.images.map(({ info }) => ({
      ...info, sizeBytes: u64(info.sizeBytes), firstSeenUnixMs: u64(info.firstSeenUnixMs), lastUsedUnixMs: u64(info.lastUsedUnixMs),
    }));
    return this.call(() => planImagesOf(strategy, d, infos), this.images.map((i) => i.tags));
  }

  /** planImages checked as the host checks it (range, duplicates, never an image in use or pinned); first tags. */
  planImageTags(strategy) {
    const answer = this.planImages(strategy);
    checkIndices(answer, this.images.length, 'image');
    return answer.map((i) => {
      const image = this.images[i];
      if (image.info.inUse || image.info.pinned) throw new Error(`plans image ${image.tags[0]} which is in use or pinned`);
      return image.tags[0];
    });
  }

  /** Calls strategy.planContainers as the host would, indices checked. */
  planContainers(strategy) {
    const dead = this.dead.map((d) => ({ ...d, finishedUnixMs: u64(d.finishedUnixMs) }));
    const answer = this.call(() => planContainersOf(strategy, dead), []);
    checkIndices(answer, this.dead.length, 'dead container');
    return answer;
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
