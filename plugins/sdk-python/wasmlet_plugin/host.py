"""The host's functions (host, pod-meta). In a component they are the imports;
under tests, what ``wasmlet_plugin.testing`` installs with use_host/use_meta."""

import sys
from enum import IntEnum
from typing import List, Optional, Sequence, Tuple


class LogLevel(IntEnum):
    TRACE = 0
    DEBUG = 1
    INFO = 2
    WARN = 3
    ERROR = 4


class _StderrHost:
    def log(self, level, message, fields):
        print(f"[{LogLevel(level).name}] {message} {list(fields)}", file=sys.stderr)

    def now_unix_ms(self):
        return 0


class _NoMeta:
    """Answers as the host does outside a call."""

    def pod_namespace(self, i): return ""
    def pod_name(self, i): return ""
    def pod_uid(self, i): return ""
    def pod_label(self, i, key): return None
    def pod_annotation(self, i, key): return None
    def image_tags(self, i): return []


_host = _StderrHost()
_meta = _NoMeta()


def use_host(host):
    """Installs what answers log/now_unix_ms; returns the previous one."""
    global _host
    old, _host = _host, host
    return old


def use_meta(meta):
    """Installs what answers the pod-meta functions; returns the previous one."""
    global _meta
    old, _meta = _meta, meta
    return old


def log(level: LogLevel, message: str, fields: Sequence[Tuple[str, str]] = ()) -> None:
    """One structured event in the host's log, with the plugin's name attached."""
    _host.log(level, message, list(fields))


def now_unix_ms() -> int:
    return _host.now_unix_ms()


def pod_namespace(index: int) -> str:
    return _meta.pod_namespace(index)


def pod_name(index: int) -> str:
    return _meta.pod_name(index)


def pod_uid(index: int) -> str:
    return _meta.pod_uid(index)


def pod_label(index: int, key: str) -> Optional[str]:
    return _meta.pod_label(index, key)


def pod_annotation(index: int, key: str) -> Optional[str]:
    return _meta.pod_annotation(index, key)


def image_tags(index: int) -> List[str]:
    return _meta.image_tags(index)
