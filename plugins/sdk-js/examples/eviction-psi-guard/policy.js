// Evicts before the node thrashes (world pressure-eviction-policy): the
// JavaScript twin of plugins/eviction-psi-guard. When node memory full avg10
// stays at or over memoryFullAvg10Percent for forSeconds (or, when
// memorySomeAvg10Percent is set, memory some avg10 stays at or over that), it
// asks to evict the lowest-priority pod using the most memory above its
// request; under a threshold it ranks as upstream.
//
// Config: {"memoryFullAvg10Percent": 60, "forSeconds": 30}, optionally
// "memorySomeAvg10Percent".

import { defaultRank, isEvictable, parseConfig } from '../../src/index.js';

const DEFAULTS = { memoryFullAvg10Percent: 60, forSeconds: 30, memorySomeAvg10Percent: undefined };

/** Memory above the request, as a Number of bytes (0 within it). */
const excess = (pod) => Math.max(0, Number(pod.memoryUsageBytes) - Number(pod.memoryRequestBytes));

/** Evictable pods above their request: lowest priority first, then the most above it. */
export function candidates(pods) {
  return pods
    .map((pod, i) => ({ pod, i }))
    .filter(({ pod }) => isEvictable(pod) && pod.hasStats && excess(pod) > 0)
    .sort((a, b) => a.pod.priority - b.pod.priority || excess(b.pod) - excess(a.pod) || a.i - b.i)
    .map(({ i }) => i);
}

export class PsiGuard {
  constructor() {
    this.config = { ...DEFAULTS };
    this.overSinceMs = undefined;
  }

  configure(text) {
    const c = parseConfig(text, DEFAULTS);
    for (const field of ['memoryFullAvg10Percent', 'memorySomeAvg10Percent']) {
      const limit = c[field];
      if (field === 'memorySomeAvg10Percent' && (limit === undefined || limit === null)) continue;
      if (typeof limit !== 'number' || !(limit > 0 && limit <= 100)) {
        throw new Error(`${field} must be in (0, 100], got ${limit}`);
      }
    }
    if (!Number.isInteger(c.forSeconds) || c.forSeconds < 0) {
      throw new Error(`forSeconds must be a whole number of seconds, got ${c.forSeconds}`);
    }
    this.config = c;
  }

  rank(_node, pressure, pods) {
    return defaultRank(pressure, pods);
  }

  /** The first of full and (when configured) some at or over its limit. */
  overLimit(psi) {
    const readings = [
      ['full', psi.memory.full.avg10 / 100, this.config.memoryFullAvg10Percent],
      ['some', psi.memory.some.avg10 / 100, this.config.memorySomeAvg10Percent],
    ];
    return readings.find(([, share, limit]) => limit !== undefined && limit !== null && share >= limit);
  }

  watch(_node, psi, pods) {
    const over = this.overLimit(psi);
    if (over === undefined) {
      this.overSinceMs = undefined;
      return undefined;
    }
    const [kind, share, limit] = over;
    if (this.overSinceMs === undefined) this.overSinceMs = psi.readUnixMs;
    const heldMs = Math.max(0, psi.readUnixMs - this.overSinceMs);
    if (heldMs < this.config.forSeconds * 1000) return undefined;
    const order = candidates(pods);
    if (order.length === 0) return undefined;
    this.overSinceMs = psi.readUnixMs;
    return {
      pods: order,
      reason: `memory ${kind} avg10 ${share.toFixed(2)}% at or over ${limit}% for ${Math.floor(heldMs / 1000)} s`,
    };
  }
}
