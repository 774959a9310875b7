// The JavaScript SDK for wasmlet plugins: the records of wit/ (package
// wasmlet:plugin@0.1.2) as plain objects, the host's functions, config parsing,
// the packed pod layout decoded and the upstream default ranking. A plugin is a
// class with configure/selfCheck and its world's methods (rank, check,
// planImages/planContainers, admit...); the world module
// (wasmlet-plugin-sdk/eviction, .../probe, .../gc, .../hooks) exports it from a
// component, and wasmlet-plugin-sdk/testing runs it natively under `node --test`.
//
// Numbers: u64 fields are Numbers while below 2^52 (every real quantity) and
// BigInt above, so they stay exact; compare them with <, >, === (which work
// across the two) and use the SDK's ranking for arithmetic. The rest are Number.

export const QosClass = Object.freeze({ Guaranteed: 0, Burstable: 1, BestEffort: 2 });

/** Upstream eviction signals, in WIT order (the componentize-js spelling). */
export const SIGNALS = [
  'memory-available', 'allocatable-memory-available', 'nodefs-available', 'nodefs-inodes-free',
  'imagefs-available', 'imagefs-inodes-free', 'containerfs-available', 'containerfs-inodes-free',
  'pid-available',
];

/** The resource a signal starves: 'memory', 'pid', 'disk' or 'inodes'. */
export function pressureOf(signal) {
  if (signal === 'memory-available' || signal === 'allocatable-memory-available') return 'memory';
  if (signal === 'pid-available') return 'pid';
  if (signal.endsWith('inodes-free')) return 'inodes';
  return 'disk';
}

export function isEvictable(pod) {
  return !pod.isCritical && !pod.isStatic;
}

// ---- host functions: the component's imports, or a test harness's answers

const stderrHost = {
  log(level, message, fields) { console.error(`[${level}] ${message}`, fields); },
  nowUnixMs() { return 0n; },
};
const noMeta = {
  podNamespace() { return ''; }, podName() { return ''; }, podUid() { return ''; },
  podLabel() { return undefined; }, podAnnotation() { return undefined; }, imageTags() { return []; },
};
let host = stderrHost;
let meta = noMeta;

/** Installs what answers log/nowUnixMs; returns the previous one (world modules, harnesses). */
export function useHost(h) { const old = host; host = h; return old; }
/** Installs what answers the pod-meta functions; returns the previous one. */
export function useMeta(m) { const old = meta; meta = m; return old; }

/** One structured event in the host's log; level is 'trace'|'debug'|'info'|'warn'|'error'. */
export function log(level, message, fields = []) { host.log(level, message, fields); }
export function nowUnixMs() { return host.nowUnixMs(); }
export function podNamespace(i) { return meta.podNamespace(i); }
export function podName(i) { return meta.podName(i); }
export function podUid(i) { return meta.podUid(i); }
/** The label's value, or undefined when unset. */
export function podLabel(i, key) { return meta.podLabel(i, key); }
export function podAnnotation(i, key) { return meta.podAnnotation(i, key); }
export function imageTags(i) { return meta.imageTags(i); }

// ---- config

/**
 * Parses JSON text over `defaults`: keys must be among the defaults' (unknown
 * fields are refused, as in the Rust SDK); empty text or null keeps them.
 * Throws an Error saying `invalid <what>: ...`.
 */
export function parseAs(what, text, defaults) {
  const trimmed = (text ?? '').trim();
  const out = { ...defaults };
  if (trimmed === '' || trimmed === 'null') return out;
  let value;
  try {
    value = JSON.parse(trimmed);
  } catch (e) {
    throw new Error(`invalid ${what}: ${e.message}`);
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new Error(`invalid ${what}: expected an object`);
  }
  for (const [k, v] of Object.entries(value)) {
    if (!Object.hasOwn(defaults, k)) {
      throw new Error(`invalid ${what}: unknown field \`${k}\`, expected one of ${Object.keys(defaults).join(', ')}`);
    }
    out[k] = v;
  }
  return out;
}

export function parseConfig(text, defaults) { return parseAs('plugin config', text, defaults); }

// ---- packed pods (wit/types.wit, pod-info): 11 u64 words per pod

export const POD_WORDS = 11;
const M32 = 0xffffffffn;

const TWO32 = 4294967296;
const EXACT_HI = 1 << 20; // hi word below this: the value is below 2^52, exact as a Number

/** One u64 from its 32-bit halves: a Number below 2^52, a BigInt above. */
function u64(lo, hi) {
  return hi < EXACT_HI ? hi * TWO32 + lo : (BigInt(hi) << 32n) | BigInt(lo);
}

/** Decodes rank's pod list (a BigUint64Array); throws naming a malformed pod. */
export function unpackPods(words) {
  if (words.length % POD_WORDS !== 0) {
    throw new Error(`pod list of ${words.length} words is not a multiple of ${POD_WORDS}`);
  }
  // The same memory as 32-bit halves (little-endian, as the wire form): no BigInt per word.
  const h = words instanceof BigUint64Array
    ? new Uint32Array(words.buffer, words.byteOffset, words.length * 2)
    : Uint32Array.from(Array.from(words, (w) => [Number(BigInt(w) & M32), Number(BigInt(w) >> 32n)]).flat());
  const pods = new Array(words.length / POD_WORDS);
  for (let i = 0; i < pods.length; i++) {
    const o = i * POD_WORDS * 2;
    const lo = h[o];
    const hi = h[o + 1];
    const qos = hi & 0xff;
    if (qos > 2) throw new Error(`pod ${i} has unknown qos ${qos}`);
    const flag = (name, shift) => {
      const b = (hi >>> shift) & 0xff;
      if (b > 1) throw new Error(`pod ${i} has ${name} ${b} (not 0 or 1)`);
      return b === 1;
    };
    pods[i] = {
      priority: lo | 0,
      qos,
      isStatic: flag('is-static', 8),
      isCritical: flag('is-critical', 16),
      hasStats: flag('has-stats', 24),
      memoryRequestBytes: u64(h[o + 2], h[o + 3]),
      memoryUsageBytes: u64(h[o + 4], h[o + 5]),
      cpuRequestMillis: u64(h[o + 6], h[o + 7]),
      cpuUsageMillis: u64(h[o + 8], h[o + 9]),
      diskRequestBytes: u64(h[o + 10], h[o + 11]),
      diskUsageBytes: u64(h[o + 12], h[o + 13]),
      inodesUsed: u64(h[o + 14], h[o + 15]),
      processCount: u64(h[o + 16], h[o + 17]),
      containerCount: h[o + 18],
      restartCount: h[o + 19],
      startTimeUnixMs: u64(h[o + 20], h[o + 21]),
    };
  }
  return pods;
}

/** The wire form of pods (tests, fixtures). */
export function packPods(pods) {
  const out = new BigUint64Array(pods.length * POD_WORDS);
  pods.forEach((p, i) => {
    const o = i * POD_WORDS;
    out[o] = (BigInt(p.priority >>> 0)) | BigInt(p.qos) << 32n | BigInt(+!!p.isStatic) << 40n
      | BigInt(+!!p.isCritical) << 48n | BigInt(+!!p.hasStats) << 56n;
    out[o + 1] = BigInt(p.memoryRequestBytes ?? 0n); out[o + 2] = BigInt(p.memoryUsageBytes ?? 0n);
    out[o + 3] = BigInt(p.cpuRequestMillis ?? 0n); out[o + 4] = BigInt(p.cpuUsageMillis ?? 0n);
    out[o + 5] = BigInt(p.diskRequestBytes ?? 0n); out[o + 6] = BigInt(p.diskUsageBytes ?? 0n);
    out[o + 7] = BigInt(p.inodesUsed ?? 0n); out[o + 8] = BigInt(p.processCount ?? 0n);
    out[o + 9] = BigInt(p.containerCount ?? 0) | BigInt(p.restartCount ?? 0) << 32n;
    out[o + 10] = BigInt(p.startTimeUnixMs ?? 0n);
  });
  return out;
}

// ---- upstream ranking (pkg/kubelet/eviction/helpers.go)

const cmp = (a, b) => (a < b ? -1 : a > b ? 1 : 0);
const trueFirst = (a, b) => (a === b ? 0 : a ? -1 : 1);

function measure(kind, p) {
  if (kind === 'disk') return [p.diskUsageBytes, p.diskRequestBytes];
  if (kind === 'inodes') return [p.inodesUsed, 0];
  return [p.memoryUsageBytes, p.memoryRequestBytes];
}

/** (ub - rb) against (ua - ra), exactly: Numbers below 2^52 add exactly; else BigInt. */
function cmpAbove(ua, ra, ub, rb) {
  if (typeof ua === 'number' && typeof ra === 'number' && typeof ub === 'number' && typeof rb === 'number') {
    return cmp(ub + ra, ua + rb);
  }
  return cmp(BigInt(ub) + BigInt(ra), BigInt(ua) + BigInt(rb));
}

/** Upstream's multi-key comparison: negative when a is evicted before b. */
export function compare(kind, a, b) {
  if (kind === 'pid') {
    return cmp(a.priority, b.priority) || trueFirst(!a.hasStats, !b.hasStats)
      || cmp(b.processCount, a.processCount);
  }
  const c = trueFirst(!a.hasStats, !b.hasStats);
  if (c) return c;
  const both = a.hasStats && b.hasStats;
  const [ua, ra] = measure(kind, a);
  const [ub, rb] = measure(kind, b);
  if (both) {
    const e = trueFirst(ua > ra, ub > rb);
    if (e) return e;
  }
  const pr = cmp(a.priority, b.priority);
  if (pr || !both) return pr;
  return cmpAbove(ua, ra, ub, rb);
}

/**
 * The upstream order for the first signal of `pressure` (memory when empty),
 * most evictable first, without critical and static pods; ties keep the input
 * order. The same order as the Rust SDK's defaults::eviction::rank.
 */
export function defaultRank(pressure, pods) {
  const kind = pressure.length ? pressureOf(pressure[0].signal) : 'memory';
  const order = pods.map((_, i) => i);
  order.sort((a, b) => compare(kind, pods[a], pods[b]) || a - b);
  return order.filter((i) => isEvictable(pods[i]));
}

export const ProbeResult = Object.freeze({
  success: (message) => ({ outcome: 'success', message }),
  failure: (message) => ({ outcome: 'failure', message }),
  unknown: (message) => ({ outcome: 'unknown', message }),
});
