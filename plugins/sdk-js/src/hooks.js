// World lifecycle-hooks: wraps a hooks class into the component's exports.
//
//   import * as host from 'wasmlet:plugin/host@0.1.2';
//   import * as podMeta from 'wasmlet:plugin/pod-meta@0.1.2';
//   import * as podAccess from 'wasmlet:plugin/pod-access@0.1.2';
//   export const { configure, selfCheck, admit, postStart, preStop } =
//     hooksWorld(MyHooks, { host, podMeta, podAccess });

import { useHost, useMeta } from './index.js';
import { bindHost, bindMeta, errorResult, podAccess } from './bind.js';

/**
 * The exports of a lifecycle-hooks component. `Hooks` has configure(text) and
 * any of admit(pod), postStart(container, pod), preStop(container, graceMs, pod)
 * (missing ones accept); throwing refuses the pod or fails the hook with the
 * message. pod-meta index 0 is the pod concerned.
 */
export function hooksWorld(Hooks, imports) {
  useHost(bindHost(imports.host));
  useMeta(bindMeta(imports.podMeta));
  const pod = podAccess(imports.podAccess, false);
  let plugin = new Hooks();
  return {
    configure(text) {
      plugin = new Hooks();
      errorResult(() => plugin.configure?.(text));
    },
    selfCheck() {
      errorResult(() => plugin.selfCheck?.());
    },
    admit(admission) {
      errorResult(() => plugin.admit?.(admission));
    },
    postStart(container) {
      errorResult(() => plugin.postStart?.(container, pod));
    },
    preStop(container, graceMs) {
      errorResult(() => plugin.preStop?.(container, graceMs, pod));
    },
  };
}
