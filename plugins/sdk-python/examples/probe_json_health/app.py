"""GETs a JSON health document and compares one field (world probe-handler):
the Python twin of plugins/probe-json-health.

Args: {"port": 8080, "path": "/health", "field": "status", "expected": "ok"}
(all optional but port when the pod declares more than one). Plugin config sets
the defaults of path, field and expected.
"""

import json

from wasmlet_plugin import ProbeResult, parse_as, parse_config
from wasmlet_plugin.probe import ProbeHandler, world

DEFAULTS = {"path": "/health", "field": "status", "expected": "ok"}
_MISSING = object()


def _lookup(value, path):
    for key in (k for k in path.split(".") if k):
        if isinstance(value, dict):
            if key not in value:
                return _MISSING
            value = value[key]
        elif isinstance(value, list):
            if not key.isdigit() or int(key) >= len(value):
                return _MISSING
            value = value[int(key)]
        else:
            return _MISSING
    return value


def _equal(a, b):
    """serde_json's Value equality: an integer never equals a float, bools are not numbers."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_equal(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b))
    return a == b


def _compact(v):
    return json.dumps(v, separators=(",", ":"))


def _check_args(args):
    port = args["port"]
    if port is not None and (type(port) is not int or not 0 <= port <= 65535):
        raise ValueError(f"invalid probe args: port {port!r} is not a u16")
    for key in ("path", "field"):
        if args[key] is not None and not isinstance(args[key], str):
            raise ValueError(f"invalid probe args: {key} must be a string")


class JsonHealth(ProbeHandler):
    def __init__(self):
        self.defaults = dict(DEFAULTS)

    def configure(self, text):
        self.defaults = parse_config(text, DEFAULTS)

    def check(self, request, pod):
        try:
            args = parse_as("probe args", request.args, {"port": None, "path": None, "field": None, "expected": None})
            _check_args(args)
        except ValueError as e:
            return ProbeResult.failure(str(e))
        port = args["port"]
        if port is None:
            if len(request.ports) != 1:
                return ProbeResult.failure(f'args need a "port": the pod declares {request.ports}')
            port = request.ports[0]
        path = args["path"] if args["path"] is not None else self.defaults["path"]
        field = args["field"] if args["field"] is not None else self.defaults["field"]
        expected = args["expected"] if args["expected"] is not None else self.defaults["expected"]
        try:
            response = pod.http_get(port, path, [("Accept", "application/json")], request.timeout_ms)
        except Exception as e:
            return ProbeResult.failure(f"GET :{port}{path}: {e}")
        if not 200 <= response.status < 300:
            return ProbeResult.failure(f"GET :{port}{path}: HTTP {response.status}")
        try:
            body = json.loads(bytes(response.body))
        except ValueError as e:
            return ProbeResult.unknown(f"GET :{port}{path}: body is not JSON: {e}")
        value = _lookup(body, field)
        if value is _MISSING:
            return ProbeResult.failure(f"{field} is missing from the health document")
        if _equal(value, expected):
            return ProbeResult.success(f"{field} is {_compact(value)}")
        return ProbeResult.failure(f"{field} is {_compact(value)}, expected {_compact(expected)}")


WitWorld = world(JsonHealth)
