"""Glue between componentize-py's generated bindings (package ``wit_world``, made
at build time from wit/) and the SDK. Imported only inside a component."""

from . import host as _host_mod
from .types import HttpResponse, ExecOutput

# componentize-py keeps the modules imported while it pre-initializes the app,
# so the generated bindings are imported here, at the top; natively (tests)
# they do not exist. Each world has only some of the interfaces.
try:
    from componentize_py_types import Err as _Err
    from wit_world.imports import host as _wit_host
except ImportError:
    _Err = _wit_host = None
try:
    from wit_world.imports import pod_meta as _wit_meta
except ImportError:
    _wit_meta = None
try:
    from wit_world.imports import pod_access as _wit_access
    from wit_world.imports import types as wit_types
except ImportError:
    _wit_access = wit_types = None


def install_host():
    wit_host = _wit_host

    class Host:
        def log(self, level, message, fields):
            wit_host.log(wit_host.LogLevel(int(level)), message, list(fields))

        def now_unix_ms(self):
            return wit_host.now_unix_ms()

    _host_mod.use_host(Host())


def install_meta():
    m = _wit_meta

    class Meta:
        pod_namespace = staticmethod(m.pod_namespace)
        pod_name = staticmethod(m.pod_name)
        pod_uid = staticmethod(m.pod_uid)
        pod_label = staticmethod(m.pod_label)
        pod_annotation = staticmethod(m.pod_annotation)
        image_tags = staticmethod(m.image_tags)

    _host_mod.use_meta(Meta())


class PodAccessError(Exception):
    pass


def pod_access(in_probe: bool):
    """wasmlet_plugin.PodAccess through the pod-access imports; in a probe,
    sleep raises without asking the host."""
    a, Err = _wit_access, _Err

    class Access:
        def http_get(self, port, path, headers=(), timeout_ms=1000):
            try:
                r = a.http_get(port, path, list(headers), timeout_ms)
            except Err as e:
                raise PodAccessError(e.value) from None
            return HttpResponse(r.status, list(r.headers), bytes(r.body))

        def tcp_connect(self, port, timeout_ms=1000):
            try:
                a.tcp_connect(port, timeout_ms)
            except Err as e:
                raise PodAccessError(e.value) from None

        def exec(self, container, command, timeout_ms=1000):
            try:
                r = a.exec(container, list(command), timeout_ms)
            except Err as e:
                raise PodAccessError(e.value) from None
            return ExecOutput(r.exit_code, bytes(r.stdout), bytes(r.stderr))

        def sleep(self, ms):
            if in_probe:
                raise PodAccessError("sleep is for hooks: a probe returns and lets the next period run")
            a.sleep(ms)

    return Access()


def err(e: BaseException):
    """The componentize-py error for result<_, string>."""
    return _Err(str(e))


class Instance:
    """The one plugin object of a component instance, made on first use (after the host's
    functions are installed) and made afresh by every ``configure``. ``run`` turns an
    exception into the ``err`` of a ``result<_, string>`` export."""

    def __init__(self, plugin_class, meta: bool):
        self._class = plugin_class
        self._meta = meta
        self._plugin = None

    def get(self):
        if self._plugin is None:
            install_host()
            if self._meta:
                install_meta()
            self._plugin = self._class()
        return self._plugin

    @staticmethod
    def run(f):
        try:
            return f()
        except Exception as e:
            raise err(e)

    def configure(self, config: str) -> None:
        self._plugin = None
        self.run(lambda: self.get().configure(config))

    def self_check(self) -> None:
        self.run(lambda: self.get().self_check())
