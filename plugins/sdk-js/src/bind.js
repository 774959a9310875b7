// Adapters from componentize-js's generated imports to the SDK's host, meta and
// pod-access objects, and the result<_, string> convention of exports.

/** Runs f; a thrown error becomes the export's err(string). */
export function errorResult(f) {
  try {
    return f();
  } catch (e) {
    const message = typeof e === 'string' ? e : (e?.payload ?? e?.message ?? String(e));
    const err = new Error(String(message));
    err.payload = String(message);
    throw err;
  }
}

export function bindHost(host) {
  return {
    log(level, message, fields) { host.log(level, message, fields); },
    nowUnixMs() { return host.nowUnixMs(); },
  };
}

export function bindMeta(m) {
  return {
    podNamespace: (i) => m.podNamespace(i),
    podName: (i) => m.podName(i),
    podUid: (i) => m.podUid(i),
    podLabel: (i, k) => m.podLabel(i, k),
    podAnnotation: (i, k) => m.podAnnotation(i, k),
    imageTags: (i) => m.imageTags(i),
  };
}

const unwrap = (e) => new Error(String(e?.payload ?? e?.message ?? e));

/** PodAccess through the pod-access imports; in a probe, sleep throws without asking the host. */
export function podAccess(a, inProbe) {
  return {
    httpGet(port, path, headers = [], timeoutMs = 1000) {
      try {
        return a.httpGet(port, path, headers, timeoutMs);
      } catch (e) {
        throw unwrap(e);
      }
    },
    tcpConnect(port, timeoutMs = 1000) {
      try {
        a.tcpConnect(port, timeoutMs);
      } catch (e) {
        throw unwrap(e);
      }
    },
    exec(container, command, timeoutMs = 1000) {
      try {
        return a.exec(container, command, timeoutMs);
      } catch (e) {
        throw unwrap(e);
      }
    },
    sleep(ms) {
      if (inProbe) throw new Error('sleep is for hooks: a probe returns and lets the next period run');
      a.sleep(ms);
    },
  };
}
