import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EvictionCase, Pod } from 'wasmlet-plugin-sdk/testing';
import { @TYPE@ } from './plugin.js';

test('flappy pods go first', () => {
  const c = new EvictionCase().pod(
    new Pod('default', 'calm'),
    new Pod('default', 'flappy').restarts(9),
    new Pod('kube-system', 'static').static(),
  );
  assert.deepEqual(c.rankNames(new @TYPE@()), ['default/flappy', 'default/calm']);
});
