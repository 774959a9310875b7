"""World eviction-policy: subclass EvictionPolicy, then ``WitWorld = world(MyPolicy)``."""

from typing import List, Sequence

from . import _wasm
from .types import NodeInfo, PodInfo, Signal, SignalObservation
from .packed import unpack_pods


class EvictionPolicy:
    """Ranks the active pods for eviction: indices into ``pods``, most evictable
    first. Raise an exception to answer err(reason): the host then ranks with its
    built-in default. ``configure`` gets the plugin config as JSON text."""

    def configure(self, config: str) -> None:
        pass

    def self_check(self) -> None:
        pass

    def rank(self, node: NodeInfo, pressure: Sequence[SignalObservation], pods: Sequence[PodInfo]) -> List[int]:
        raise NotImplementedError


def world(policy_class):
    """The class componentize-py exports (name it ``WitWorld`` in the app module).
    One plugin instance lives as long as the component instance."""

    instance = _wasm.Instance(policy_class, meta=True)

    class WitWorld:
        def configure(self, config: str) -> None:
            instance.configure(config)

        def self_check(self) -> None:
            instance.self_check()

        def rank(self, node, pressure, pods):
            def rank():
                n = NodeInfo(
                    node.memory_capacity_bytes, node.memory_allocatable_bytes,
                    node.cpu_capacity_millis, node.cpu_allocatable_millis, node.pods_capacity,
                    node.pod_count, node.pid_capacity, node.nodefs_capacity_bytes,
                    node.imagefs_capacity_bytes)
                obs = [SignalObservation(Signal(o.signal.value), o.available, o.capacity, o.threshold)
                       for o in pressure]
                return list(instance.get().rank(n, obs, unpack_pods(pods)))
            return instance.run(rank)

    return WitWorld
