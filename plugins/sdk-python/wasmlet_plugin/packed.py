"""The wire form of rank's pod list (wit/types.wit, pod-info): 11 u64 words per
pod, the same layout as wasmlet_policy_default::packed in Rust."""

from typing import List, Sequence

from .types import PodInfo, QosClass

POD_WORDS = 11
_M32 = 0xFFFF_FFFF


def _flag(word: int, shift: int, name: str, i: int) -> bool:
    b = (word >> shift) & 0xFF
    if b > 1:
        raise ValueError(f"pod {i} has {name} {b} (not 0 or 1)")
    return b == 1


def unpack_pods(words: Sequence[int]) -> List[PodInfo]:
    """Decodes rank's pod list; a malformed list is a ValueError naming the pod."""
    if len(words) % POD_WORDS:
        raise ValueError(f"pod list of {len(words)} words is not a multiple of {POD_WORDS}")
    pods = []
    for i in range(len(words) // POD_WORDS):
        w = words[i * POD_WORDS:(i + 1) * POD_WORDS]
        w0 = w[0]
        qos = (w0 >> 32) & 0xFF
        if qos > 2:
            raise ValueError(f"pod {i} has unknown qos {qos}")
        prio = w0 & _M32
        pods.append(PodInfo(
            priority=prio - (1 << 32) if prio >= 1 << 31 else prio,
            qos=QosClass(qos),
            is_static=_flag(w0, 40, "is-static", i),
            is_critical=_flag(w0, 48, "is-critical", i),
            has_stats=_flag(w0, 56, "has-stats", i),
            memory_request_bytes=w[1], memory_usage_bytes=w[2],
            cpu_request_millis=w[3], cpu_usage_millis=w[4],
            disk_request_bytes=w[5], disk_usage_bytes=w[6],
            inodes_used=w[7], process_count=w[8],
            container_count=w[9] & _M32, restart_count=w[9] >> 32,
            start_time_unix_ms=w[10],
        ))
    return pods


def pack_pods(pods: Sequence[PodInfo]) -> List[int]:
    out: List[int] = []
    for p in pods:
        out += [
            (p.priority & _M32) | int(p.qos) << 32 | int(p.is_static) << 40
            | int(p.is_critical) << 48 | int(p.has_stats) << 56,
            p.memory_request_bytes, p.memory_usage_bytes, p.cpu_request_millis,
            p.cpu_usage_millis, p.disk_request_bytes, p.disk_usage_bytes,
            p.inodes_used, p.process_count,
            p.container_count | p.restart_count << 32, p.start_time_unix_ms,
        ]
    return out
