"""@NAME@: a wasmlet eviction policy. The pods with the most restarts go first."""

from wasmlet_plugin import parse_config
from wasmlet_plugin.eviction import EvictionPolicy, world


class @TYPE@(EvictionPolicy):
    def configure(self, text):
        parse_config(text, {})

    def rank(self, node, pressure, pods):
        order = [i for i, pod in enumerate(pods) if pod.is_evictable()]
        order.sort(key=lambda i: -pods[i].restart_count)
        return order


WitWorld = world(@TYPE@)
