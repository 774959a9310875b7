// @NAME@: a wasmlet GC strategy. The least recently used unused images go first until
// enough is freed, and every dead container but the newest of each container (all of them
// once the pod is deleted). Without planImages or planContainers, a strategy plans
// upstream's way (wasmlet-plugin-sdk/gc's defaults). u64 fields are BigInt above 2^52:
// sums are done in BigInt.
import { parseConfig } from 'wasmlet-plugin-sdk';

export class @TYPE@ {
  configure(text) {
    parseConfig(text, {});
  }

  planImages(disk, images) {
    const candidates = [];
    images.forEach((image, i) => { if (!image.inUse && !image.pinned) candidates.push(i); });
    const used = (i) => images[i].lastUsedUnixMs;
    candidates.sort((a, b) => (used(a) < used(b) ? -1 : used(a) > used(b) ? 1 : a - b));
    const plan = [];
    let freed = 0n;
    for (const i of candidates) {
      if (freed >= BigInt(disk.bytesToFree)) break;
      plan.push(i);
      freed += BigInt(images[i].sizeBytes);
    }
    return plan;
  }

  planContainers(dead) {
    const plan = [];
    dead.forEach((c, i) => { if (c.podDeleted || c.perContainerRank > 0) plan.push(i); });
    return plan;
  }
}
