"""@NAME@: a wasmlet probe. Succeeds when GET /healthz on the pod's first declared port answers 2xx."""

from wasmlet_plugin import ProbeResult, parse_config
from wasmlet_plugin.probe import ProbeHandler, world


class @TYPE@(ProbeHandler):
    def configure(self, text):
        parse_config(text, {})

    def check(self, request, pod):
        if not request.ports:
            return ProbeResult.failure("the pod declares no port")
        try:
            response = pod.http_get(request.ports[0], "/healthz", timeout_ms=request.timeout_ms)
        except Exception as e:
            return ProbeResult.failure(str(e))
        if 200 <= response.status <= 299:
            return ProbeResult.success(f"/healthz answered {response.status}")
        return ProbeResult.failure(f"/healthz answered {response.status}")


WitWorld = world(@TYPE@)
