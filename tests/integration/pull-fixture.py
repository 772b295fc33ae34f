#!/usr/bin/python3
"""pull-fixture.py - layer tars for the `mpictr pull` tests (24-pull.sh),
written with Python's tarfile so that an unprivileged user can give them
owners, devices and xattrs.

  pull-fixture.py merge DIR     DIR/l1.tar l2.tar l3.tar: the merge fixture
  pull-fixture.py bad NAME FILE  one hostile layer (see BAD below)
  pull-fixture.py bomb FILE MB   MB MiB of zeros, gzip (a layer that expands)
"""
import gzip
import io
import sys
import tarfile


def add(t, name, kind="f", data=b"", mode=0o644, uid=0, gid=0, link="",
        xattrs=None, mtime=1700000000):
    i = tarfile.TarInfo(name)
    i.mode, i.uid, i.gid, i.mtime = mode, uid, gid, mtime
    if kind == "d":
        i.type = tarfile.DIRTYPE
        i.mode = mode if mode != 0o644 else 0o755
    elif kind == "l":
        i.type, i.linkname = tarfile.SYMTYPE, link
        i.mode = 0o777
    elif kind == "h":
        i.type, i.linkname = tarfile.LNKTYPE, link
    elif kind == "p":
        i.type = tarfile.FIFOTYPE
    elif kind == "c":
        i.type, i.devmajor, i.devminor = tarfile.CHRTYPE, 1, 3
    elif kind == "b":
        i.type, i.devmajor, i.devminor = tarfile.BLKTYPE, 7, 0
    if xattrs:
        i.pax_headers = {"SCHILY.xattr." + k: v for k, v in xattrs.items()}
    if kind == "f":
        i.size = len(data)
        t.addfile(i, io.BytesIO(data))
    else:
        t.addfile(i)


def layer(path, entries):
    with tarfile.open(path, "w", format=tarfile.PAX_FORMAT) as t:
        for e in entries:
            add(t, *e[:2], **(e[2] if len(e) > 2 else {}))


def merge(d):
    long = "n" * 200
    deep = "/".join(["deep"] * 40)
    layer(d + "/l1.tar", [
        ("etc", "d"), ("etc/passwd", "f", {"data": b"root:x:0:0::/root:/bin/sh\n"}),
        ("etc/gone", "f", {"data": b"whited out\n"}),
        ("deleted-dir", "d"), ("deleted-dir/a", "f", {"data": b"a\n"}),
        ("deleted-dir/sub", "d"), ("deleted-dir/sub/b", "f", {"data": b"b\n"}),
        ("opq", "d", {"mode": 0o750}), ("opq/old1", "f", {"data": b"1"}),
        ("opq/old2", "f", {"data": b"2"}),
        ("data", "d"), ("link-to-dir", "l", {"link": "data"}),
        ("owned", "f", {"data": b"owned\n", "mode": 0o640, "uid": 1234, "gid": 5678}),
        ("owned-dir", "d", {"mode": 0o2775, "uid": 1234, "gid": 5678}),
        ("suid", "f", {"data": b"#!/bin/sh\n", "mode": 0o4755}),
        ("fifo", "p"), ("dev", "d"), ("dev/null", "c"), ("dev/loop0", "b"),
        ("hl-base", "f", {"data": b"cross-layer hardlink target\n"}),
        ("same-a", "f", {"data": b"same layer\n" * 100}),
        ("same-b", "h", {"link": "same-a"}), ("same-c", "h", {"link": "./same-a"}),
        ("xattr", "f", {"data": b"x", "xattrs": {"user.mpictr": "yes"}}),
        (long, "f", {"data": b"long name\n"}),
        (deep + "/leaf", "f", {"data": b"deep\n"}),
        ("big", "f", {"data": bytes(range(256)) * 2048}),
    ])
    layer(d + "/l2.tar", [
        ("etc", "d"), ("etc/.wh.gone", "f"),
        (".wh.deleted-dir", "f"),
        ("opq", "d", {"mode": 0o755}), ("opq/.wh..wh..opq", "f"),
        ("opq/new1", "f", {"data": b"new"}),
        ("link-to-dir", "d"), ("link-to-dir/inner", "f", {"data": b"in\n"}),
        ("hl-cross", "h", {"link": "hl-base"}),
        ("data", "d"), ("data/file2", "f", {"data": b"two\n"}),
        (".wh.missing", "f"),
        ("shadow", "f", {"data": b"layer 2's shadow\n"}),
        ("shadow-link", "h", {"link": "shadow"}),
        ("big", "f", {"data": b"rewritten by layer 2\n"}),
    ])
    layer(d + "/l3.tar", [
        ("shadow", "f", {"data": b"layer 3's shadow\n"}),
        ("etc", "d"), ("etc/passwd", "f", {"data": b"root:x:0:0::/:/bin/sh\n"}),
        ("deleted-dir", "d"), ("deleted-dir/c", "f", {"data": b"c\n"}),
    ])


BAD = {
    "dotdot": [("../escape", "f", {"data": b"x"})],
    "absolute": [("/etc/evil", "f", {"data": b"x"})],
    "under-symlink": [("esc", "l", {"link": "/etc"}), ("esc/f", "f", {"data": b"x"})],
    "hardlink-outside": [("hl", "h", {"link": "../../etc/passwd"})],
    "hardlink-dir": [("d", "d"), ("hl", "h", {"link": "d"})],
    "hardlink-nothing": [("hl", "h", {"link": "no-such-file"})],
    "bare-whiteout": [("bin", "d"), ("bin/.wh.", "f")],
}


def main():
    if sys.argv[1] == "merge":
        merge(sys.argv[2])
    elif sys.argv[1] == "bad":
        layer(sys.argv[3], BAD[sys.argv[2]])
    elif sys.argv[1] == "bomb":
        i = tarfile.TarInfo("zeros")
        i.size = int(sys.argv[3]) << 20
        with gzip.open(sys.argv[2], "wb", compresslevel=9) as g:
            with tarfile.open(fileobj=g, mode="w|", format=tarfile.PAX_FORMAT) as t:
                t.addfile(i, io.BufferedReader(ZeroReader(i.size)))


class ZeroReader(io.RawIOBase):
    def __init__(self, n):
        self.left = n

    def readable(self):
        return True

    def readinto(self, b):
        n = min(len(b), self.left)
        b[:n] = bytes(n)
        self.left -= n
        return n


if __name__ == "__main__":
    main()
