import { test } from 'node:test';
import assert from 'node:assert/strict';
import { GcCase, Image, MI } from 'wasmlet-plugin-sdk/testing';
import { @TYPE@ } from './plugin.js';

test('least recently used images first', () => {
  const c = new GcCase().bytesToFree(150n * MI).image(
    new Image('recent:1').usedMinutesAgo(10),
    new Image('old:1').usedMinutesAgo(300),
    new Image('running:1').usedMinutesAgo(900).inUse(),
  );
  assert.deepEqual(c.planImageTags(new @TYPE@()), ['old:1', 'recent:1']);
});

test('the newest dead container of each container stays', () => {
  const c = new GcCase().deadContainer(0, 0, 5).deadContainer(0, 1, 10).deadContainer(1, 0, 1).podDeleted(1);
  assert.deepEqual(c.planContainers(new @TYPE@()), [1, 2]);
});
