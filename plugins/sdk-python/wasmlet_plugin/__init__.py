"""The Python SDK for wasmlet plugins.

The records of the contract (wit/, package wasmlet:plugin@0.1.2) as dataclasses,
one base class per world (``wasmlet_plugin.eviction.EvictionPolicy``,
``wasmlet_plugin.probe.ProbeHandler``, ``wasmlet_plugin.gc.GcStrategy``,
``wasmlet_plugin.hooks.LifecycleHooks``), the host's functions, config parsing,
the packed pod layout decoded, the upstream default ranking and (in
``wasmlet_plugin.gc``) the upstream image and container GC plans. A plugin
module subclasses one base class and binds it with ``WitWorld = world(MyPlugin)``;
componentize-py builds it into a component (scripts/build-sdk-plugins.sh) and
``wasmlet_plugin.testing`` runs the same class natively under pytest/unittest.
"""

from .types import *  # noqa: F401,F403
from .host import (  # noqa: F401
    LogLevel, log, now_unix_ms, pod_namespace, pod_name, pod_uid, pod_label,
    pod_annotation, image_tags, use_host, use_meta,
)
from .config import parse_config, parse_as, ConfigError  # noqa: F401
from .packed import POD_WORDS, unpack_pods, pack_pods  # noqa: F401
from .rank import default_rank, compare  # noqa: F401


class PluginError(Exception):
    """Raise it (or return an ``Err``) from a plugin method to answer ``err(reason)``."""
