"""The upstream kubelet's image and container GC (world gc-strategy): the Python twin
of plugins/gc-default, planning with the SDK's defaults.

Config (all optional; upstream's flag defaults): {"maxPerPodContainer": 1, "maxContainers": -1}
"""

from wasmlet_plugin import now_unix_ms, parse_config
from wasmlet_plugin.gc import (ContainerGcPolicy, GcStrategy, default_plan_containers,
                               default_plan_images, world)

DEFAULTS = {"maxPerPodContainer": 1, "maxContainers": -1}


class DefaultGc(GcStrategy):
    def __init__(self):
        self.policy = ContainerGcPolicy()

    def configure(self, text):
        c = parse_config(text, DEFAULTS)
        for key, value in c.items():
            if not isinstance(value, int) or isinstance(value, bool) or not -2**31 <= value < 2**31:
                raise ValueError(f"invalid plugin config: {key} must be a 32-bit integer")
        self.policy = ContainerGcPolicy(c["maxPerPodContainer"], c["maxContainers"])

    def plan_images(self, disk, images):
        return default_plan_images(disk, images, now_unix_ms())

    def plan_containers(self, dead):
        return default_plan_containers(dead, self.policy)


WitWorld = world(DefaultGc)
