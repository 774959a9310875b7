// @NAME@: a wasmlet eviction policy. The pods with the most restarts go first.
import { isEvictable, parseConfig } from 'wasmlet-plugin-sdk';

export class @TYPE@ {
  configure(text) {
    parseConfig(text, {});
  }

  rank(node, pressure, pods) {
    const order = [];
    pods.forEach((pod, i) => { if (isEvictable(pod)) order.push(i); });
    return order.sort((a, b) => pods[b].restartCount - pods[a].restartCount || a - b);
  }
}
