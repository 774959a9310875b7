// World eviction-policy: wraps a policy class into the component's exports.
//
// A component's entry module imports the WIT interfaces (they exist only in a
// component) and passes them here, so the SDK itself stays plain JS that runs
// under node:
//
//   import * as host from 'wasmlet:plugin/host@0.1.2';
//   import * as podMeta from 'wasmlet:plugin/pod-meta@0.1.2';
//   export const { configure, selfCheck, rank } = evictionWorld(MyPolicy, { host, podMeta });

import { unpackPods, useHost, useMeta } from './index.js';
import { bindHost, bindMeta, errorResult } from './bind.js';

/**
 * The exports of an eviction-policy component. `Policy` is a class with
 * configure(text), optional selfCheck() and rank(node, pressure, pods) ->
 * indices; an exception answers err(reason). A new instance is made by every
 * configure, as the Rust SDK does.
 */
export function evictionWorld(Policy, imports) {
  useHost(bindHost(imports.host));
  useMeta(bindMeta(imports.podMeta));
  let plugin = new Policy();
  return {
    configure(text) {
      plugin = new Policy();
      errorResult(() => plugin.configure?.(text));
    },
    selfCheck() {
      errorResult(() => plugin.selfCheck?.());
    },
    rank(node, pressure, words) {
      return errorResult(() => Uint32Array.from(plugin.rank(node, pressure, unpackPods(words))));
    },
    /** The instance configure made last (for world modules that export more calls). */
    current() {
      return plugin;
    },
  };
}
