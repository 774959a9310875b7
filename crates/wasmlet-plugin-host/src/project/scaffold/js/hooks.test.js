import { test } from 'node:test';
import assert from 'node:assert/strict';
import { @TYPE@ } from './plugin.js';

const container = (name, hasMemoryLimit) => ({
  name, isInit: false, hasCpuRequest: true, hasMemoryRequest: true, hasCpuLimit: true, hasMemoryLimit,
});

test('a memory limit is required', () => {
  const pod = { index: 0, priority: 0, qos: 'burstable', isStatic: false, isCritical: false, containers: [container('app', true)] };
  new @TYPE@().admit(pod);
  pod.containers.push(container('sidecar', false));
  assert.throws(() => new @TYPE@().admit(pod), /sidecar sets no memory limit/);
});
