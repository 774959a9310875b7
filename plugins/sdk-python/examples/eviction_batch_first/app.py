"""Evicts batch pods before anything else and never touches protected namespaces
(world eviction-policy): the Python twin of plugins/eviction-batch-first.

Config: {"protectNamespaces": ["kube-system"], "batchLabel": "workload-class", "batchValue": "batch"}
"""

from wasmlet_plugin import default_rank, parse_config, pod_label, pod_namespace
from wasmlet_plugin.eviction import EvictionPolicy, world

DEFAULTS = {"protectNamespaces": [], "batchLabel": "workload-class", "batchValue": "batch"}


class BatchFirst(EvictionPolicy):
    def __init__(self):
        self.config = dict(DEFAULTS)

    def configure(self, text):
        c = parse_config(text, DEFAULTS)
        if not isinstance(c["protectNamespaces"], list) or not all(isinstance(n, str) for n in c["protectNamespaces"]):
            raise ValueError("invalid plugin config: protectNamespaces must be a list of strings")
        if not isinstance(c["batchLabel"], str) or not isinstance(c["batchValue"], str):
            raise ValueError("invalid plugin config: batchLabel and batchValue must be strings")
        if not c["batchLabel"]:
            raise ValueError("batchLabel must not be empty")
        self.config = c

    def rank(self, node, pressure, pods):
        protect = self.config["protectNamespaces"]
        label, value = self.config["batchLabel"], self.config["batchValue"]
        batch, rest = [], []
        for i in default_rank(pressure, pods):
            if pod_namespace(i) in protect:
                continue
            (batch if pod_label(i, label) == value else rest).append(i)
        return batch + rest


WitWorld = world(BatchFirst)
