"""World gc-strategy: subclass GcStrategy, then ``WitWorld = world(MyStrategy)``.

The base class's plans are upstream's image and container GC order, the same
code as the Rust SDK's ``defaults::gc`` (plugins/policy-default/src/gc.rs) and
the host's built-in default: override ``plan_images`` or ``plan_containers`` to
change one, and call the ``default_*`` functions here to build on them.
"""

from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence

from . import _wasm
from .host import now_unix_ms
from .types import DeadContainer, DiskInfo, ImageInfo


@dataclass
class ContainerGcPolicy:
    """The container GC limits (upstream ``kubecontainer.GCPolicy``; the host applies
    the age limit and passes only containers old enough)."""
    #: ``--maximum-dead-containers-per-container`` (default 1); negative = no limit.
    max_per_pod_container: int = 1
    #: ``--maximum-dead-containers`` (default -1); negative = no limit.
    max_containers: int = -1


def is_candidate(disk: DiskInfo, image: ImageInfo, now_ms: int) -> bool:
    """Whether an image may be collected at all: not in use, not pinned, and first
    seen at least ``disk.min_age_ms`` before ``now_ms``."""
    return (not image.in_use and not image.pinned
            and max(0, now_ms - image.first_seen_unix_ms) >= disk.min_age_ms)


def take_until_freed(disk: DiskInfo, images: Sequence[ImageInfo], candidates: Sequence[int],
                     now_ms: int) -> List[int]:
    """From ``candidates`` in the order to delete them: every one unused for longer
    than ``disk.max_age_ms`` (when set; upstream ``freeOldImages``), then further
    ones until ``disk.bytes_to_free`` is reached (upstream ``freeSpace``)."""
    plan: List[int] = []
    freed = 0
    rest = list(candidates)
    if disk.max_age_ms > 0:
        young = []
        for i in rest:
            if max(0, now_ms - images[i].last_used_unix_ms) > disk.max_age_ms:
                plan.append(i)
                freed += images[i].size_bytes
            else:
                young.append(i)
        rest = young
    for i in rest:
        if freed >= disk.bytes_to_free:
            break
        plan.append(i)
        freed += images[i].size_bytes
    return plan


def default_plan_images(disk: DiskInfo, images: Sequence[ImageInfo], now_ms: int) -> List[int]:
    """Upstream's image GC cycle: the images to delete, in order.

    Candidates (``is_candidate``) in least-recently-used order (last used, then
    first seen; upstream ``byLastUsedAndDetected``), then ``take_until_freed``.
    When they cannot free enough, all are planned and the host reports
    ``FreeDiskSpaceFailed``."""
    candidates = [i for i, image in enumerate(images) if is_candidate(disk, image, now_ms)]
    candidates.sort(key=lambda i: (images[i].last_used_unix_ms, images[i].first_seen_unix_ms))
    return take_until_freed(disk, images, candidates, now_ms)


def _keep_newest(units: Dict[int, List[int]], keep: int, plan: List[int]) -> None:
    """Moves all but the first ``keep`` members of each unit into ``plan``, oldest
    first (upstream ``removeOldestN``)."""
    for unit in sorted(units):
        members = units[unit]
        if len(members) > keep:
            plan.extend(reversed(members[keep:]))
            del members[keep:]


def default_plan_containers(dead: Sequence[DeadContainer],
                            policy: Optional[ContainerGcPolicy] = None) -> List[int]:
    """Upstream's container GC cycle (``evictContainers``): the dead containers to
    remove, in order.

    Every container of a deleted pod; then, per evict unit, all but the newest
    ``max_per_pod_container``; then, if more than ``max_containers`` remain, an
    equal share per unit (at least one) and finally the oldest node-wide.
    "Newest" within a unit follows ``per_container_rank``, node-wide
    ``finished_unix_ms``. ``policy`` defaults to upstream's flag defaults."""
    policy = policy or ContainerGcPolicy()
    plan: List[int] = []
    units: Dict[int, List[int]] = {}
    for i, c in enumerate(dead):
        if c.pod_deleted:
            plan.append(i)
        else:
            units.setdefault(c.unit, []).append(i)
    for members in units.values():
        members.sort(key=lambda i: (dead[i].per_container_rank, -dead[i].finished_unix_ms))

    if policy.max_per_pod_container >= 0:
        _keep_newest(units, policy.max_per_pod_container, plan)
    if policy.max_containers >= 0:
        limit = policy.max_containers
        remaining = sum(len(m) for m in units.values())
        if remaining > limit:
            per_unit = max(limit // max(len(units), 1), 1)
            _keep_newest(units, per_unit, plan)
            flat = [i for unit in sorted(units) for i in units[unit]]
            if len(flat) > limit:
                # Oldest first; ties by index for determinism.
                flat.sort(key=lambda i: (dead[i].finished_unix_ms, i))
                plan.extend(flat[:len(flat) - limit])
    return plan


class GcStrategy:
    """Plans image and dead-container GC: indices into the lists, in the order to
    delete. Raise an exception to answer err(reason): the host then plans this
    cycle with its built-in default. ``configure`` gets the plugin config as
    JSON text. During ``plan_images``, ``wasmlet_plugin.image_tags(i)`` gives
    image i's tags; during ``plan_containers``, the pod-meta functions answer
    for ``DeadContainer.pod``."""

    def configure(self, config: str) -> None:
        pass

    def self_check(self) -> None:
        pass

    def plan_images(self, disk: DiskInfo, images: Sequence[ImageInfo]) -> List[int]:
        """Default: upstream least-recently-used, by the host's clock."""
        return default_plan_images(disk, images, now_unix_ms())

    def plan_containers(self, dead: Sequence[DeadContainer]) -> List[int]:
        """Default: upstream with its default flags."""
        return default_plan_containers(dead, ContainerGcPolicy())


def world(strategy_class):
    """The class componentize-py exports (name it ``WitWorld`` in the app module).
    One plugin instance lives as long as the component instance."""

    instance = _wasm.Instance(strategy_class, meta=True)

    class WitWorld:
        def configure(self, config: str) -> None:
            instance.configure(config)

        def self_check(self) -> None:
            instance.self_check()

        def plan_images(self, disk, images):
            def plan():
                d = DiskInfo(disk.capacity_bytes, disk.available_bytes, disk.bytes_to_free,
                             disk.min_age_ms, disk.max_age_ms)
                infos = [ImageInfo(i.size_bytes, i.first_seen_unix_ms, i.last_used_unix_ms,
                                   bool(i.in_use), bool(i.pinned)) for i in images]
                return [int(i) for i in instance.get().plan_images(d, infos)]
            return instance.run(plan)

        def plan_containers(self, dead):
            def plan():
                infos = [DeadContainer(bool(c.pod_deleted), c.finished_unix_ms, c.per_container_rank,
                                       c.unit, c.pod) for c in dead]
                return [int(i) for i in instance.get().plan_containers(infos)]
            return instance.run(plan)

    return WitWorld
