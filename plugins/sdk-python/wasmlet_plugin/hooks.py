"""World lifecycle-hooks: subclass LifecycleHooks, then ``WitWorld = world(MyHooks)``."""

from . import _wasm
from .types import AdmissionContainer, AdmissionPod, QosClass


class LifecycleHooks:
    """Admission and container hooks; pod-meta index 0 is the pod concerned.
    Raise an exception to refuse (admit) or fail (post_start, pre_stop) with its
    message. ``pod`` reaches that pod only."""

    def configure(self, config: str) -> None:
        pass

    def self_check(self) -> None:
        pass

    def admit(self, pod: AdmissionPod) -> None:
        pass

    def post_start(self, container: str, pod) -> None:
        pass

    def pre_stop(self, container: str, grace_ms: int, pod) -> None:
        pass


def world(hooks_class):
    instance = _wasm.Instance(hooks_class, meta=True)

    class WitWorld:
        def configure(self, config):
            instance.configure(config)

        def self_check(self):
            instance.self_check()

        def admit(self, pod):
            p = AdmissionPod(pod.index, pod.priority, QosClass(pod.qos.value), pod.is_static, pod.is_critical,
                             [AdmissionContainer(c.name, c.is_init, c.has_cpu_request, c.has_memory_request,
                                                 c.has_cpu_limit, c.has_memory_limit) for c in pod.containers])
            instance.run(lambda: instance.get().admit(p))

        def post_start(self, container):
            instance.run(lambda: instance.get().post_start(container, _wasm.pod_access(False)))

        def pre_stop(self, container, grace_ms):
            instance.run(lambda: instance.get().pre_stop(container, grace_ms, _wasm.pod_access(False)))

    return WitWorld
