import unittest

from wasmlet_plugin.testing import MI, GcCase, Image

from app import @TYPE@


class PlanTest(unittest.TestCase):
    def test_least_recently_used_images_first(self):
        case = GcCase().bytes_to_free(150 * MI).image(
            Image("recent:1").used_minutes_ago(10),
            Image("old:1").used_minutes_ago(300),
            Image("running:1").used_minutes_ago(900).in_use(),
        )
        self.assertEqual(case.plan_image_tags(@TYPE@()), ["old:1", "recent:1"])

    def test_the_newest_dead_container_of_each_container_stays(self):
        case = GcCase().dead_container(0, 0, 5).dead_container(0, 1, 10).dead_container(1, 0, 1).pod_deleted(1)
        self.assertEqual(case.plan_containers(@TYPE@()), [1, 2])


if __name__ == "__main__":
    unittest.main()
