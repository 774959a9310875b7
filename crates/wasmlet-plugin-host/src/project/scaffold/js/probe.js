// @NAME@: a wasmlet probe. Succeeds when GET /healthz on the pod's first declared port answers 2xx.
import { ProbeResult, parseConfig } from 'wasmlet-plugin-sdk';

export class @TYPE@ {
  configure(text) {
    parseConfig(text, {});
  }

  check(request, pod) {
    if (request.ports.length === 0) return ProbeResult.failure('the pod declares no port');
    let response;
    try {
      response = pod.httpGet(request.ports[0], '/healthz', [], request.timeoutMs);
    } catch (e) {
      return ProbeResult.failure(String(e?.message ?? e));
    }
    const message = `/healthz answered ${response.status}`;
    return response.status >= 200 && response.status <= 299
      ? ProbeResult.success(message)
      : ProbeResult.failure(message);
  }
}
