#!/usr/bin/env python3
"""Build the images upstream's e2e suite runs, under their upstream names, as one OCI tarball.

Offline: every file comes from binaries built from the release's Go module (agnhost, nnp, pause),
a minimal Debian root filesystem (mmdebstrap) and Debian's busybox-static. The layout writer is
scripts/build-images.py's. One "REF DIGEST" line per image goes to stdout; the names of
`e2e.test --list-images` that are not built go to stderr, each with the reason.

Usage: images.py OUT.tar --bin DIR --rootfs DEBIAN.tar --list-images FILE [--busybox PATH]
"""
import argparse
import importlib.util
import io
import os
import subprocess
import sys
import tarfile

HERE = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.util.spec_from_file_location("build_images", os.path.join(HERE, "..", "build-images.py"))
build_images = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(build_images)
Layer, Layout = build_images.Layer, build_images.Layout

E2E = "registry.k8s.io/e2e-test-images"
PAUSE = "registry.k8s.io/pause:3.10.1"
AGNHOST, AGNHOST_PREV = f"{E2E}/agnhost:2.59", f"{E2E}/agnhost:2.55"
BUSYBOX, BUSYBOX_PREV = f"{E2E}/busybox:1.37.0-1", f"{E2E}/busybox:1.36.1-1"
NGINX, NGINX_NEW = f"{E2E}/nginx:1.14-4", f"{E2E}/nginx:1.15-4"
NONROOT, NONEWPRIVS = f"{E2E}/nonroot:1.4", f"{E2E}/nonewprivs:1.3"
KITTEN, NAUTILUS = f"{E2E}/kitten:1.7", f"{E2E}/nautilus:1.7"
JESSIE_DNSUTILS = f"{E2E}/jessie-dnsutils:1.7"
# Named by the suite but not built here, and why. Nothing is ever built under the invalid
# registry: a test expects that pull to fail.
NOT_BUILT = {
    "invalid.registry.k8s.io": "a test expects this pull to fail",
    "gcr.io/k8s-authenticated-test": "needs registry credentials (private-registry specs)",
    "sample-apiserver": "the aggregator spec (full Conformance only): not built yet",
    "registry.k8s.io/etcd": "the aggregator spec (full Conformance only): not built yet",
}
# agnhost's Dockerfile adds this user and group (SupplementalGroupsPolicy specs).
AGNHOST_USER = ("user-defined-in-image:x:1000:50000::/:/bin/sh\n", "group-defined-in-image:x:50000:user-defined-in-image\n")


def die(msg):
    sys.exit(f"conformance/images.py: error: {msg}")


def read(path):
    with open(path, "rb") as f:
        return f.read()


def debian_layer(rootfs):
    """The mmdebstrap tarball as a layer, without device nodes (the runtime mounts /dev), and
    its /etc/passwd and /etc/group for the layers above to extend."""
    out = Layer()
    passwd = group = b""
    with tarfile.open(rootfs) as src:
        for ti in src:
            name = ti.name[2:] if ti.name.startswith("./") else ti.name
            if not name or ti.ischr() or ti.isblk() or ti.isfifo():
                continue
            if name.startswith("dev/"):
                continue
            ti.name = name
            data = src.extractfile(ti).read() if ti.isreg() else None
            if name == "etc/passwd":
                passwd = data
            elif name == "etc/group":
                group = data
            out.tar.addfile(ti, io.BytesIO(data) if data is not None else None)
    if not passwd or not group:
        die(f"{rootfs} has no /etc/passwd or /etc/group")
    return out.finish(), passwd, group


def busybox_layer(busybox):
    """Debian's busybox-static as upstream's busybox image has it: every applet in /bin (the
    tests call /bin/sysctl, /bin/true, ...) and where busybox itself puts it, with /etc/passwd
    and /etc/group, /tmp and /root."""
    layer = Layer()
    for d in sorted(build_images.BASE_DIRS):
        layer.dir(d, build_images.BASE_DIRS[d])
    layer.file("bin/busybox", read(busybox), 0o755)
    full = subprocess.run([busybox, "--list-full"], check=True, capture_output=True, text=True).stdout.split()
    links = {path for path in full if "/" in path} | {f"bin/{path.rsplit('/', 1)[-1]}" for path in full}
    for link in sorted(links - {"bin/busybox"}):
        layer.symlink(link, "/bin/busybox")
    for name in sorted(build_images.BASE_FILES):
        layer.file(name, build_images.BASE_FILES[name].encode())
    return layer.finish()


def agnhost_layer(bin_dir, passwd, group):
    layer = Layer()
    layer.dir("etc")
    layer.file("etc/passwd", passwd + AGNHOST_USER[0].encode())
    layer.file("etc/group", group + AGNHOST_USER[1].encode())
    layer.file("agnhost", read(os.path.join(bin_dir, "agnhost")), 0o755)
    layer.symlink("agnhost-2", "agnhost")
    for name in ("localhost.crt", "localhost.key"):
        layer.file(name, read(os.path.join(bin_dir, "agnhost-files", name)))
    layer.dir("uploads", 0o777)
    return layer.finish()


def pages_layer(directory):
    """test/images/{kitten,nautilus}/html copied to /, as their Dockerfiles do."""
    layer = Layer()
    for name in sorted(os.listdir(directory)):
        path = os.path.join(directory, name)
        if os.path.isfile(path):
            layer.file(name, read(path))
    return layer.finish()


def files_layer(entries):
    """entries: [(path, data, mode)] with their parent directories."""
    layer = Layer()
    dirs = set()
    for path, _, _ in entries:
        parent = os.path.dirname(path)
        while parent:
            dirs.add(parent)
            parent = os.path.dirname(parent)
    for d in sorted(dirs):
        layer.dir(d, build_images.BASE_DIRS.get(d, 0o755))
    for path, data, mode in entries:
        layer.file(path, data, mode)
    return layer.finish()


def not_built_reason(ref):
    for key, reason in NOT_BUILT.items():
        if key in ref:
            return reason
    return "not used by the Conformance and NodeConformance specs"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out")
    ap.add_argument("--bin", required=True, help="agnhost, nnp, pause, agnhost-files/, kitten/, nautilus/")
    ap.add_argument("--rootfs", required=True, help="Debian minbase tarball (mmdebstrap)")
    ap.add_argument("--list-images", required=True, help="the output of e2e.test --list-images")
    ap.add_argument("--busybox", default="/bin/busybox")
    args = ap.parse_args()

    arch = build_images.oci_arch()
    bb = busybox_layer(args.busybox)
    deb, passwd, group = debian_layer(args.rootfs)
    agn = agnhost_layer(args.bin, passwd, group)
    html = files_layer([("usr/share/nginx/html/index.html", b"<h1>wasmlet e2e stand-in for nginx</h1>\n", 0o644)])
    nnp = files_layer([("usr/local/bin/nnp", read(os.path.join(args.bin, "nnp")), 0o4755)])
    pause = files_layer([("pause", read(os.path.join(args.bin, "pause")), 0o755)])

    agnhost_config = {"Entrypoint": ["/agnhost"], "Cmd": ["pause"]}
    nginx_config = {"Cmd": ["httpd", "-f", "-p", "80", "-h", "/usr/share/nginx/html"], "ExposedPorts": {"80/tcp": {}}}
    images = [
        (PAUSE, [pause], {"Entrypoint": ["/pause"], "User": "65535:65535"}),
        (BUSYBOX, [bb], {"Cmd": ["sh"]}),
        (BUSYBOX_PREV, [bb], {"Cmd": ["sh"], "Labels": {"version": "1.36.1-1"}}),
        # The two agnhost versions differ by a label, so their image IDs differ as upstream's do.
        (AGNHOST, [deb, agn], dict(agnhost_config, Labels={"version": "2.59"})),
        (AGNHOST_PREV, [deb, agn], dict(agnhost_config, Labels={"version": "2.55"})),
        # Stand-ins: busybox httpd serves what the nginx images would.
        (NGINX, [bb, html], dict(nginx_config, Labels={"version": "1.14-4"})),
        (NGINX_NEW, [bb, html], dict(nginx_config, Labels={"version": "1.15-4"})),
        (NONROOT, [bb], {"Cmd": ["sh"], "User": "1234"}),
        (NONEWPRIVS, [bb, nnp], {"Cmd": ["nnp"]}),
        (KITTEN, [deb, agn, pages_layer(os.path.join(args.bin, "kitten"))], dict(agnhost_config, Cmd=["test-webserver"])),
        (NAUTILUS, [deb, agn, pages_layer(os.path.join(args.bin, "nautilus"))], dict(agnhost_config, Cmd=["test-webserver"])),
        (JESSIE_DNSUTILS, [deb], {"Cmd": ["sh"]}),
    ]
    layout = Layout()
    digests = [(ref, layout.image(ref, layers, config, arch)) for ref, layers, config in images]
    layout.write(args.out)
    for ref, digest in digests:
        print(ref, digest)

    built = {ref for ref, _, _ in images}
    with open(args.list_images) as f:
        listed = sorted({line.strip() for line in f if line.strip()})
    for ref in listed:
        if ref not in built:
            print(f"conformance/images.py: not built: {ref} ({not_built_reason(ref)})", file=sys.stderr)
    missing = [ref for ref in built if ref not in listed]
    if missing:
        print(f"conformance/images.py: built but not named by --list-images: {' '.join(sorted(missing))}",
              file=sys.stderr)


if __name__ == "__main__":
    main()
