import unittest

from wasmlet_plugin.testing import EvictionCase, Pod

from app import @TYPE@


class RankTest(unittest.TestCase):
    def test_flappy_pods_go_first(self):
        case = EvictionCase().pod(
            Pod("default", "calm"),
            Pod("default", "flappy").restarts(9),
            Pod("kube-system", "static").static(),
        )
        self.assertEqual(case.rank_names(@TYPE@()), ["default/flappy", "default/calm"])


if __name__ == "__main__":
    unittest.main()
