#!/usr/bin/env python3
"""elfclosure.py - ELF dependency closure of a container root file system.

  elfclosure.py copy ROOT FILE...   copy FILEs from the host into ROOT at the
                                    same paths, with every shared library
                                    they need (transitively) and the loader
  elfclosure.py check ROOT          every ELF file in ROOT must find its
                                    loader and all its DT_NEEDED libraries
                                    inside ROOT, resolved as the loader would
                                    there (RPATH/RUNPATH with $ORIGIN, ROOT's
                                    /etc/ld.so.conf, the default dirs);
                                    dangling library symlinks are errors too

Resolution never looks outside ROOT: absolute symlinks inside ROOT are
followed relative to ROOT, as they would be in the container. Exit status 0
when complete, 1 with one line per problem otherwise. x86_64 (ELF64 LE).
"""
import glob
import os
import shutil
import stat
import struct
import sys

PT_LOAD, PT_DYNAMIC, PT_INTERP = 1, 2, 3
DT_NULL, DT_NEEDED, DT_STRTAB, DT_RPATH, DT_RUNPATH = 0, 1, 5, 15, 29
DEFAULT_DIRS = ["/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu",
                "/lib64", "/usr/lib64", "/lib", "/usr/lib"]


class Elf:
    """The parts of an ELF file that dynamic loading depends on."""

    def __init__(self, path):
        self.interp = None
        self.needed = []
        self.rpath = []
        self.runpath = []
        self.foreign = False
        with open(path, "rb") as f:
            ident = f.read(64)
            if ident[4] != 2 or ident[5] != 1:
                self.foreign = True       # 32-bit or big-endian: not ours
                return
            phoff, = struct.unpack_from("<Q", ident, 32)
            phentsize, phnum = struct.unpack_from("<HH", ident, 54)
            f.seek(phoff)
            ph = f.read(phentsize * phnum)
            loads, dyn = [], None
            for i in range(phnum):
                (ptype, _fl, off, vaddr, _pa, filesz, _ms,
                 _al) = struct.unpack_from("<IIQQQQQQ", ph, i * phentsize)
                if ptype == PT_LOAD:
                    loads.append((vaddr, off, filesz))
                elif ptype == PT_DYNAMIC:
                    dyn = (off, filesz)
                elif ptype == PT_INTERP:
                    f.seek(off)
                    self.interp = f.read(filesz).rstrip(b"\0").decode()
            if dyn is None:
                return
            f.seek(dyn[0])
            raw = f.read(dyn[1])
            ents = []
            for i in range(0, len(raw) - 15, 16):
                tag, val = struct.unpack_from("<qQ", raw, i)
                if tag == DT_NULL:
                    break
                ents.append((tag, val))
            strtab = next((v for t, v in ents if t == DT_STRTAB), None)
            if strtab is None:
                return
            stroff = None
            for vaddr, off, filesz in loads:
                if vaddr <= strtab < vaddr + filesz:
                    stroff = strtab - vaddr + off
            if stroff is None:
                return

            def string(o):
                f.seek(stroff + o)
                s = b""
                while b"\0" not in s:
                    chunk = f.read(256)
                    if not chunk:
                        break
                    s += chunk
                return s.split(b"\0", 1)[0].decode()

            for tag, val in ents:
                if tag == DT_NEEDED:
                    self.needed.append(string(val))
                elif tag == DT_RPATH:
                    self.rpath += string(val).split(":")
                elif tag == DT_RUNPATH:
                    self.runpath += string(val).split(":")


def is_elf(path):
    try:
        with open(path, "rb") as f:
            return f.read(4) == b"\x7fELF"
    except OSError:
        return False


def resolve(root, path, depth=0):
    """Real location (host path under root) of the container path `path`,
    following symlinks as the container would; None if it does not exist."""
    if depth > 40:
        return None
    cur = root.rstrip("/")
    parts = [p for p in path.split("/") if p not in ("", ".")]
    while parts:
        p = parts.pop(0)
        if p == "..":
            if len(cur) > len(root.rstrip("/")):
                cur = os.path.dirname(cur)
            continue
        nxt = cur + "/" + p
        try:
            st = os.lstat(nxt)
        except OSError:
            return None
        if stat.S_ISLNK(st.st_mode):
            target = os.readlink(nxt)
            inner = cur[len(root.rstrip("/")):] or "/"
            full = target if target.startswith("/") else inner + "/" + target
            r = resolve(root, full + "/" + "/".join(parts), depth + 1)
            return r
        cur = nxt
    return cur or "/"


def ldconf_dirs(root):
    """Directories from ROOT's /etc/ld.so.conf (with includes)."""
    out = []

    def parse(cpath, seen):
        real = resolve(root, cpath)
        if real is None or real in seen or not os.path.isfile(real):
            return
        seen.add(real)
        with open(real) as f:
            for line in f:
                line = line.split("#", 1)[0].strip()
                if not line:
                    continue
                if line.startswith("include"):
                    pat = line.split(None, 1)[1]
                    if not pat.startswith("/"):
                        pat = "/etc/" + pat
                    base = root.rstrip("/")
                    for m in sorted(glob.glob(base + pat)):
                        parse(m[len(base):], seen)
                else:
                    out.append(line)
    parse("/etc/ld.so.conf", set())
    return out


class Resolver:
    def __init__(self, root):
        self.root = root
        self.dirs = ldconf_dirs(root) + DEFAULT_DIRS

    def find(self, name, cpath, elf):
        """Container path of library `name` needed by container file cpath."""
        if "/" in name:
            return name if resolve(self.root, name) else None
        origin = os.path.dirname(cpath)

        def expand(d):
            return d.replace("${ORIGIN}", origin).replace("$ORIGIN", origin)
        search = []
        if elf.rpath and not elf.runpath:
            search += [expand(d) for d in elf.rpath]
        search += [expand(d) for d in elf.runpath] + self.dirs
        for d in search:
            if not d:
                continue
            c = os.path.normpath(d + "/" + name)
            r = resolve(self.root, c)
            if r and os.path.isfile(r):
                return c
        return None


def host_dir(root, cdir):
    """Host path of container directory cdir, created if missing; existing
    symlinked prefixes are followed (usrmerge: /lib -> usr/lib)."""
    base = root.rstrip("/")
    cur = "/"
    for p in [p for p in cdir.split("/") if p]:
        nxt = cur.rstrip("/") + "/" + p
        r = resolve(root, nxt)
        if r is None:
            r = resolve(root, cur) + "/" + p
            os.mkdir(r)
        cur = r[len(base):] or "/"
    return resolve(root, cur)


def copy_into(root, cpath):
    """Copy host file cpath into root at its real path; if cpath is another
    name for it, add a relative symlink (valid inside the container)."""
    real = os.path.realpath(cpath)
    if resolve(root, real) is None:
        d = host_dir(root, os.path.dirname(real))
        shutil.copy2(real, d + "/" + os.path.basename(real))
    if cpath != real and resolve(root, cpath) is None:
        ldir = host_dir(root, os.path.dirname(cpath))
        os.symlink(os.path.relpath(resolve(root, real), ldir),
                   ldir + "/" + os.path.basename(cpath))


def cmd_copy(root, files):
    root = os.path.abspath(root)
    host = Resolver("/")
    todo = list(files)
    seen = set()
    problems = []
    while todo:
        c = todo.pop()
        if c in seen:
            continue
        seen.add(c)
        if not os.path.exists(c):
            problems.append("%s: not found on the host" % c)
            continue
        copy_into(root, c)
        if not is_elf(c):
            continue
        elf = Elf(c)
        if elf.foreign:
            continue
        if elf.interp:
            todo.append(elf.interp)
        for n in elf.needed:
            p = host.find(n, c, elf)
            if p is None:
                problems.append("%s: needs %s, not found on the host" % (c, n))
            else:
                todo.append(p)
    for p in problems:
        print(p, file=sys.stderr)
    return 1 if problems else 0


def cmd_check(root):
    root = os.path.abspath(root)
    res = Resolver(root)
    problems = []
    nelf = 0
    for dirpath, dirnames, filenames in os.walk(root):
        for fn in filenames:
            h = os.path.join(dirpath, fn)
            cpath = h[len(root):]
            st = os.lstat(h)
            if stat.S_ISLNK(st.st_mode):
                if ".so" in fn and resolve(root, cpath) is None:
                    problems.append("%s: dangling library link -> %s" %
                                    (cpath, os.readlink(h)))
                continue
            if not stat.S_ISREG(st.st_mode) or not is_elf(h):
                continue
            elf = Elf(h)
            if elf.foreign:
                continue
            nelf += 1
            if elf.interp and resolve(root, elf.interp) is None:
                problems.append("%s: loader %s missing" % (cpath, elf.interp))
            for n in elf.needed:
                if res.find(n, cpath, elf) is None:
                    problems.append("%s: needs %s, not in the image" %
                                    (cpath, n))
    for p in problems:
        print(p)
    print("%s: %d ELF files, %d problems" % (root, nelf, len(problems)))
    return 1 if problems or nelf == 0 else 0


def main(argv):
    if len(argv) >= 3 and argv[1] == "copy":
        return cmd_copy(argv[2], argv[3:])
    if len(argv) == 3 and argv[1] == "check":
        return cmd_check(argv[2])
    print(__doc__.strip(), file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
