"""@NAME@: a wasmlet GC strategy. The least recently used unused images go first
until enough is freed, and every dead container but the newest of each container (all of
them once the pod is deleted). GcStrategy's own plans are upstream's: drop a method to use them."""

from wasmlet_plugin import parse_config
from wasmlet_plugin.gc import GcStrategy, world


class @TYPE@(GcStrategy):
    def configure(self, text):
        parse_config(text, {})

    def plan_images(self, disk, images):
        candidates = [i for i, image in enumerate(images) if not image.in_use and not image.pinned]
        candidates.sort(key=lambda i: images[i].last_used_unix_ms)
        plan, freed = [], 0
        for i in candidates:
            if freed >= disk.bytes_to_free:
                break
            plan.append(i)
            freed += images[i].size_bytes
        return plan

    def plan_containers(self, dead):
        return [i for i, c in enumerate(dead) if c.pod_deleted or c.per_container_rank > 0]


WitWorld = world(@TYPE@)
