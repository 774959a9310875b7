// @NAME@: a wasmlet admission plugin. Refuses pods with a container that sets no memory limit.
import { parseConfig } from 'wasmlet-plugin-sdk';

export class @TYPE@ {
  configure(text) {
    parseConfig(text, {});
  }

  admit(pod) {
    for (const c of pod.containers) {
      if (!c.hasMemoryLimit) throw new Error(`container ${c.name} sets no memory limit`);
    }
  }
}
