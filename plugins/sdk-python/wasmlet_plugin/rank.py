"""Upstream eviction ranking (pkg/kubelet/eviction/helpers.go), the same order
as the Rust SDK's defaults::eviction::rank and the host's built-in default.

memory, disk, inodes: no stats first, usage above request first, priority
ascending, usage minus request descending. PID: priority ascending, no stats
first, process count descending. Ties keep the input order."""

from typing import List, Sequence

from .types import PodInfo, Pressure, SignalObservation


def _key(kind: Pressure, p: PodInfo):
    if kind == Pressure.PID:
        return (p.priority, p.has_stats, -p.process_count)
    if kind == Pressure.DISK:
        usage, request = p.disk_usage_bytes, p.disk_request_bytes
    elif kind == Pressure.INODES:
        usage, request = p.inodes_used, 0
    else:
        usage, request = p.memory_usage_bytes, p.memory_request_bytes
    if not p.has_stats:
        # Without stats the usage keys compare equal: only priority orders them.
        return (False, False, p.priority, 0)
    return (True, usage <= request, p.priority, request - usage)


def compare(kind: Pressure, a: PodInfo, b: PodInfo) -> int:
    ka, kb = _key(kind, a), _key(kind, b)
    return (ka > kb) - (ka < kb)


def default_rank(pressure: Sequence[SignalObservation], pods: Sequence[PodInfo]) -> List[int]:
    """Most evictable first, without critical and static pods."""
    kind = pressure[0].signal.pressure() if pressure else Pressure.MEMORY
    order = sorted(range(len(pods)), key=lambda i: _key(kind, pods[i]))
    return [i for i in order if pods[i].is_evictable()]
