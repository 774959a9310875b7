import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MockPod, probeRequest } from 'wasmlet-plugin-sdk/testing';
import { @TYPE@ } from './plugin.js';

test('healthz', () => {
  const pod = new MockPod();
  assert.equal(new @TYPE@().check(probeRequest('', 8080), pod).outcome, 'failure');
  pod.serve(8080, '/healthz', 200, 'ok');
  assert.equal(new @TYPE@().check(probeRequest('', 8080), pod).outcome, 'success');
});
