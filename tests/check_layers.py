#!/usr/bin/env python3
"""The layer check (docs/architecture.md): a module includes only headers of
its own layer or of the layers its row in that page's table lists, and
weedfs-mount links no database library. TAP output, for `make check`.

Usage: check_layers.py [SRCDIR [WEEDFS_MOUNT]]. Under `make check` the tree is
$srcdir and the binary ./weedfs-mount of the build directory.
"""
import os
import re
import subprocess
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
ROW = re.compile(r"^\|\s*([a-z/]+/)\s*\|([^|]*)\|\s*$")


def read_layers(top):
    """{folder: set of folders it may include} from docs/architecture.md."""
    text = open(os.path.join(top, "docs", "architecture.md"), encoding="utf-8").read()
    m = re.search(r"<!-- layers: begin.*?-->(.*?)<!-- layers: end -->", text, re.S)
    if not m:
        sys.exit("docs/architecture.md has no layers table")
    layers = {}
    for line in m.group(1).splitlines():
        r = ROW.match(line.strip())
        if r:
            layers[r.group(1)] = set(r.group(2).split()) | {r.group(1)}
    return layers


def layer_of(path, layers):
    """The longest folder of the table that path lies in, or None."""
    best = None
    for folder in layers:
        if path.startswith(folder) and (best is None or len(folder) > len(best)):
            best = folder
    return best


def resolve(top, src, name):
    """The tree-relative path of the header name included by src, or None."""
    if "/" in name:
        return name if os.path.exists(os.path.join(top, name)) else None
    own = os.path.join(os.path.dirname(src), name)
    if os.path.exists(os.path.join(top, own)):
        return own
    if os.path.exists(os.path.join(top, "lib", name)):
        return "lib/" + name
    return None


def main():
    top = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.environ.get(
        "srcdir", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")))
    mount_bin = sys.argv[2] if len(sys.argv) > 2 else "weedfs-mount"
    check_mount = os.path.exists(mount_bin)
    layers = read_layers(top)
    bad = []
    files = 0
    for folder in sorted(layers):
        root = os.path.join(top, folder)
        for dirpath, _, names in os.walk(root):
            for n in sorted(names):
                if not n.endswith((".c", ".h")):
                    continue
                src = os.path.relpath(os.path.join(dirpath, n), top)
                if layer_of(src, layers) != folder:
                    continue  # a deeper folder's own row covers it
                files += 1
                text = open(os.path.join(top, src), encoding="utf-8", errors="replace").read()
                for inc in INCLUDE.findall(text):
                    if inc == "config.h":
                        continue
                    hdr = resolve(top, src, inc)
                    if hdr is None:
                        bad.append(f'{src}: "{inc}" is no header of the tree')
                        continue
                    to = layer_of(hdr, layers)
                    if to is not None and to not in layers[folder]:
                        bad.append(f'{src}: includes "{inc}" from {to}, above {folder}')
    print("1..2" if check_mount else "1..1")
    if bad:
        print(f"not ok 1 - includes follow the layers ({len(bad)} violations in {files} files)")
        for b in bad:
            print("# " + b)
    else:
        print(f"ok 1 - includes follow the layers ({files} files)")
    if check_mount:
        out = subprocess.run(["ldd", mount_bin], capture_output=True, text=True).stdout
        dbs = [l.split()[0] for l in out.splitlines() if re.search(r"libsqlite|libpq", l)]
        if dbs:
            print("not ok 2 - weedfs-mount links no database library: " + " ".join(dbs))
            bad.append("mount links " + " ".join(dbs))
        else:
            print("ok 2 - weedfs-mount links no database library")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
