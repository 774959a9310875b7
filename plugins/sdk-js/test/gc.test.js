// Native tests of the gc-strategy world: the SDK's default plans (the cases of
// plugins/policy-default/src/gc/tests.rs), the world glue and the gc-default example.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { imageTags } from '../src/index.js';
import { DEFAULT_CONTAINER_GC_POLICY, GcStrategy, defaultPlanContainers, defaultPlanImages, gcWorld }
  from '../src/gc.js';
import { GcCase, Image, MI } from '../src/testing.js';
import { DefaultGc } from '../examples/gc-default/strategy.js';

const MIN = 60_000;
const NOW = 1_000 * MIN;
const image = (sizeBytes, firstSeenUnixMs, lastUsedUnixMs, more = {}) =>
  ({ sizeBytes, firstSeenUnixMs, lastUsedUnixMs, inUse: false, pinned: false, ...more });
const disk = (bytesToFree, maxAgeMs = 0) =>
  ({ capacityBytes: 1000, availableBytes: 100, bytesToFree, minAgeMs: 2 * MIN, maxAgeMs });
const dead = (unit, rank, finishedUnixMs, podDeleted = false) =>
  ({ podDeleted, finishedUnixMs, perContainerRank: rank, unit, pod: unit });

test('images go least recently used first until enough is freed', () => {
  const images = [image(100, 10 * MIN, 500 * MIN), image(100, 20 * MIN, 100 * MIN),
    image(100, 5 * MIN, 300 * MIN), image(100, MIN, 300 * MIN)];
  assert.deepEqual(defaultPlanImages(disk(150), images, NOW), [1, 3]);
  assert.deepEqual(defaultPlanImages(disk(10_000), images, NOW), [1, 3, 2, 0]);
  assert.deepEqual(defaultPlanImages(disk(0), images, NOW), []);
});

test('images in use, pinned or young are skipped', () => {
  const images = [image(100, 0, 0, { inUse: true }), image(100, 0, 0, { pinned: true }),
    image(100, NOW - MIN, NOW - MIN), image(100, 0, 10)];
  assert.deepEqual(defaultPlanImages(disk(10_000), images, NOW), [3]);
  // A clock behind the image: age 0, younger than min-age.
  assert.deepEqual(defaultPlanImages(disk(10_000), [image(1, NOW + MIN, NOW + MIN)], NOW), []);
});

test('images past max-age go whatever the disk', () => {
  const images = [image(10, 0, NOW - 10 * MIN), image(10, 0, NOW - 100 * MIN), image(10, 0, NOW - 3 * MIN)];
  assert.deepEqual(defaultPlanImages(disk(0, 5 * MIN), images, NOW), [1, 0]);
  assert.deepEqual(defaultPlanImages(disk(25, 5 * MIN), images, NOW), [1, 0, 2]);
});

test('Numbers and BigInts plan alike, above 2^52 too', () => {
  const big = 2n ** 60n;
  const images = [image(2n ** 62n, big, big + 5n), image(1, big - 10n, big - 1n), image(3, 0n, 0)];
  assert.deepEqual(defaultPlanImages(disk(2n ** 62n), images, big + 10n * BigInt(MIN)), [2, 1, 0]);
  assert.deepEqual(defaultPlanImages(disk(3), images, big + 10n * BigInt(MIN)), [2]);
});

test('containers keep the newest per unit and nothing of deleted pods', () => {
  const list = [dead(0, 0, 30), dead(0, 1, 20), dead(0, 2, 10), dead(1, 0, 40), dead(2, 0, 50, true)];
  assert.deepEqual(defaultPlanContainers(list), [4, 2, 1]);
  assert.deepEqual(defaultPlanContainers([dead(0, 0, 30), dead(0, 1, 20)],
    { maxPerPodContainer: -1, maxContainers: -1 }), []);
});

test('containers over the node limit go oldest first', () => {
  const list = [dead(0, 0, 60), dead(0, 1, 10), dead(1, 0, 50), dead(1, 1, 20), dead(2, 0, 40), dead(2, 1, 30)];
  assert.deepEqual(defaultPlanContainers(list, { maxPerPodContainer: 5, maxContainers: 4 }), [1, 3, 5]);
  const plan = defaultPlanContainers(list, { maxPerPodContainer: -1, maxContainers: 1 });
  assert.deepEqual(plan.slice(3), [4, 2]);
  // Units in numeric order, not insertion or string order.
  const units = [dead(10, 1, 5), dead(9, 1, 6), dead(10, 0, 7), dead(9, 0, 8)];
  assert.deepEqual(defaultPlanContainers(units), [1, 0]);
});

const mixed = () => new GcCase().bytesToFree(250n * MI).image(
  new Image('busybox:1.36').usedMinutesAgo(10), new Image('nginx:1.25').usedMinutesAgo(500),
  new Image('app:v1').usedMinutesAgo(900).inUse(), new Image('pause:3.9').usedMinutesAgo(999).pinned(),
  new Image('fresh:1').seenMinutesAgo(1), new Image('redis:7').usedMinutesAgo(100));

test('the defaults use the host clock, through the base class, a bare class or the example', () => {
  for (const strategy of [new GcStrategy(), {}, new DefaultGc()]) {
    assert.deepEqual(mixed().planImageTags(strategy), ['nginx:1.25', 'redis:7', 'busybox:1.36']);
  }
  assert.deepEqual(new GcCase().image(new Image('busybox:1.36').usedMinutesAgo(10_000)).planImages(new GcStrategy()), []);
});

test('imageTags answers during planImages', () => {
  class KeepTagged extends GcStrategy {
    planImages(_disk, images) { return images.map((_, i) => i).filter((i) => !imageTags(i)[0].startsWith('keep/')); }
  }
  assert.deepEqual(new GcCase().image(new Image('keep/a:1'), new Image('drop/b:1')).planImageTags(new KeepTagged()), ['drop/b:1']);
  assert.deepEqual(imageTags(0), []);
});

test('gc-default example follows its config', () => {
  const c = new GcCase().deadContainer(0, 0, 5).deadContainer(0, 1, 10).deadContainer(0, 2, 15)
    .deadContainer(1, 0, 3).deadContainer(2, 0, 1).podDeleted(2);
  const gc = new DefaultGc();
  assert.deepEqual(c.planContainers(gc), [4, 2, 1]);
  assert.deepEqual(c.planContainers(new GcStrategy()), [4, 2, 1]);
  gc.configure('{"maxPerPodContainer": 2}');
  assert.deepEqual(c.planContainers(gc), [4, 2]);
  gc.configure('{"maxPerPodContainer": -1, "maxContainers": 1}');
  assert.deepEqual(c.planContainers(gc), [4, 2, 1, 0]);
  for (const bad of ['{"maxDead": 1}', '{"maxContainers": "1"}', '{"maxContainers": 1.5}']) {
    assert.throws(() => gc.configure(bad));
  }
  assert.deepEqual(DEFAULT_CONTAINER_GC_POLICY, { maxPerPodContainer: 1, maxContainers: -1 });
});

test('the world converts BigInt records and answers err on a throw', () => {
  const host = { log() {}, nowUnixMs: () => BigInt(NOW) };
  const podMeta = { podNamespace: () => '', podName: () => '', podUid: () => '', podLabel() {}, podAnnotation() {},
    imageTags: () => ['x:1'] };
  const w = gcWorld(DefaultGc, { host, podMeta });
  w.configure('');
  const d = { capacityBytes: 1000n, availableBytes: 100n, bytesToFree: 150n, minAgeMs: BigInt(2 * MIN), maxAgeMs: 0n };
  const imgs = [[10, 500], [20, 100], [5, 300], [1, 300]].map(([f, l]) =>
    ({ sizeBytes: 100n, firstSeenUnixMs: BigInt(f * MIN), lastUsedUnixMs: BigInt(l * MIN), inUse: false, pinned: false }));
  assert.deepEqual(w.planImages(d, imgs), Uint32Array.from([1, 3]));
  const deadList = [dead(0, 0, 30n), dead(0, 1, 20n)];
  assert.deepEqual(w.planContainers(deadList), Uint32Array.from([1]));
  assert.throws(() => w.configure('{"nope": 1}'), (e) => /unknown field `nope`/.test(e.payload));
  class Broken { planContainers() { throw new Error('no plan today'); } }
  const b = gcWorld(Broken, { host, podMeta });
  assert.throws(() => b.planContainers(deadList), (e) => e.payload === 'no plan today');
  assert.deepEqual(b.planImages(d, imgs), Uint32Array.from([1, 3]));
});
