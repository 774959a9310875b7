"""Refuses pods whose containers lack CPU or memory limits, in chosen namespaces
(world lifecycle-hooks, admit only): the Python twin of plugins/admission-require-limits.

Config: {"namespaces": ["prod", "payments"]} (no namespace: admit all).
"""

from wasmlet_plugin import LogLevel, log, parse_config, pod_name, pod_namespace
from wasmlet_plugin.hooks import LifecycleHooks, world


class RequireLimits(LifecycleHooks):
    def __init__(self):
        self.namespaces = []

    def configure(self, text):
        c = parse_config(text, {"namespaces": []})
        if not isinstance(c["namespaces"], list) or not all(isinstance(n, str) for n in c["namespaces"]):
            raise ValueError("invalid plugin config: namespaces must be a list of strings")
        self.namespaces = c["namespaces"]

    def admit(self, pod):
        if not self.namespaces:
            return
        namespace = pod_namespace(pod.index)
        if namespace not in self.namespaces:
            return
        missing = []
        for c in pod.containers:
            if c.has_cpu_limit and c.has_memory_limit:
                continue
            lacks = ("cpu limit" if c.has_memory_limit else
                     "memory limit" if c.has_cpu_limit else "cpu and memory limits")
            missing.append(f'container "{c.name}" has no {lacks}')
        if missing:
            log(LogLevel.INFO, "pod refused: missing limits", [("namespace", namespace), ("pod", pod_name(pod.index))])
            raise ValueError(f'namespace "{namespace}" requires cpu and memory limits: ' + "; ".join(missing))


WitWorld = world(RequireLimits)
