// GETs a JSON health document and compares one field (world probe-handler): the
// JavaScript twin of plugins/probe-json-health.
//
// Args: {"port": 8080, "path": "/health", "field": "status", "expected": "ok"}
// (all optional but port when the pod declares more than one). Plugin config
// sets the defaults of path, field and expected.

import { ProbeResult, parseAs, parseConfig } from '../../src/index.js';

const DEFAULTS = { path: '/health', field: 'status', expected: 'ok' };
const MISSING = Symbol('missing');

function lookup(value, path) {
  for (const key of path.split('.').filter((k) => k !== '')) {
    if (Array.isArray(value)) {
      if (!/^[0-9]+$/.test(key) || Number(key) >= value.length) return MISSING;
      value = value[Number(key)];
    } else if (value !== null && typeof value === 'object') {
      if (!Object.hasOwn(value, key)) return MISSING;
      value = value[key];
    } else {
      return MISSING;
    }
  }
  return value;
}

// Deep equality of JSON values. JSON.parse reads 1 and 1.0 as the same number,
// so here expected 1 matches a body's 1.0, where the Rust and Go twins tell an
// integer from a float (serde_json's Value); every other comparison is theirs.
function equal(a, b) {
  if (typeof a !== typeof b || Array.isArray(a) !== Array.isArray(b) || (a === null) !== (b === null)) return false;
  if (Array.isArray(a)) return a.length === b.length && a.every((x, i) => equal(x, b[i]));
  if (a !== null && typeof a === 'object') {
    const ka = Object.keys(a);
    return ka.length === Object.keys(b).length && ka.every((k) => Object.hasOwn(b, k) && equal(a[k], b[k]));
  }
  return a === b;
}

const compact = (v) => JSON.stringify(v);

export class JsonHealth {
  constructor() {
    this.defaults = { ...DEFAULTS };
  }

  configure(text) {
    this.defaults = parseConfig(text, DEFAULTS);
  }

  check(request, pod) {
    let args;
    try {
      args = parseAs('probe args', request.args, { port: null, path: null, field: null, expected: null });
      if (args.port !== null && !(Number.isInteger(args.port) && args.port >= 0 && args.port <= 65535)) {
        throw new Error(`invalid probe args: port ${JSON.stringify(args.port)} is not a u16`);
      }
      for (const k of ['path', 'field']) {
        if (args[k] !== null && typeof args[k] !== 'string') throw new Error(`invalid probe args: ${k} must be a string`);
      }
    } catch (e) {
      return ProbeResult.failure(e.message);
    }
    let port = args.port;
    if (port === null) {
      if (request.ports.length !== 1) {
        return ProbeResult.failure(`args need a "port": the pod declares [${[...request.ports].join(', ')}]`);
      }
      port = request.ports[0];
    }
    const path = args.path ?? this.defaults.path;
    const field = args.field ?? this.defaults.field;
    const expected = args.expected ?? this.defaults.expected;
    let response;
    try {
      response = pod.httpGet(port, path, [['Accept', 'application/json']], request.timeoutMs);
    } catch (e) {
      return ProbeResult.failure(`GET :${port}${path}: ${e.message}`);
    }
    if (response.status < 200 || response.status >= 300) {
      return ProbeResult.failure(`GET :${port}${path}: HTTP ${response.status}`);
    }
    let body;
    try {
      body = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(response.body));
    } catch (e) {
      return ProbeResult.unknown(`GET :${port}${path}: body is not JSON: ${e.message}`);
    }
    const value = lookup(body, field);
    if (value === MISSING) return ProbeResult.failure(`${field} is missing from the health document`);
    if (equal(value, expected)) return ProbeResult.success(`${field} is ${compact(value)}`);
    return ProbeResult.failure(`${field} is ${compact(value)}, expected ${compact(expected)}`);
  }
}
