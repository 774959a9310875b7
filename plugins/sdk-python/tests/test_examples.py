"""Native tests of the SDK and its examples (python3 -m unittest discover -s plugins/sdk-python/tests)."""

import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.dirname(HERE), os.path.join(os.path.dirname(HERE), "examples", "eviction_batch_first")]

from wasmlet_plugin import PodInfo, ProbeOutcome, QosClass, pack_pods, unpack_pods  # noqa: E402
from wasmlet_plugin.testing import MI, EvictionCase, MockPod, Pod, probe_request  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(HERE), "examples", "probe_json_health"))
import importlib.util  # noqa: E402


def _load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


EX = os.path.join(os.path.dirname(HERE), "examples")
batch = _load("batch_app", os.path.join(EX, "eviction_batch_first", "app.py"))
health = _load("health_app", os.path.join(EX, "probe_json_health", "app.py"))


def policy(config):
    p = batch.BatchFirst()
    p.configure(config)
    return p


def case():
    return EvictionCase().pod(
        Pod("web", "frontend").memory(0, 800 * MI),
        Pod("jobs", "report").memory(0, 100 * MI).label("workload-class", "batch"),
        Pod("infra", "dns").memory(0, 900 * MI),
        Pod("jobs", "etl").memory(0, 300 * MI).label("workload-class", "batch"),
        Pod("jobs", "service").memory(0, 50 * MI).label("workload-class", "service"),
    )


class BatchFirstTest(unittest.TestCase):
    def test_batch_first_then_rest_without_protected(self):
        self.assertEqual(case().rank_names(policy('{"protectNamespaces": ["infra"]}')),
                         ["jobs/etl", "jobs/report", "web/frontend", "jobs/service"])

    def test_no_config_is_upstream_with_batch_first(self):
        self.assertEqual(case().rank_names(policy("")),
                         ["jobs/etl", "jobs/report", "infra/dns", "web/frontend", "jobs/service"])

    def test_critical_and_static_are_left_out(self):
        c = case().pod(Pod("kube-system", "etcd").static().label("workload-class", "batch"),
                       Pod("kube-system", "dns").critical())
        self.assertEqual(len(c.rank_names(policy(""))), 5)

    def test_bad_config_is_refused(self):
        for config in ('{"protectNamespaces": "kube-system"}', '{"batchLabel": ""}', '{"protect": 1}'):
            with self.assertRaises(ValueError):
                batch.BatchFirst().configure(config)


class PackedTest(unittest.TestCase):
    def test_round_trip_and_refusals(self):
        pods = [PodInfo(priority=-5, qos=QosClass.GUARANTEED, is_static=True, has_stats=True,
                        memory_request_bytes=1, container_count=2**32 - 1, restart_count=9,
                        start_time_unix_ms=2**64 - 1),
                PodInfo(priority=2_000_000_000, is_critical=True)]
        self.assertEqual(unpack_pods(pack_pods(pods)), pods)
        with self.assertRaises(ValueError):
            unpack_pods([7 << 32] + [0] * 10)
        with self.assertRaises(ValueError):
            unpack_pods([0] * 12)


class JsonHealthTest(unittest.TestCase):
    def check(self, args, pod, *ports):
        return health.JsonHealth().check(probe_request(args, *ports), pod)

    def test_healthy(self):
        pod = MockPod().serve(8080, "/health", 200, '{"status":"ok"}')
        self.assertEqual(self.check("", pod).outcome, ProbeOutcome.SUCCESS)
        self.assertEqual(pod.calls, ["GET 8080 /health"])

    def test_wrong_missing_bad_status(self):
        pod = (MockPod().serve(8080, "/health", 200, '{"status":"degraded"}')
               .serve(8080, "/empty", 200, "{}").serve(8080, "/down", 503, '{"status":"ok"}'))
        r = self.check("", pod)
        self.assertEqual((r.outcome, r.message), (ProbeOutcome.FAILURE, 'status is "degraded", expected "ok"'))
        self.assertEqual(self.check('{"path": "/empty"}', pod).outcome, ProbeOutcome.FAILURE)
        self.assertIn("HTTP 503", self.check('{"path": "/down"}', pod).message)

    def test_not_json_unknown_and_refused_fails(self):
        self.assertEqual(self.check("", MockPod().serve(8080, "/health", 200, "OK")).outcome, ProbeOutcome.UNKNOWN)
        self.assertIn("connection refused", self.check("", MockPod()).message)

    def test_numbers_compare_as_in_rust(self):
        pod = MockPod().serve(8080, "/health", 200, '{"n": 1, "f": 1.0}')
        self.assertEqual(self.check('{"field": "n", "expected": 1}', pod).outcome, ProbeOutcome.SUCCESS)
        self.assertEqual(self.check('{"field": "n", "expected": 1.0}', pod).outcome, ProbeOutcome.FAILURE)

    def test_bad_args_or_ambiguous_port(self):
        pod = MockPod()
        self.assertTrue(self.check('{"prot": 1}', pod).message.startswith("invalid probe args"))
        self.assertIn('need a "port"', self.check("", pod, 8080, 9090).message)
        self.assertEqual(pod.calls, [])



class RequireLimitsTest(unittest.TestCase):
    def test_only_chosen_namespaces_need_limits(self):
        from wasmlet_plugin import AdmissionContainer, AdmissionPod, use_meta
        from wasmlet_plugin.testing import PodMeta, Snapshot
        limits = _load("limits_app", os.path.join(EX, "admission_require_limits", "app.py"))
        r = limits.RequireLimits()
        r.configure('{"namespaces": ["prod"]}')
        full = AdmissionContainer("app", has_cpu_limit=True, has_memory_limit=True)
        init = AdmissionContainer("init", is_init=True, has_cpu_limit=True)
        for namespace, containers, refused in (("dev", [init], False), ("prod", [full], False), ("prod", [full, init], True)):
            old = use_meta(Snapshot([PodMeta(namespace, "p")]))
            try:
                if refused:
                    with self.assertRaisesRegex(ValueError, 'container "init" has no memory limit'):
                        r.admit(AdmissionPod(containers=containers))
                else:
                    r.admit(AdmissionPod(containers=containers))
            finally:
                use_meta(old)


if __name__ == "__main__":
    unittest.main()
