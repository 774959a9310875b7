import unittest

from wasmlet_plugin import AdmissionContainer, AdmissionPod, QosClass

from app import @TYPE@


def pod(*containers):
    return AdmissionPod(0, 0, QosClass.BURSTABLE, False, False, list(containers))


class AdmitTest(unittest.TestCase):
    def test_memory_limit_required(self):
        limited = AdmissionContainer("app", False, True, True, True, True)
        @TYPE@().admit(pod(limited))
        with self.assertRaises(ValueError):
            @TYPE@().admit(pod(limited, AdmissionContainer("sidecar", False, True, True, True, False)))


if __name__ == "__main__":
    unittest.main()
