// Refuses pods whose containers lack CPU or memory limits, in chosen namespaces
// (world lifecycle-hooks, admit only): the JavaScript twin of
// plugins/admission-require-limits.
//
// Config: {"namespaces": ["prod", "payments"]} (no namespace: admit all).

import { log, parseConfig, podName, podNamespace } from '../../src/index.js';

export class RequireLimits {
  constructor() {
    this.namespaces = [];
  }

  configure(text) {
    const c = parseConfig(text, { namespaces: [] });
    if (!Array.isArray(c.namespaces) || !c.namespaces.every((n) => typeof n === 'string')) {
      throw new Error('invalid plugin config: namespaces must be a list of strings');
    }
    this.namespaces = c.namespaces;
  }

  admit(pod) {
    if (this.namespaces.length === 0) return;
    const namespace = podNamespace(pod.index);
    if (!this.namespaces.includes(namespace)) return;
    const missing = [];
    for (const c of pod.containers) {
      if (c.hasCpuLimit && c.hasMemoryLimit) continue;
      const lacks = c.hasMemoryLimit ? 'cpu limit' : c.hasCpuLimit ? 'memory limit' : 'cpu and memory limits';
      missing.push(`container "${c.name}" has no ${lacks}`);
    }
    if (missing.length === 0) return;
    log('info', 'pod refused: missing limits', [['namespace', namespace], ['pod', podName(pod.index)]]);
    throw new Error(`namespace "${namespace}" requires cpu and memory limits: ${missing.join('; ')}`);
  }
}
