// World gc-strategy: wraps a strategy class into the component's exports, and
// upstream's image and container GC plans, the same code as the Rust SDK's
// defaults::gc (plugins/policy-default/src/gc.rs) and the host's built-in default.
//
//   import * as host from 'wasmlet:plugin/host@0.1.2';
//   import * as podMeta from 'wasmlet:plugin/pod-meta@0.1.2';
//   export const { configure, selfCheck, planImages, planContainers } =
//     gcWorld(MyStrategy, { host, podMeta });
//
// Records arrive with u64 fields as Numbers below 2^52 and BigInt above (as in
// index.js); the plans below compute in BigInt, so either works.

import { nowUnixMs, useHost, useMeta } from './index.js';
import { bindHost, bindMeta, errorResult } from './bind.js';

/** Upstream's container GC flag defaults (kubecontainer.GCPolicy; the host applies the age limit). */
export const DEFAULT_CONTAINER_GC_POLICY = Object.freeze({
  /** --maximum-dead-containers-per-container; negative = no limit. */
  maxPerPodContainer: 1,
  /** --maximum-dead-containers; negative = no limit. */
  maxContainers: -1,
});

/** a - b, or 0 when b is later (Rust's saturating_sub on u64). */
function ageOf(now, then) {
  const d = BigInt(now) - BigInt(then);
  return d > 0n ? d : 0n;
}

const cmp = (a, b) => (a < b ? -1 : a > b ? 1 : 0);

/**
 * Whether an image may be collected at all: not in use, not pinned, and first
 * seen at least disk.minAgeMs before nowMs.
 */
export function isCandidate(disk, image, nowMs) {
  return !image.inUse && !image.pinned && ageOf(nowMs, image.firstSeenUnixMs) >= BigInt(disk.minAgeMs);
}

/**
 * From `candidates` in the order to delete them: every one unused for longer
 * than disk.maxAgeMs (when set; upstream freeOldImages), then further ones
 * until disk.bytesToFree is reached (upstream freeSpace).
 */
export function takeUntilFreed(disk, images, candidates, nowMs) {
  const plan = [];
  let freed = 0n;
  let rest = candidates;
  const maxAge = BigInt(disk.maxAgeMs);
  if (maxAge > 0n) {
    rest = [];
    for (const i of candidates) {
      if (ageOf(nowMs, images[i].lastUsedUnixMs) > maxAge) {
        plan.push(i);
        freed += BigInt(images[i].sizeBytes);
      } else {
        rest.push(i);
      }
    }
  }
  const toFree = BigInt(disk.bytesToFree);
  for (const i of rest) {
    if (freed >= toFree) break;
    plan.push(i);
    freed += BigInt(images[i].sizeBytes);
  }
  return plan;
}

/**
 * Upstream's image GC cycle: the images to delete, in order. Candidates
 * (isCandidate) least recently used first (last used, then first seen;
 * upstream byLastUsedAndDetected), then takeUntilFreed. When they cannot free
 * enough, all are planned and the host reports FreeDiskSpaceFailed.
 */
export function defaultPlanImages(disk, images, nowMs = nowUnixMs()) {
  const candidates = [];
  images.forEach((image, i) => { if (isCandidate(disk, image, nowMs)) candidates.push(i); });
  candidates.sort((a, b) => cmp(images[a].lastUsedUnixMs, images[b].lastUsedUnixMs)
    || cmp(images[a].firstSeenUnixMs, images[b].firstSeenUnixMs) || a - b);
  return takeUntilFreed(disk, images, candidates, nowMs);
}

/** Moves all but the first `keep` members of each unit into plan, oldest first (upstream removeOldestN). */
function keepNewest(units, keep, plan) {
  for (const members of units.values()) {
    if (members.length > keep) plan.push(...members.splice(keep).reverse());
  }
}

/**
 * Upstream's container GC cycle (evictContainers): the dead containers to
 * remove, in order. Every container of a deleted pod; then, per evict unit,
 * all but the newest maxPerPodContainer; then, if more than maxContainers
 * remain, an equal share per unit (at least one) and finally the oldest
 * node-wide. "Newest" within a unit follows perContainerRank, node-wide
 * finishedUnixMs.
 */
export function defaultPlanContainers(dead, policy = DEFAULT_CONTAINER_GC_POLICY) {
  const plan = [];
  const byUnit = new Map();
  dead.forEach((c, i) => {
    if (c.podDeleted) {
      plan.push(i);
    } else {
      if (!byUnit.has(c.unit)) byUnit.set(c.unit, []);
      byUnit.get(c.unit).push(i);
    }
  });
  // Units in ascending order, as the Rust BTreeMap.
  const units = new Map([...byUnit.entries()].sort((a, b) => a[0] - b[0]));
  for (const members of units.values()) {
    members.sort((a, b) => dead[a].perContainerRank - dead[b].perContainerRank
      || cmp(dead[b].finishedUnixMs, dead[a].finishedUnixMs) || a - b);
  }
  if (policy.maxPerPodContainer >= 0) keepNewest(units, policy.maxPerPodContainer, plan);
  if (policy.maxContainers >= 0) {
    const max = policy.maxContainers;
    let remaining = 0;
    for (const members of units.values()) remaining += members.length;
    if (remaining > max) {
      const perUnit = Math.max(Math.floor(max / Math.max(units.size, 1)), 1);
      keepNewest(units, perUnit, plan);
      const flat = [...units.values()].flat();
      if (flat.length > max) {
        // Oldest first; ties by index for determinism.
        flat.sort((a, b) => cmp(dead[a].finishedUnixMs, dead[b].finishedUnixMs) || a - b);
        plan.push(...flat.slice(0, flat.length - max));
      }
    }
  }
  return plan;
}

/**
 * A base class whose plans are upstream's (by the host's clock and with the
 * default flags): extend it and override planImages or planContainers. A class
 * that does not extend it works too; a missing method plans the default.
 */
export class GcStrategy {
  configure(_text) {}
  selfCheck() {}
  planImages(disk, images) { return defaultPlanImages(disk, images, nowUnixMs()); }
  planContainers(dead) { return defaultPlanContainers(dead); }
}

const EXACT = 1n << 52n;
/** A u64 from the component as index.js gives them: a Number below 2^52, else BigInt. */
const u64 = (v) => (typeof v === 'bigint' && v < EXACT ? Number(v) : v);

/** The image plan of `plugin`, or the default when it has none. */
export function planImagesOf(plugin, disk, images) {
  return plugin.planImages ? plugin.planImages(disk, images) : defaultPlanImages(disk, images, nowUnixMs());
}

/** The container plan of `plugin`, or the default when it has none. */
export function planContainersOf(plugin, dead) {
  return plugin.planContainers ? plugin.planContainers(dead) : defaultPlanContainers(dead);
}

/**
 * The exports of a gc-strategy component. `Strategy` is a class with
 * configure(text), optional selfCheck(), planImages(disk, images) and
 * planContainers(dead) returning indices (missing ones plan upstream's
 * default); an exception answers err(reason). During planImages, imageTags(i)
 * answers; during planContainers, the pod-meta functions for `pod`. A new
 * instance is made by every configure, as the Rust SDK does.
 */
export function gcWorld(Strategy, imports) {
  useHost(bindHost(imports.host));
  useMeta(bindMeta(imports.podMeta));
  let plugin = new Strategy();
  return {
    configure(text) {
      plugin = new Strategy();
      errorResult(() => plugin.configure?.(text));
    },
    selfCheck() {
      errorResult(() => plugin.selfCheck?.());
    },
    planImages(disk, images) {
      return errorResult(() => {
        const d = {
          capacityBytes: u64(disk.capacityBytes), availableBytes: u64(disk.availableBytes),
          bytesToFree: u64(disk.bytesToFree), minAgeMs: u64(disk.minAgeMs), maxAgeMs: u64(disk.maxAgeMs),
        };
        const infos = images.map((i) => ({
          sizeBytes: u64(i.sizeBytes), firstSeenUnixMs: u64(i.firstSeenUnixMs),
          lastUsedUnixMs: u64(i.lastUsedUnixMs), inUse: i.inUse, pinned: i.pinned,
        }));
        return Uint32Array.from(planImagesOf(plugin, d, infos));
      });
    },
    planContainers(dead) {
      return errorResult(() => {
        const infos = dead.map((c) => ({
          podDeleted: c.podDeleted, finishedUnixMs: u64(c.finishedUnixMs),
          perContainerRank: c.perContainerRank, unit: c.unit, pod: c.pod,
        }));
        return Uint32Array.from(planContainersOf(plugin, infos));
      });
    },
  };
}
