// World probe-handler: wraps a probe class into the component's exports.
//
//   import * as host from 'wasmlet:plugin/host@0.1.2';
//   import * as podAccess from 'wasmlet:plugin/pod-access@0.1.2';
//   export const { configure, selfCheck, check } = probeWorld(MyProbe, { host, podAccess });

import { ProbeResult, useHost } from './index.js';
import { bindHost, errorResult, podAccess } from './bind.js';

/**
 * The exports of a probe-handler component. `Probe` has configure(text),
 * optional selfCheck() and check(request, pod) -> {outcome, message}; pod's
 * httpGet/tcpConnect/exec throw on a connection error, a timeout or a refused
 * target. An exception out of check is a failure with its message.
 */
export function probeWorld(Probe, imports) {
  useHost(bindHost(imports.host));
  const pod = podAccess(imports.podAccess, true);
  let plugin = new Probe();
  return {
    configure(text) {
      plugin = new Probe();
      errorResult(() => plugin.configure?.(text));
    },
    selfCheck() {
      errorResult(() => plugin.selfCheck?.());
    },
    check(request) {
      try {
        return plugin.check(request, pod);
      } catch (e) {
        return ProbeResult.failure(`plugin threw: ${e?.message ?? e}`);
      }
    },
  };
}
