"""Native tests of the gc-strategy world: the SDK's default plans (the cases of
plugins/policy-default/src/gc/tests.rs) and the gc_default example."""

import importlib.util
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from wasmlet_plugin import DeadContainer, DiskInfo, ImageInfo, image_tags  # noqa: E402
from wasmlet_plugin.gc import (ContainerGcPolicy, GcStrategy, default_plan_containers,  # noqa: E402
                               default_plan_images)
from wasmlet_plugin.testing import MI, GcCase, Image  # noqa: E402

spec = importlib.util.spec_from_file_location(
    "gc_default_app", os.path.join(os.path.dirname(HERE), "examples", "gc_default", "app.py"))
gc_app = importlib.util.module_from_spec(spec)
spec.loader.exec_module(gc_app)

MIN = 60_000
NOW = 1_000 * MIN


def image(size, first_seen, last_used, in_use=False, pinned=False):
    return ImageInfo(size, first_seen, last_used, in_use, pinned)


def disk(bytes_to_free, max_age_ms=0):
    return DiskInfo(1000, 100, bytes_to_free, 2 * MIN, max_age_ms)


def dead(unit, rank, finished, deleted=False):
    return DeadContainer(deleted, finished, rank, unit, unit)


class DefaultPlanImagesTest(unittest.TestCase):
    def test_least_recently_used_first_until_enough_is_freed(self):
        images = [image(100, 10 * MIN, 500 * MIN), image(100, 20 * MIN, 100 * MIN),
                  image(100, 5 * MIN, 300 * MIN), image(100, MIN, 300 * MIN)]
        self.assertEqual(default_plan_images(disk(150), images, NOW), [1, 3])
        self.assertEqual(default_plan_images(disk(10_000), images, NOW), [1, 3, 2, 0])
        self.assertEqual(default_plan_images(disk(0), images, NOW), [])

    def test_in_use_pinned_or_young_are_skipped(self):
        images = [image(100, 0, 0, in_use=True), image(100, 0, 0, pinned=True),
                  image(100, NOW - MIN, NOW - MIN), image(100, 0, 10)]
        self.assertEqual(default_plan_images(disk(10_000), images, NOW), [3])

    def test_past_max_age_go_whatever_the_disk(self):
        images = [image(10, 0, NOW - 10 * MIN), image(10, 0, NOW - 100 * MIN), image(10, 0, NOW - 3 * MIN)]
        self.assertEqual(default_plan_images(disk(0, 5 * MIN), images, NOW), [1, 0])
        # Old images count towards bytes-to-free.
        self.assertEqual(default_plan_images(disk(25, 5 * MIN), images, NOW), [1, 0, 2])

    def test_a_clock_behind_the_images_saturates(self):
        # first seen "in the future": age 0, younger than min-age.
        self.assertEqual(default_plan_images(disk(10_000), [image(1, NOW + MIN, NOW + MIN)], NOW), [])


class DefaultPlanContainersTest(unittest.TestCase):
    def test_keep_the_newest_per_unit_and_nothing_of_deleted_pods(self):
        dead_list = [dead(0, 0, 30), dead(0, 1, 20), dead(0, 2, 10), dead(1, 0, 40), dead(2, 0, 50, True)]
        self.assertEqual(default_plan_containers(dead_list), [4, 2, 1])

    def test_without_limits_only_deleted_pods_go(self):
        unlimited = ContainerGcPolicy(-1, -1)
        self.assertEqual(default_plan_containers([dead(0, 0, 30), dead(0, 1, 20)], unlimited), [])

    def test_over_the_node_limit_oldest_go_first(self):
        dead_list = [dead(0, 0, 60), dead(0, 1, 10), dead(1, 0, 50), dead(1, 1, 20), dead(2, 0, 40), dead(2, 1, 30)]
        self.assertEqual(default_plan_containers(dead_list, ContainerGcPolicy(5, 4)), [1, 3, 5])
        plan = default_plan_containers(dead_list, ContainerGcPolicy(-1, 1))
        self.assertEqual(plan[3:], [4, 2])


class GcWorldTest(unittest.TestCase):
    def test_base_class_defaults_use_the_host_clock(self):
        case = (GcCase().bytes_to_free(250 * MI)
                .image(Image("busybox:1.36").used_minutes_ago(10), Image("nginx:1.25").used_minutes_ago(500),
                       Image("app:v1").used_minutes_ago(900).in_use(),
                       Image("pause:3.9").used_minutes_ago(999).pinned(),
                       Image("fresh:1").seen_minutes_ago(1), Image("redis:7").used_minutes_ago(100)))
        self.assertEqual(case.plan_image_tags(GcStrategy()), ["nginx:1.25", "redis:7", "busybox:1.36"])
        self.assertEqual(case.plan_image_tags(gc_app.DefaultGc()), ["nginx:1.25", "redis:7", "busybox:1.36"])

    def test_nothing_to_free_plans_nothing(self):
        case = GcCase().image(Image("busybox:1.36").used_minutes_ago(10_000))
        self.assertEqual(case.plan_images(GcStrategy()), [])

    def test_image_tags_answer_during_plan_images(self):
        class KeepTagged(GcStrategy):
            def plan_images(self, disk, images):
                return [i for i in range(len(images)) if not image_tags(i)[0].startswith("keep/")]

        case = GcCase().image(Image("keep/a:1"), Image("drop/b:1"))
        self.assertEqual(case.plan_image_tags(KeepTagged()), ["drop/b:1"])
        # Outside a call, no tags.
        self.assertEqual(image_tags(0), [])

    def test_containers_and_config(self):
        case = (GcCase().dead_container(0, 0, 5).dead_container(0, 1, 10).dead_container(0, 2, 15)
                .dead_container(1, 0, 3).dead_container(2, 0, 1).pod_deleted(2))
        self.assertEqual(case.plan_containers(GcStrategy()), [4, 2, 1])
        gc = gc_app.DefaultGc()
        self.assertEqual(case.plan_containers(gc), [4, 2, 1])
        gc.configure('{"maxPerPodContainer": 2}')
        self.assertEqual(case.plan_containers(gc), [4, 2])
        gc.configure('{"maxPerPodContainer": -1, "maxContainers": 1}')
        self.assertEqual(case.plan_containers(gc), [4, 2, 1, 0])
        for bad in ['{"maxDead": 1}', '{"maxContainers": "1"}', '{"maxContainers": 1.5}']:
            with self.assertRaises(ValueError):
                gc.configure(bad)

    def test_the_harness_checks_answers_as_the_host(self):
        class Bad(GcStrategy):
            def plan_images(self, disk, images):
                return [0, 0]

        with self.assertRaises(ValueError):
            GcCase().image(Image("a:1")).plan_image_tags(Bad())
        with self.assertRaises(ValueError):
            GcCase().image(Image("a:1").in_use()).plan_image_tags(type("P", (GcStrategy,), {
                "plan_images": lambda self, d, i: [0]})())


if __name__ == "__main__":
    unittest.main()
