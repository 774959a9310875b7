// World pressure-eviction-policy (contract 0.1.2): an eviction policy that also
// watches the node's pressure stall information and may ask to evict before a
// threshold is met (wit/pressure.wit).
//
//   import * as host from 'wasmlet:plugin/host@0.1.2';
//   import * as podMeta from 'wasmlet:plugin/pod-meta@0.1.2';
//   export const { configure, selfCheck, rank, pressureWatch } =
//     pressureEvictionWorld(MyPolicy, { host, podMeta });

import { unpackPods } from './index.js';
import { errorResult } from './bind.js';
import { evictionWorld } from './eviction.js';

/** A PSI line with Numbers: averages in hundredths of a percent, the total in microseconds. */
function line(l) {
  return { avg10: l.avg10, avg60: l.avg60, avg300: l.avg300, totalUs: Number(l.totalUs) };
}

/** The node's PSI as the component model passes it (u64 as BigInt), with Numbers. */
export function nodePsi(p) {
  const resource = (r) => ({ some: line(r.some), full: line(r.full) });
  return { cpu: resource(p.cpu), memory: resource(p.memory), io: resource(p.io), readUnixMs: Number(p.readUnixMs) };
}

/**
 * The exports of a pressure-eviction-policy component: those of evictionWorld,
 * and `pressureWatch.watch(node, psi, words)`, which calls the policy's
 * watch(node, psi, pods) -> undefined | {pods: [indices], reason}.
 */
export function pressureEvictionWorld(Policy, imports) {
  const world = evictionWorld(Policy, imports);
  return {
    configure: world.configure,
    selfCheck: world.selfCheck,
    rank: world.rank,
    pressureWatch: {
      watch(node, psi, words) {
        return errorResult(() => {
          const asked = world.current().watch(node, nodePsi(psi), unpackPods(words));
          if (asked === undefined || asked === null) return undefined;
          return { pods: Uint32Array.from(asked.pods), reason: String(asked.reason) };
        });
      },
    },
  };
}
