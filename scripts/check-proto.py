#!/usr/bin/env python3
"""Check wasmlet's .proto files against the protocol the installed containerd serves.

Usage:  python3 scripts/check-proto.py [--containerd /usr/bin/containerd] [--verbose]

containerd's Go code (gogo/protobuf) embeds the gzip-compressed FileDescriptorProto of
every .proto it was built from. This script

  1. pulls every such descriptor out of the containerd binary (the reference);
  2. compiles our proto/ tree with grpcio-tools' protoc into a descriptor set
     (--include_imports, so the well-known types come along and are skipped);
  3. compares everything we define with the reference, by fully qualified name:
       - messages: the same fields (none missing, none extra) with the same
         number, label, type, type name, oneof membership, proto3 `optional`,
         map-ness (map key/value types are compared as the map-entry message);
         the same nested messages and enums;
       - enums: the same value names and numbers;
       - services: each method's input/output types and client/server streaming;
         the CRI services (package runtime.v1) must declare every method the
         reference has; other services may declare a subset of the methods;
       - a message or enum we define must exist in the reference, and every type
         the CRI services reference (transitively) must be defined by us.
     Differences in the `deprecated` option are printed as notes, not failures
     (we drop that option on purpose).

It exits 1 and lists the differences if there are any, 0 otherwise. It needs the python
`protobuf` and `grpcio-tools` packages; if they cannot be imported it creates (or reuses)
a virtualenv at /tmp/wasmlet-proto-venv, installs them there and re-runs itself in it.
"""
import os
import subprocess
import sys

VENV = "/tmp/wasmlet-proto-venv"
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROTO_ROOT = os.path.join(REPO, "proto")
# Packages whose services must be complete (every method the reference serves).
COMPLETE_SERVICE_PACKAGES = {"runtime.v1"}


def ensure_deps():
    try:
        import google.protobuf  # noqa: F401
        import grpc_tools.protoc  # noqa: F401
        return
    except ImportError:
        pass
    py = os.path.join(VENV, "bin", "python")
    if os.path.abspath(sys.executable) == os.path.abspath(py) or os.environ.get("WASMLET_PROTO_VENV_DONE"):
        # Already in the venv, yet the imports fail: install into it once.
        if os.environ.get("WASMLET_PROTO_VENV_DONE") == "2":
            sys.exit("check-proto: cannot import protobuf / grpc_tools even after installing them")
        subprocess.check_call([py, "-m", "pip", "install", "-q", "protobuf", "grpcio-tools"])
        os.environ["WASMLET_PROTO_VENV_DONE"] = "2"
        os.execv(py, [py] + sys.argv)
    if not os.path.exists(py):
        print(f"check-proto: creating {VENV} (protobuf, grpcio-tools)", file=sys.stderr)
        subprocess.check_call([sys.executable, "-m", "venv", VENV])
        subprocess.check_call([py, "-m", "pip", "install", "-q", "protobuf", "grpcio-tools"])
    os.environ["WASMLET_PROTO_VENV_DONE"] = "1"
    os.execv(py, [py] + sys.argv)


ensure_deps()

import zlib  # noqa: E402

from google.protobuf import descriptor_pb2 as D  # noqa: E402

FDP = D.FieldDescriptorProto
TYPE_NAMES = {v: k[len("TYPE_"):].lower() for k, v in FDP.Type.items()}
LABEL_NAMES = {v: k[len("LABEL_"):].lower() for k, v in FDP.Label.items()}


# --------------------------------------------------------------------------- reference


def extract_reference(binary):
    """Every FileDescriptorProto embedded gzip-compressed in `binary`."""
    data = open(binary, "rb").read()
    files, i = [], 0
    while True:
        i = data.find(b"\x1f\x8b\x08", i)  # gzip magic + deflate method
        if i < 0:
            break
        try:
            raw = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(data[i:i + 4_000_000])
            fd = D.FileDescriptorProto.FromString(raw)
            if fd.name.endswith(".proto") and (fd.message_type or fd.enum_type or fd.service):
                files.append(fd)
        except Exception:  # not a gzip stream, or not a descriptor
            pass
        i += 1
    return files


# --------------------------------------------------------------------------- ours


def compile_ours():
    import tempfile

    import grpc_tools
    from grpc_tools import protoc

    wkt = os.path.join(os.path.dirname(grpc_tools.__file__), "_proto")
    sources = []
    for root, _, names in os.walk(PROTO_ROOT):
        sources += [os.path.relpath(os.path.join(root, n), PROTO_ROOT) for n in names if n.endswith(".proto")]
    sources.sort()
    if not sources:
        sys.exit(f"check-proto: no .proto files under {PROTO_ROOT}")
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "ours.pb")
        rc = protoc.main(["protoc", f"-I{PROTO_ROOT}", f"-I{wkt}", "--include_imports",
                          f"--descriptor_set_out={out}"] + sources)
        if rc != 0:
            sys.exit(f"check-proto: protoc failed ({rc}) compiling {' '.join(sources)}")
        fds = D.FileDescriptorSet.FromString(open(out, "rb").read())
    return [f for f in fds.file if f.name in sources], sources


# --------------------------------------------------------------------------- indexing


class Index:
    def __init__(self, files):
        self.messages, self.enums, self.services = {}, {}, {}
        self.file_of = {}
        for fd in files:
            pre = "." + fd.package if fd.package else ""
            for m in fd.message_type:
                self._msg(m, pre, fd)
            for e in fd.enum_type:
                self._put(self.enums, f"{pre}.{e.name}", e, fd)
            for s in fd.service:
                self._put(self.services, f"{pre}.{s.name}", s, fd)

    def _put(self, table, name, obj, fd):
        # The same file can be embedded more than once; the first copy wins.
        if name not in table:
            table[name] = obj
            self.file_of[name] = fd

    def _msg(self, m, pre, fd):
        name = f"{pre}.{m.name}"
        self._put(self.messages, name, m, fd)
        for n in m.nested_type:
            self._msg(n, name, fd)
        for e in m.enum_type:
            self._put(self.enums, f"{name}.{e.name}", e, fd)


# --------------------------------------------------------------------------- comparison


def fmt_field(f, oneofs):
    bits = [LABEL_NAMES[f.label], TYPE_NAMES[f.type]]
    if f.type_name:
        bits.append(f.type_name)
    bits.append(f"{f.name}={f.number}")
    if f.HasField("oneof_index"):
        bits.append(f"oneof {oneofs[f.oneof_index].name}")
    if f.proto3_optional:
        bits.append("optional")
    return " ".join(bits)


def main():
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--containerd", default="/usr/bin/containerd")
    ap.add_argument("--verbose", action="store_true")
    args = ap.parse_args()

    if not os.path.exists(args.containerd):
        sys.exit(f"check-proto: {args.containerd} not found (apt-get install containerd)")
    ref_files = extract_reference(args.containerd)
    ref = Index(ref_files)
    version = ""
    try:
        version = subprocess.run([args.containerd, "--version"], capture_output=True, text=True).stdout.strip()
    except OSError:
        pass
    print(f"reference: {args.containerd} ({version or 'version unknown'}): "
          f"{len(ref_files)} embedded descriptors")

    our_files, sources = compile_ours()
    ours = Index(our_files)
    print(f"ours: {len(sources)} files: {' '.join(sources)}")

    errors, notes = [], []

    def err(msg):
        errors.append(msg)

    # File-level: syntax must match the reference file defining the same names.
    for fd in our_files:
        names = [n for n, f in ours.file_of.items() if f is fd]
        ref_fds = {id(ref.file_of[n]): ref.file_of[n] for n in names if n in ref.file_of}
        for rfd in ref_fds.values():
            if (rfd.syntax or "proto2") != (fd.syntax or "proto2"):
                err(f"{fd.name}: syntax {fd.syntax or 'proto2'} but reference {rfd.name} is {rfd.syntax or 'proto2'}")

    # Messages.
    for name, m in sorted(ours.messages.items()):
        r = ref.messages.get(name)
        if r is None:
            err(f"message {name}: not in the reference")
            continue
        if m.options.map_entry != r.options.map_entry:
            err(f"message {name}: map_entry {m.options.map_entry} vs reference {r.options.map_entry}")
        ofs = {f.name: f for f in m.field}
        rfs = {f.name: f for f in r.field}
        for fname in sorted(set(rfs) - set(ofs)):
            err(f"message {name}: missing field {fmt_field(rfs[fname], r.oneof_decl)}")
        for fname in sorted(set(ofs) - set(rfs)):
            err(f"message {name}: extra field {fmt_field(ofs[fname], m.oneof_decl)}")
        for fname in sorted(set(ofs) & set(rfs)):
            a, b = ofs[fname], rfs[fname]
            fa, fb = fmt_field(a, m.oneof_decl), fmt_field(b, r.oneof_decl)
            if fa != fb:
                err(f"message {name}: field differs: ours `{fa}` reference `{fb}`")
            if a.type_name and a.type_name in ours.messages and b.type_name in ref.messages:
                ma = ours.messages[a.type_name].options.map_entry
                mb = ref.messages[b.type_name].options.map_entry
                if ma != mb:
                    err(f"message {name}: field {fname}: map {ma} vs reference map {mb}")
            if a.options.deprecated != b.options.deprecated:
                notes.append(f"{name}.{fname}: deprecated={b.options.deprecated} in the reference, "
                             f"{a.options.deprecated} in ours")
        for kind, ol, rl in (("nested message", m.nested_type, r.nested_type),
                             ("nested enum", m.enum_type, r.enum_type)):
            on, rn = {x.name for x in ol}, {x.name for x in rl}
            for x in sorted(rn - on):
                err(f"message {name}: missing {kind} {x}")
            for x in sorted(on - rn):
                err(f"message {name}: extra {kind} {x}")

    # Enums.
    for name, e in sorted(ours.enums.items()):
        r = ref.enums.get(name)
        if r is None:
            err(f"enum {name}: not in the reference")
            continue
        ov = {v.name: v.number for v in e.value}
        rv = {v.name: v.number for v in r.value}
        if ov != rv:
            err(f"enum {name}: values {sorted(ov.items(), key=lambda kv: kv[1])} "
                f"vs reference {sorted(rv.items(), key=lambda kv: kv[1])}")

    # Services.
    n_methods = 0
    for name, s in sorted(ours.services.items()):
        r = ref.services.get(name)
        if r is None:
            err(f"service {name}: not in the reference")
            continue
        om = {x.name: x for x in s.method}
        rm = {x.name: x for x in r.method}
        n_methods += len(om)
        for x in sorted(set(om) - set(rm)):
            err(f"service {name}: extra method {x}")
        missing = sorted(set(rm) - set(om))
        pkg = name[1:].rsplit(".", 1)[0]
        if missing and pkg in COMPLETE_SERVICE_PACKAGES:
            for x in missing:
                err(f"service {name}: missing method {x}")
        elif missing:
            notes.append(f"service {name}: declares {len(om)} of {len(rm)} methods "
                         f"(not declared: {', '.join(missing)})")
        for x in sorted(set(om) & set(rm)):
            a, b = om[x], rm[x]
            sa = (a.input_type, a.output_type, a.client_streaming, a.server_streaming)
            sb = (b.input_type, b.output_type, b.client_streaming, b.server_streaming)
            if sa != sb:
                err(f"service {name}: method {x}: ours (in, out, client_stream, server_stream)={sa} "
                    f"reference={sb}")

    # Completeness: every type the reference's versions of our complete-package
    # services reach must be defined by us.
    def closure(names):
        seen, todo = set(), list(names)
        while todo:
            t = todo.pop()
            if t in seen:
                continue
            seen.add(t)
            m = ref.messages.get(t)
            if m is not None:
                todo += [f.type_name for f in m.field if f.type_name]
        return seen

    roots = []
    for name, r in ref.services.items():
        if name[1:].rsplit(".", 1)[0] in COMPLETE_SERVICE_PACKAGES:
            if name not in ours.services:
                err(f"service {name}: served by the reference, not declared by us")
            roots += [t for m in r.method for t in (m.input_type, m.output_type)]
    for t in sorted(closure(roots)):
        if t not in ours.messages and t not in ours.enums:
            err(f"type {t}: reached from the CRI services but not defined by us")
    for pkg in sorted(COMPLETE_SERVICE_PACKAGES):
        unused = [n for n in list(ref.messages) + list(ref.enums)
                  if n.startswith(f".{pkg}.") and n not in ours.messages and n not in ours.enums
                  and not (n in ref.messages and ref.messages[n].options.map_entry)]
        for n in sorted(unused):
            notes.append(f"{n}: in the reference but not defined by us (unreferenced)")

    # Summary.
    by_pkg = {}
    for table, kind in ((ours.messages, "messages"), (ours.enums, "enums"), (ours.services, "services")):
        for n, obj in table.items():
            if kind == "messages" and obj.options.map_entry:
                kind_ = "map entries"
            else:
                kind_ = kind
            pkg = ours.file_of[n].package
            by_pkg.setdefault(pkg, {}).setdefault(kind_, 0)
            by_pkg[pkg][kind_] += 1
    for pkg in sorted(by_pkg):
        c = by_pkg[pkg]
        meth = sum(len(s.method) for n, s in ours.services.items() if ours.file_of[n].package == pkg)
        print(f"  {pkg}: {c.get('messages', 0)} messages (+{c.get('map entries', 0)} map entries), "
              f"{c.get('enums', 0)} enums, {c.get('services', 0)} services, {meth} methods")
    for n in notes:
        print(f"note: {n}")
    if errors:
        for e in errors:
            print(f"DIFF: {e}")
        print(f"check-proto: FAILED, {len(errors)} difference(s)")
        return 1
    n_msgs = sum(1 for m in ours.messages.values() if not m.options.map_entry)
    print(f"check-proto: OK, {n_msgs} messages (+{len(ours.messages) - n_msgs} map entries), "
          f"{len(ours.enums)} enums, {n_methods} methods match containerd's embedded descriptors")
    return 0


if __name__ == "__main__":
    sys.exit(main())
