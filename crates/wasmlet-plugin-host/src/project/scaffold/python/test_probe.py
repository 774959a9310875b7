import unittest

from wasmlet_plugin import ProbeOutcome
from wasmlet_plugin.testing import MockPod, probe_request

from app import @TYPE@


class CheckTest(unittest.TestCase):
    def test_healthz(self):
        pod = MockPod()
        self.assertEqual(@TYPE@().check(probe_request("", 8080), pod).outcome, ProbeOutcome.FAILURE)
        pod.serve(8080, "/healthz", 200, "ok")
        self.assertEqual(@TYPE@().check(probe_request("", 8080), pod).outcome, ProbeOutcome.SUCCESS)


if __name__ == "__main__":
    unittest.main()
