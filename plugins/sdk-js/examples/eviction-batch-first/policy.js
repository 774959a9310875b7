// Evicts batch pods before anything else and never touches protected namespaces
// (world eviction-policy): the JavaScript twin of plugins/eviction-batch-first.
//
// Config: {"protectNamespaces": ["kube-system"], "batchLabel": "workload-class", "batchValue": "batch"}

import { defaultRank, parseConfig, podLabel, podNamespace } from '../../src/index.js';

const DEFAULTS = { protectNamespaces: [], batchLabel: 'workload-class', batchValue: 'batch' };

export class BatchFirst {
  constructor() {
    this.config = { ...DEFAULTS };
  }

  configure(text) {
    const c = parseConfig(text, DEFAULTS);
    if (!Array.isArray(c.protectNamespaces) || !c.protectNamespaces.every((n) => typeof n === 'string')) {
      throw new Error('invalid plugin config: protectNamespaces must be a list of strings');
    }
    if (typeof c.batchLabel !== 'string' || typeof c.batchValue !== 'string') {
      throw new Error('invalid plugin config: batchLabel and batchValue must be strings');
    }
    if (c.batchLabel === '') throw new Error('batchLabel must not be empty');
    this.config = c;
  }

  rank(_node, pressure, pods) {
    const { protectNamespaces, batchLabel, batchValue } = this.config;
    const batch = [];
    const rest = [];
    for (const i of defaultRank(pressure, pods)) {
      if (protectNamespaces.includes(podNamespace(i))) continue;
      (podLabel(i, batchLabel) === batchValue ? batch : rest).push(i);
    }
    return batch.concat(rest);
  }
}
