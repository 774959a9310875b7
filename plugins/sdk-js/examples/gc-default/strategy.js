// The upstream kubelet's image and container GC (world gc-strategy): the
// JavaScript twin of plugins/gc-default, planning with the SDK's defaults.
//
// Config (all optional; upstream's flag defaults): {"maxPerPodContainer": 1, "maxContainers": -1}

import { nowUnixMs, parseConfig } from '../../src/index.js';
import { DEFAULT_CONTAINER_GC_POLICY, defaultPlanContainers, defaultPlanImages } from '../../src/gc.js';

export class DefaultGc {
  constructor() {
    this.policy = { ...DEFAULT_CONTAINER_GC_POLICY };
  }

  configure(text) {
    const c = parseConfig(text, DEFAULT_CONTAINER_GC_POLICY);
    for (const [key, value] of Object.entries(c)) {
      if (!Number.isInteger(value) || value < -(2 ** 31) || value >= 2 ** 31) {
        throw new Error(`invalid plugin config: ${key} must be a 32-bit integer`);
      }
    }
    this.policy = c;
  }

  planImages(disk, images) {
    return defaultPlanImages(disk, images, nowUnixMs());
  }

  planContainers(dead) {
    return defaultPlanContainers(dead, this.policy);
  }
}
