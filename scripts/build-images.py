#!/usr/bin/env python3
"""Build wasmlet's local test images as one OCI image-layout tarball (stdlib only).

The node has no registry, so setup-node.sh imports this tarball into containerd with
`ctr -n k8s.io images import`. Every image is built from Debian's busybox-static:

  docker.io/library/busybox:local    base layer, Cmd ["sh"]
  registry.k8s.io/pause:local        base layer, Entrypoint is a shell loop that behaves like
                                     the real pause binary (see PAUSE_SCRIPT)
  docker.io/library/wasmlet-test:local
                                     only with --extra: base layer plus a second layer holding
                                     the given (statically linked) files; Cmd is the first file

The base layer holds /bin/busybox, an absolute symlink for every applet, /etc/passwd,
/etc/group, /tmp and /var/www/index.html ("hello from wasmlet\\n").

The output is byte-for-byte reproducible: fixed mtimes/owners, sorted entries and canonical
JSON, so the manifest digests only change when an input file changes. The digests are
printed to stdout, one "REF DIGEST" line per image.

Usage:
  build-images.py OUT.tar [--busybox PATH] [--extra [IMAGE=]SRC[:DEST]]...

--extra may be repeated. IMAGE defaults to docker.io/library/wasmlet-test:local; short names
are expanded like docker does ("foo" -> docker.io/library/foo:local). DEST defaults to
/usr/local/bin/<basename of SRC>. ELF files must be statically linked (the images have no
libc) unless --allow-dynamic is given.
"""
import argparse
import hashlib
import io
import json
import os
import platform
import struct
import subprocess
import sys
import tarfile

BUSYBOX_REF = "docker.io/library/busybox:local"
PAUSE_REF = "registry.k8s.io/pause:local"
TEST_REF = "docker.io/library/wasmlet-test:local"
INDEX_BODY = "hello from wasmlet\n"

# The sandbox ("pause") container. As PID 1 it must exit 0 on SIGTERM/SIGINT (a shell PID 1
# only gets the signals it traps) and reap orphans when the pod shares one PID namespace:
# ash's `wait` calls waitpid(-1), so any exited child is collected, not only the sleep.
PAUSE_SCRIPT = "trap 'exit 0' TERM INT; while :; do sleep 2147483647 & wait $!; done"

EPOCH = "1970-01-01T00:00:00Z"
PATH_ENV = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
MT_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
MT_CONFIG = "application/vnd.oci.image.config.v1+json"
MT_LAYER = "application/vnd.oci.image.layer.v1.tar"
MT_INDEX = "application/vnd.oci.image.index.v1+json"

BASE_DIRS = {
    "bin": 0o755, "dev": 0o755, "etc": 0o755, "home": 0o755, "proc": 0o555, "root": 0o700,
    "sbin": 0o755, "sys": 0o555, "tmp": 0o1777, "usr": 0o755, "usr/bin": 0o755,
    "usr/local": 0o755, "usr/local/bin": 0o755, "usr/sbin": 0o755, "var": 0o755,
    "var/www": 0o755,
}
BASE_FILES = {
    "etc/passwd": "root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/home:/bin/false\n",
    "etc/group": "root:x:0:\nnogroup:x:65534:\n",
    "var/www/index.html": INDEX_BODY,
}


def die(msg):
    sys.exit(f"build-images.py: error: {msg}")


def oci_arch():
    m = platform.machine()
    return {"x86_64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64"}.get(m, m)


def canonical(obj):
    return json.dumps(obj, sort_keys=True, separators=(",", ":")).encode()


def elf_interpreter(path):
    """Return the PT_INTERP of an ELF file, "" if it is static, None if it is not ELF."""
    with open(path, "rb") as f:
        head = f.read(64)
        if head[:4] != b"\x7fELF" or len(head) < 64:
            return None
        is64, endian = head[4] == 2, "<" if head[5] == 1 else ">"
        if is64:
            phoff, = struct.unpack_from(endian + "Q", head, 0x20)
            phentsize, phnum = struct.unpack_from(endian + "HH", head, 0x36)
        else:
            phoff, = struct.unpack_from(endian + "I", head, 0x1C)
            phentsize, phnum = struct.unpack_from(endian + "HH", head, 0x2A)
        for i in range(phnum):
            f.seek(phoff + i * phentsize)
            ph = f.read(phentsize)
            if struct.unpack_from(endian + "I", ph, 0)[0] != 3:  # PT_INTERP
                continue
            if is64:
                off, = struct.unpack_from(endian + "Q", ph, 0x08)
                size, = struct.unpack_from(endian + "Q", ph, 0x20)
            else:
                off, = struct.unpack_from(endian + "I", ph, 0x04)
                size, = struct.unpack_from(endian + "I", ph, 0x10)
            f.seek(off)
            return f.read(size).rstrip(b"\0").decode(errors="replace") or "?"
    return ""


def normalize_ref(name):
    """docker-style reference expansion, with ":local" as the default tag."""
    if "/" not in name:
        name = "library/" + name
    first = name.split("/", 1)[0]
    if "." not in first and ":" not in first and first != "localhost":
        name = "docker.io/" + name
    if ":" not in name.rsplit("/", 1)[1] and "@" not in name:
        name += ":local"
    return name


def parse_extra(spec):
    """[IMAGE=]SRC[:DEST] -> (image ref, src, absolute dest path)."""
    image = TEST_REF
    if "=" in spec:
        image, spec = spec.split("=", 1)
        image = normalize_ref(image)
    src, sep, dest = spec.rpartition(":")
    if not sep or not dest.startswith("/"):
        src, dest = spec, ""
    if not dest:
        dest = "/usr/local/bin/" + os.path.basename(src)
    elif dest.endswith("/"):
        dest += os.path.basename(src)
    if not os.path.isfile(src):
        die(f"--extra {spec!r}: {src} is not a file")
    return image, src, os.path.normpath(dest)


def tar_entry(name, kind, mode, size=0, target=""):
    """A tar header with fixed owner and mtime, so the archive is reproducible."""
    ti = tarfile.TarInfo(name)
    ti.type, ti.mode, ti.size, ti.linkname = kind, mode, size, target
    ti.mtime, ti.uid, ti.gid, ti.uname, ti.gname = 0, 0, 0, "root", "root"
    return ti


class Layer:
    """An uncompressed, reproducible layer tar."""

    def __init__(self):
        self.buf = io.BytesIO()
        self.tar = tarfile.open(fileobj=self.buf, mode="w", format=tarfile.PAX_FORMAT)

    def dir(self, name, mode=0o755):
        self.tar.addfile(tar_entry(name, tarfile.DIRTYPE, mode))

    def file(self, name, data, mode=0o644):
        self.tar.addfile(tar_entry(name, tarfile.REGTYPE, mode, len(data)), io.BytesIO(data))

    def symlink(self, name, target):
        self.tar.addfile(tar_entry(name, tarfile.SYMTYPE, 0o777, target=target))

    def finish(self):
        self.tar.close()
        return self.buf.getvalue()


def base_layer(busybox):
    layer = Layer()
    for d in sorted(BASE_DIRS):
        layer.dir(d, BASE_DIRS[d])
    with open(busybox, "rb") as f:
        layer.file("bin/busybox", f.read(), 0o755)
    out = subprocess.run([busybox, "--list-full"], check=True, capture_output=True, text=True)
    # Absolute targets: a relative "sh -> busybox" in usr/bin would point at usr/bin/busybox.
    for applet in sorted(set(out.stdout.split())):
        if "/" in applet and applet != "bin/busybox":
            layer.symlink(applet, "/bin/busybox")
    for name in sorted(BASE_FILES):
        layer.file(name, BASE_FILES[name].encode())
    return layer.finish()


def extra_layer(files):
    """files: [(src, dest)] -> layer with the files and all their parent directories."""
    layer = Layer()
    dirs = set()
    for _, dest in files:
        parent = os.path.dirname(dest.lstrip("/"))
        while parent:
            dirs.add(parent)
            parent = os.path.dirname(parent)
    for d in sorted(dirs):
        layer.dir(d, BASE_DIRS.get(d, 0o755))
    for src, dest in sorted(files, key=lambda f: f[1]):
        mode = 0o755 if os.access(src, os.X_OK) else 0o644
        with open(src, "rb") as f:
            layer.file(dest.lstrip("/"), f.read(), mode)
    return layer.finish()


class Layout:
    """Collects blobs and index entries of an OCI image layout."""

    def __init__(self):
        self.blobs = {}
        self.manifests = []

    def blob(self, data):
        digest = "sha256:" + hashlib.sha256(data).hexdigest()
        self.blobs[digest] = data
        return {"digest": digest, "size": len(data)}

    def image(self, ref, layers, config_extra, arch):
        diff_ids = [self.blob(l)["digest"] for l in layers]  # uncompressed: digest == diff_id
        config = {
            "architecture": arch, "os": "linux", "created": EPOCH,
            "config": dict({"Env": [PATH_ENV], "WorkingDir": "/"}, **config_extra),
            "rootfs": {"type": "layers", "diff_ids": diff_ids},
            "history": [{"created": EPOCH, "created_by": "wasmlet scripts/build-images.py"}
                        for _ in layers],
        }
        manifest = {
            "schemaVersion": 2, "mediaType": MT_MANIFEST,
            "config": dict(mediaType=MT_CONFIG, **self.blob(canonical(config))),
            "layers": [dict(mediaType=MT_LAYER, **self.blob(l)) for l in layers],
        }
        desc = dict(mediaType=MT_MANIFEST, **self.blob(canonical(manifest)))
        desc["platform"] = {"architecture": arch, "os": "linux"}
        # containerd names imported images after io.containerd.image.name
        desc["annotations"] = {"io.containerd.image.name": ref,
                               "org.opencontainers.image.ref.name": ref}
        self.manifests.append(desc)
        return desc["digest"]

    def write(self, out):
        entries = [("oci-layout", canonical({"imageLayoutVersion": "1.0.0"})),
                   ("index.json", canonical({"schemaVersion": 2, "mediaType": MT_INDEX,
                                             "manifests": self.manifests}))]
        entries += [("blobs/sha256/" + d.split(":", 1)[1], self.blobs[d]) for d in sorted(self.blobs)]
        tmp = out + ".tmp"
        with tarfile.open(tmp, "w", format=tarfile.PAX_FORMAT) as tar:
            for d in ("blobs", "blobs/sha256"):
                tar.addfile(tar_entry(d, tarfile.DIRTYPE, 0o755))
            for name, data in entries:
                tar.addfile(tar_entry(name, tarfile.REGTYPE, 0o644, len(data)), io.BytesIO(data))
        os.replace(tmp, out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", help="output tarball (OCI image layout)")
    ap.add_argument("--busybox", default="/bin/busybox", help="statically linked busybox")
    ap.add_argument("--extra", action="append", default=[], metavar="[IMAGE=]SRC[:DEST]",
                    help=f"add SRC at DEST to IMAGE (default {TEST_REF}); repeatable")
    ap.add_argument("--allow-dynamic", action="store_true",
                    help="accept dynamically linked ELF files in --extra")
    args = ap.parse_args()

    interp = elf_interpreter(args.busybox) if os.path.isfile(args.busybox) else None
    if interp != "":
        die(f"{args.busybox} is not a static ELF binary "
            f"({'interpreter ' + interp if interp else 'missing or not ELF'}); install busybox-static")
    extras = {}  # image ref -> [(src, dest)]
    for spec in args.extra:
        image, src, dest = parse_extra(spec)
        if image in (BUSYBOX_REF, PAUSE_REF):
            die(f"--extra cannot modify {image}")
        interp = elf_interpreter(src)
        if interp and not args.allow_dynamic:
            die(f"{src} is dynamically linked (interpreter {interp}); the image has no libc. "
                "Link it statically (e.g. --target x86_64-unknown-linux-musl) or pass --allow-dynamic")
        files = extras.setdefault(image, [])
        if any(d == dest for _, d in files):
            die(f"{image}: {dest} given twice")
        files.append((src, dest))

    arch = oci_arch()
    base = base_layer(args.busybox)
    layout = Layout()
    digests = [
        (BUSYBOX_REF, layout.image(BUSYBOX_REF, [base], {"Cmd": ["sh"]}, arch)),
        (PAUSE_REF, layout.image(PAUSE_REF, [base], {"Entrypoint": ["/bin/sh", "-c", PAUSE_SCRIPT]}, arch)),
    ]
    for image in sorted(extras):
        files = extras[image]
        digests.append((image, layout.image(image, [base, extra_layer(files)],
                                            {"Cmd": [files[0][1]]}, arch)))
    layout.write(args.out)
    for ref, digest in digests:
        print(ref, digest)


if __name__ == "__main__":
    main()
