"""World probe-handler: subclass ProbeHandler, then ``WitWorld = world(MyProbe)``."""

from . import _wasm
from .types import ProbeKind, ProbeOutcome, ProbeRequest, ProbeResult


class ProbeHandler:
    """Runs one probe of one container. ``pod`` reaches that pod only: http_get,
    tcp_connect and exec raise on a connection error, a timeout or a refused
    target. An exception out of check counts as a failure with its message."""

    def configure(self, config: str) -> None:
        pass

    def self_check(self) -> None:
        pass

    def check(self, request: ProbeRequest, pod) -> ProbeResult:
        raise NotImplementedError


def world(probe_class):
    instance = _wasm.Instance(probe_class, meta=False)

    class WitWorld:
        def configure(self, config: str) -> None:
            instance.configure(config)

        def self_check(self) -> None:
            instance.self_check()

        def check(self, request):
            wt = _wasm.wit_types
            req = ProbeRequest(request.args, request.timeout_ms, request.pod_ip, list(request.ports),
                               list(request.containers), request.container, ProbeKind(request.kind.value))
            try:
                r = instance.get().check(req, _wasm.pod_access(True))
            except Exception as e:
                r = ProbeResult(ProbeOutcome.FAILURE, f"plugin raised: {e}")
            return wt.ProbeResult(wt.ProbeOutcome(int(r.outcome)), r.message)

    return WitWorld
