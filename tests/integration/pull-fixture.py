#!/usr/bin/python3
"""pull-fixture.py - layer tars for the `mpictr pull` tests (24-pull.sh),
written with Python's tarfile so that an unprivileged user can give them
owners, devices and xattrs.

  pull-fixture.py merge DIR     DIR/l1.tar l2.tar l3.tar: the merge fixture
  pull-fixture.py rootopq DIR   DIR/r1.tar r2.tar: an opaque root directory
  pull-fixture.py random SEED DIR  DIR/r0.tar r1.tar r2.tar: a random stack
  pull-fixture.py bad NAME FILE  one hostile layer (see BAD below)
  pull-fixture.py bomb FILE MB   MB MiB of zeros, gzip (a layer that expands)
"""
import gzip
import io
import random
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


def rootopq(d):
    """an opaque root: the upper layer hides every lower top-level entry"""
    layer(d + "/r1.tar", [("a", "d"), ("a/x", "f", {"data": b"x"}), ("b", "f", {"data": b"b"})])
    layer(d + "/r2.tar", [(".wh..wh..opq", "f"), ("c", "f", {"data": b"c"})])


def random_stack(seed, d):
    """three layers of random whiteouts, opaque directories, files,
    directories and symlinks over the names a, b, c (3 deep): for the
    differential check against umoci"""
    R = random.Random(seed)
    names = ["a", "b", "c"]
    kinds = {}

    def rpath():
        return "/".join(R.choice(names) for _ in range(R.randint(1, 3)))

    def entry(t, name, kind="d", mode=0o755, data=None, link=""):
        i = tarfile.TarInfo(name)
        i.mode = mode
        if kind == "d":
            i.type = tarfile.DIRTYPE
        elif kind == "l":
            i.type, i.linkname = tarfile.SYMTYPE, link
        if data is not None:
            i.size = len(data)
            t.addfile(i, io.BytesIO(data))
        else:
            t.addfile(i)
        kinds[name] = kind

    for li in range(3):
        kinds.clear()
        with tarfile.open("%s/r%d.tar" % (d, li), "w", format=tarfile.PAX_FORMAT) as t:
            for _ in range(R.randint(3, 12)):
                p = rpath()
                parts = p.split("/")
                parents = ["/".join(parts[:k]) for k in range(1, len(parts))]
                if p in kinds or any(kinds.get(q, "d") != "d" for q in parents):
                    continue
                for q in parents:
                    if q not in kinds:
                        entry(t, q)
                kind = R.choice("fffdlwwo")
                parent = "/".join(parts[:-1])
                if kind == "w":
                    w = (parent + "/" if parent else "") + ".wh." + parts[-1]
                    if w not in kinds:
                        entry(t, w, "w", 0o644, b"")
                elif kind == "o":
                    if p not in kinds:
                        entry(t, p)
                    if p + "/.wh..wh..opq" not in kinds:
                        entry(t, p + "/.wh..wh..opq", "w", 0o644, b"")
                elif kind == "f":
                    entry(t, p, "f", R.choice([0o644, 0o600, 0o755]),
                          ("%s L%d %d\n" % (p, li, R.randint(0, 99))).encode())
                elif kind == "d":
                    entry(t, p, "d", R.choice([0o755, 0o700]))
                else:
                    entry(t, p, "l", 0o777, link=R.choice(["x", "../b", "c/d"]))


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
    elif sys.argv[1] == "rootopq":
        rootopq(sys.argv[2])
    elif sys.argv[1] == "random":
        random_stack(int(sys.argv[2]), sys.argv[3])
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
