"""@NAME@: a wasmlet admission plugin. Refuses pods with a container that sets no memory limit."""

from wasmlet_plugin import parse_config
from wasmlet_plugin.hooks import LifecycleHooks, world


class @TYPE@(LifecycleHooks):
    def configure(self, text):
        parse_config(text, {})

    def admit(self, pod):
        for c in pod.containers:
            if not c.has_memory_limit:
                raise ValueError(f"container {c.name} sets no memory limit")


WitWorld = world(@TYPE@)
