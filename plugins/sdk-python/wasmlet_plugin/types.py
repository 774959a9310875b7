"""Plain mirrors of the records of wit/types.wit, field names in snake case."""

from dataclasses import dataclass, field
from enum import IntEnum
from typing import List, Tuple

__all__ = [
    "QosClass", "PodInfo", "NodeInfo", "Signal", "Pressure", "SignalObservation",
    "ImageInfo", "DiskInfo", "DeadContainer", "HttpResponse", "ExecOutput", "ProbeKind",
    "ProbeRequest", "ProbeOutcome", "ProbeResult", "AdmissionContainer", "AdmissionPod",
]


class QosClass(IntEnum):
    GUARANTEED = 0
    BURSTABLE = 1
    BEST_EFFORT = 2


@dataclass
class PodInfo:
    """One active pod in an eviction cycle (types.pod-info)."""
    priority: int = 0
    qos: QosClass = QosClass.BEST_EFFORT
    is_static: bool = False
    is_critical: bool = False
    has_stats: bool = False
    memory_request_bytes: int = 0
    memory_usage_bytes: int = 0
    cpu_request_millis: int = 0
    cpu_usage_millis: int = 0
    disk_request_bytes: int = 0
    disk_usage_bytes: int = 0
    inodes_used: int = 0
    process_count: int = 0
    container_count: int = 0
    restart_count: int = 0
    start_time_unix_ms: int = 0

    def is_evictable(self) -> bool:
        """Upstream never evicts a critical pod, and static pods count as critical."""
        return not self.is_critical and not self.is_static


@dataclass
class NodeInfo:
    memory_capacity_bytes: int = 0
    memory_allocatable_bytes: int = 0
    cpu_capacity_millis: int = 0
    cpu_allocatable_millis: int = 0
    pods_capacity: int = 110
    pod_count: int = 0
    pid_capacity: int = 0
    nodefs_capacity_bytes: int = 0
    imagefs_capacity_bytes: int = 0


class Pressure(IntEnum):
    """The resource a signal starves (upstream signalToRankFunc)."""
    MEMORY = 0
    PID = 1
    DISK = 2
    INODES = 3


class Signal(IntEnum):
    """Upstream eviction signals, in WIT order."""
    MEMORY_AVAILABLE = 0
    ALLOCATABLE_MEMORY_AVAILABLE = 1
    NODEFS_AVAILABLE = 2
    NODEFS_INODES_FREE = 3
    IMAGEFS_AVAILABLE = 4
    IMAGEFS_INODES_FREE = 5
    CONTAINERFS_AVAILABLE = 6
    CONTAINERFS_INODES_FREE = 7
    PID_AVAILABLE = 8

    def pressure(self) -> Pressure:
        if self in (Signal.MEMORY_AVAILABLE, Signal.ALLOCATABLE_MEMORY_AVAILABLE):
            return Pressure.MEMORY
        if self == Signal.PID_AVAILABLE:
            return Pressure.PID
        if self in (Signal.NODEFS_INODES_FREE, Signal.IMAGEFS_INODES_FREE, Signal.CONTAINERFS_INODES_FREE):
            return Pressure.INODES
        return Pressure.DISK


@dataclass
class SignalObservation:
    signal: Signal
    available: int
    capacity: int
    threshold: int


@dataclass
class ImageInfo:
    size_bytes: int = 0
    first_seen_unix_ms: int = 0
    last_used_unix_ms: int = 0
    in_use: bool = False
    pinned: bool = False


@dataclass
class DiskInfo:
    capacity_bytes: int = 0
    available_bytes: int = 0
    bytes_to_free: int = 0
    min_age_ms: int = 0
    max_age_ms: int = 0


@dataclass
class DeadContainer:
    pod_deleted: bool = False
    finished_unix_ms: int = 0
    per_container_rank: int = 0
    unit: int = 0
    pod: int = 0


@dataclass
class HttpResponse:
    status: int
    headers: List[Tuple[str, str]] = field(default_factory=list)
    body: bytes = b""


@dataclass
class ExecOutput:
    exit_code: int
    stdout: bytes = b""
    stderr: bytes = b""


class ProbeKind(IntEnum):
    LIVENESS = 0
    READINESS = 1
    STARTUP = 2


@dataclass
class ProbeRequest:
    args: str = ""
    timeout_ms: int = 1000
    pod_ip: str = "10.0.0.7"
    ports: List[int] = field(default_factory=lambda: [8080])
    containers: List[str] = field(default_factory=lambda: ["app"])
    container: str = "app"
    kind: ProbeKind = ProbeKind.READINESS


class ProbeOutcome(IntEnum):
    SUCCESS = 0
    FAILURE = 1
    UNKNOWN = 2


@dataclass
class ProbeResult:
    outcome: ProbeOutcome
    message: str = ""

    @staticmethod
    def success(message: str) -> "ProbeResult":
        return ProbeResult(ProbeOutcome.SUCCESS, message)

    @staticmethod
    def failure(message: str) -> "ProbeResult":
        return ProbeResult(ProbeOutcome.FAILURE, message)

    @staticmethod
    def unknown(message: str) -> "ProbeResult":
        return ProbeResult(ProbeOutcome.UNKNOWN, message)


@dataclass
class AdmissionContainer:
    name: str
    is_init: bool = False
    has_cpu_request: bool = False
    has_memory_request: bool = False
    has_cpu_limit: bool = False
    has_memory_limit: bool = False


@dataclass
class AdmissionPod:
    index: int = 0
    priority: int = 0
    qos: QosClass = QosClass.BEST_EFFORT
    is_static: bool = False
    is_critical: bool = False
    containers: List[AdmissionContainer] = field(default_factory=list)
