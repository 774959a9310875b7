"""Runs a plugin's logic natively (pytest, unittest), the way the host calls the
component: pods go through the packed wire form, pod-meta answers from the
case, answers are checked as the host checks them."""

from dataclasses import dataclass, field, replace
from typing import Dict, List, Optional

from . import host as _host
from .packed import pack_pods, unpack_pods
from .types import (DeadContainer, DiskInfo, HttpResponse, ExecOutput, ImageInfo, NodeInfo, PodInfo,
                    Pressure, ProbeRequest, QosClass, Signal, SignalObservation)

MI = 1 << 20
GI = 1 << 30
MINUTE_MS = 60_000
NOW_MS = 1_700_000_000_000


@dataclass
class PodMeta:
    namespace: str
    name: str
    uid: str = ""
    labels: Dict[str, str] = field(default_factory=dict)
    annotations: Dict[str, str] = field(default_factory=dict)

    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


class Pod:
    """A running best-effort pod with stats, one container, priority 0, no usage."""

    def __init__(self, namespace: str, name: str):
        self.info = PodInfo(has_stats=True, container_count=1, start_time_unix_ms=NOW_MS - 60 * MINUTE_MS)
        self.meta = PodMeta(namespace, name, f"{namespace}-{name}")

    def priority(self, p): self.info.priority = p; return self
    def critical(self): self.info.is_critical = True; self.info.priority = max(self.info.priority, 2_000_000_000); return self
    def static(self): self.info.is_static = self.info.is_critical = True; return self
    def no_stats(self): self.info.has_stats = False; return self
    def disk(self, request, usage): self.info.disk_request_bytes, self.info.disk_usage_bytes = request, usage; return self
    def inodes(self, used): self.info.inodes_used = used; return self
    def processes(self, n): self.info.process_count = n; return self
    def restarts(self, n): self.info.restart_count = n; return self
    def label(self, k, v): self.meta.labels[k] = v; return self
    def annotation(self, k, v): self.meta.annotations[k] = v; return self

    def memory(self, request, usage):
        self.info.memory_request_bytes, self.info.memory_usage_bytes = request, usage
        if request and self.info.qos == QosClass.BEST_EFFORT:
            self.info.qos = QosClass.BURSTABLE
        return self


class Snapshot:
    """Answers pod-meta from a list of PodMeta (and image tags)."""

    def __init__(self, pods: List[PodMeta], tags: Optional[List[List[str]]] = None):
        self.pods, self.tags = pods, tags or []

    def _pod(self, i):
        return self.pods[i] if 0 <= i < len(self.pods) else PodMeta("", "")

    def pod_namespace(self, i): return self._pod(i).namespace
    def pod_name(self, i): return self._pod(i).name
    def pod_uid(self, i): return self._pod(i).uid
    def pod_label(self, i, k): return self._pod(i).labels.get(k)
    def pod_annotation(self, i, k): return self._pod(i).annotations.get(k)
    def image_tags(self, i): return list(self.tags[i]) if 0 <= i < len(self.tags) else []


def check_indices(answer, n, what):
    seen = set()
    for i in answer:
        if not 0 <= i < n:
            raise ValueError(f"{what} index {i} out of range ({n} {what}s)")
        if i in seen:
            raise ValueError(f"{what} index {i} listed twice")
        seen.add(i)


class EvictionCase:
    """A 4-core, 8 GiB, 110-pod node with ``signal``'s threshold met."""

    def __init__(self, signal: Signal = Signal.MEMORY_AVAILABLE):
        kind = signal.pressure()
        if kind == Pressure.MEMORY:
            a, c, t = 50 * MI, 8 * GI, 100 * MI
        elif kind == Pressure.PID:
            a, c, t = 1_000, 32_768, 3_276
        elif kind == Pressure.DISK:
            a, c, t = 5 * GI, 100 * GI, 10 * GI
        else:
            a, c, t = 10_000, 6_000_000, 300_000
        self.node = NodeInfo(8 * GI, 8 * GI - 256 * MI, 4000, 3900, 110, 0, 32_768, 100 * GI, 0)
        self.pressure = [SignalObservation(signal, a, c, t)]
        self.pods: List[Pod] = []

    def pod(self, *pods: Pod) -> "EvictionCase":
        self.pods += pods
        return self

    def rank(self, policy) -> List[int]:
        node = replace(self.node, pod_count=len(self.pods))
        infos = unpack_pods(pack_pods([p.info for p in self.pods]))
        old = _host.use_meta(Snapshot([p.meta for p in self.pods]))
        try:
            return list(policy.rank(node, self.pressure, infos))
        finally:
            _host.use_meta(old)

    def rank_names(self, policy) -> List[str]:
        answer = self.rank(policy)
        check_indices(answer, len(self.pods), "pod")
        names = []
        for i in answer:
            p = self.pods[i]
            if not p.info.is_evictable():
                raise ValueError(f"proposes critical or static pod {p.meta.key()}")
            names.append(p.meta.key())
        return names


class _FixedClock:
    """The host's clock stopped at ``now``; logs go to the host it replaces."""

    def __init__(self, now, inner):
        self.now, self.inner = now, inner

    def log(self, level, message, fields):
        self.inner.log(level, message, fields)

    def now_unix_ms(self):
        return self.now


class Image:
    """An image for a GcCase: unused, unpinned, 100 MiB, first seen a day and last
    used an hour before NOW_MS."""

    def __init__(self, tag: str):
        self.info = ImageInfo(100 * MI, NOW_MS - 24 * 60 * MINUTE_MS, NOW_MS - 60 * MINUTE_MS)
        self.tags = [tag]

    def tag(self, tag): self.tags.append(tag); return self
    def size(self, size_bytes): self.info.size_bytes = size_bytes; return self
    def in_use(self): self.info.in_use = True; return self
    def pinned(self): self.info.pinned = True; return self

    def used_minutes_ago(self, minutes):
        """Last used ``minutes`` before NOW_MS (and first seen no later)."""
        self.info.last_used_unix_ms = NOW_MS - minutes * MINUTE_MS
        self.info.first_seen_unix_ms = min(self.info.first_seen_unix_ms, self.info.last_used_unix_ms)
        return self

    def seen_minutes_ago(self, minutes):
        """First seen (pulled) ``minutes`` before NOW_MS, and not used since."""
        self.info.first_seen_unix_ms = self.info.last_used_unix_ms = NOW_MS - minutes * MINUTE_MS
        return self


class GcCase:
    """One GC cycle: a 100 GiB image filesystem with 50 GiB free, nothing to free,
    upstream's 2 minute minimum image age; images and dead containers added.
    The host's clock reads NOW_MS during the calls."""

    def __init__(self):
        self.disk = DiskInfo(100 * GI, 50 * GI, 0, 2 * MINUTE_MS, 0)
        self.images: List[Image] = []
        self.dead: List[DeadContainer] = []
        self.pods: List[PodMeta] = []

    def bytes_to_free(self, n):
        self.disk.bytes_to_free = n
        self.disk.available_bytes = max(0, self.disk.available_bytes - n)
        return self

    def image(self, *images: Image) -> "GcCase":
        self.images += images
        return self

    def dead_container(self, unit: int, rank: int, minutes: int) -> "GcCase":
        """Dead container ``rank`` (0 = newest) of evict unit ``unit``, finished
        ``minutes`` ago; its pod index is ``unit``."""
        self.dead.append(DeadContainer(False, NOW_MS - minutes * MINUTE_MS, rank, unit, unit))
        return self

    def pod_deleted(self, unit: int) -> "GcCase":
        for d in self.dead:
            if d.unit == unit:
                d.pod_deleted = True
        return self

    def _call(self, f, tags):
        old_meta = _host.use_meta(Snapshot(self.pods, tags))
        old_host = _host.use_host(_FixedClock(NOW_MS, _host._host))
        try:
            return [int(i) for i in f()]
        finally:
            _host.use_host(old_host)
            _host.use_meta(old_meta)

    def plan_images(self, strategy) -> List[int]:
        """Calls ``strategy.plan_images`` as the host would; the raw answer."""
        infos = [replace(i.info) for i in self.images]
        return self._call(lambda: strategy.plan_images(replace(self.disk), infos),
                          [i.tags for i in self.images])

    def plan_image_tags(self, strategy) -> List[str]:
        """plan_images checked as the host checks it (range, duplicates, never an
        image in use or pinned); each planned image's first tag."""
        answer = self.plan_images(strategy)
        check_indices(answer, len(self.images), "image")
        tags = []
        for i in answer:
            image = self.images[i]
            if image.info.in_use or image.info.pinned:
                raise ValueError(f"plans image {image.tags[0]} which is in use or pinned")
            tags.append(image.tags[0])
        return tags

    def plan_containers(self, strategy) -> List[int]:
        """Calls ``strategy.plan_containers`` as the host would, indices checked."""
        dead = [replace(d) for d in self.dead]
        answer = self._call(lambda: strategy.plan_containers(dead), [])
        check_indices(answer, len(self.dead), "dead container")
        return answer


class MockPod:
    """PodAccess from canned answers, recording calls; unknown targets refuse."""

    def __init__(self, in_probe: bool = True):
        self.http: Dict[str, HttpResponse] = {}
        self.errors: Dict[str, str] = {}
        self.calls: List[str] = []
        self.in_probe = in_probe

    def serve(self, port, path, status, body):
        self.http[f"{port} {path}"] = HttpResponse(status, [], body.encode() if isinstance(body, str) else body)
        return self

    def fail(self, port, path, error):
        self.errors[f"{port} {path}"] = error
        return self

    def http_get(self, port, path, headers=(), timeout_ms=1000):
        key = f"{port} {path}"
        self.calls.append(f"GET {key}")
        if key in self.errors:
            raise ConnectionError(self.errors[key])
        if key in self.http:
            return self.http[key]
        raise ConnectionError("connection refused")

    def tcp_connect(self, port, timeout_ms=1000):
        self.calls.append(f"TCP {port}")
        raise ConnectionError("connection refused")

    def exec(self, container, command, timeout_ms=1000):
        self.calls.append(f"EXEC {container} {' '.join(command)}")
        raise RuntimeError(f"container {container!r} not found")

    def sleep(self, ms):
        self.calls.append(f"SLEEP {ms}")
        if self.in_probe:
            raise RuntimeError("sleep is for hooks: a probe returns and lets the next period run")


def probe_request(args: str = "", *ports: int) -> ProbeRequest:
    return ProbeRequest(args=args, ports=list(ports) or [8080])
