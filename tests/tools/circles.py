#!/usr/bin/env python3
"""circles.py - the circles between the source files of runtime/, sif/ and
pmi/ (make check-layers; tests/tools/layers.sh checks the direction).

A module is a .c/.h pair (runtime/modes/join.c and .h: runtime/modes/join;
a header alone, such as pmi/pmi_internal.h, is one too). Module A uses
module B when a file of A includes B's header ("#include" lines, resolved
as the compiler does with -I. -Iruntime and the including file's folder),
or a .c file of A names a function or variable that B defines with
external linkage (found with ctags, Debian's universal-ctags: a call
through a header shared by many, such as pmi_internal.h, counts; a name A
defines too, as a plugin and its stub do, is A's own). runtime/mpictr.h,
the public API, is for everyone. Every folder counts, runtime/pull/,
runtime/spank/ and runtime/helpers/ included. A circle is a set of two or more modules
that reach each other (Tarjan's strongly connected components); each is
printed with one path around it and what ties each step.

Usage: tests/tools/circles.py [ROOT]   (ROOT: the tree, default .)
Exit status 1 when there is a circle; prints "0 circles" otherwise.
"""
import os
import re
import shutil
import subprocess
import sys

ROOT = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else ".")
DIRS = ["runtime", "sif", "pmi"]
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
NOISE = re.compile(r'/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\])+\'',
                   re.S)
IDENT = re.compile(r'\b[A-Za-z_]\w*\b')
# The public API's header: its types and prototypes are for everyone (the
# library implements them where they belong).
ANYWHERE = {"runtime/mpictr.h"}

def sources():
    for d in DIRS:
        for dirpath, dirnames, files in os.walk(os.path.join(ROOT, d)):
            rel = os.path.relpath(dirpath, ROOT)
            dirnames.sort()
            for f in sorted(files):
                if f.endswith((".c", ".h")):
                    yield os.path.join(rel, f)


def resolve(src, name):
    for base in (os.path.dirname(src), ".", "runtime"):
        p = os.path.normpath(os.path.join(base, name))
        if os.path.isfile(os.path.join(ROOT, p)):
            return p
    return None  # a system or generated header


def module(path):
    return os.path.splitext(path)[0]


def definitions(files):
    """name -> the modules that define it with external linkage: tagged by
    ctags outside file scope and declared in a header of the tree (a
    prototype, or an extern variable), so that a static that ctags takes
    for a global (`static struct {...} d;`) does not count."""
    out = subprocess.run(
        ["ctags", "-x", "--_xformat=%N %K %F", "--kinds-C=fv", "--extras=-F",
         "--languages=C", "--langmap=C:.c.h"] + files,
        cwd=ROOT, check=True, capture_output=True, text=True).stdout
    headers = ""
    for f in files:
        if f.endswith(".h"):
            with open(os.path.join(ROOT, f), encoding="utf-8") as fh:
                headers += NOISE.sub(" ", fh.read()) + "\n"
    defs = {}
    for line in out.splitlines():
        name, kind, path = line.split(" ", 2)
        decl = r"\b%s\s*\(" if kind == "function" else \
            r"\bextern\b[^;]*\b%s\b"
        if path.endswith(".h") or re.search(decl % re.escape(name), headers):
            defs.setdefault(name, set()).add(module(path))
    return defs


def graph():
    files = list(sources())
    defs = definitions(files)
    edges, why = {}, {}
    for src in files:
        with open(os.path.join(ROOT, src), encoding="utf-8") as fh:
            text = fh.read()
        m = module(src)
        edges.setdefault(m, set())
        for name in INCLUDE.findall(text):
            hdr = resolve(src, name)
            if not hdr or hdr in ANYWHERE:
                continue
            if module(hdr) != m:
                edges[m].add(module(hdr))
                why.setdefault((m, module(hdr)), "#include \"%s\"" % name)
        # Uses in a .c file (a header's prototypes are declarations); a
        # name this module defines itself (a plugin and its stub) is its
        # own.
        names = IDENT.findall(NOISE.sub(" ", text)) if src.endswith(".c") \
            else ()
        for name in set(names):
            if m in defs.get(name, ()):
                continue
            for d in defs.get(name, ()):
                if d + ".h" not in ANYWHERE:
                    edges[m].add(d)
                    why.setdefault((m, d), name)
    return edges, why


def circles(edges):
    index, low, on, stack, out = {}, {}, set(), [], []
    sys.setrecursionlimit(10000)

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def path_around(edges, why, comp):
    """One cycle through comp's first module (breadth-first)."""
    start, inside = comp[0], set(comp)
    prev, todo = {start: None}, [start]
    while todo:
        v = todo.pop(0)
        for w in sorted(edges[v]):
            if w == start:
                p = [v]
                while prev[p[-1]]:
                    p.append(prev[p[-1]])
                p = list(reversed(p)) + [start]
                return [p[0]] + ["(%s) %s" % (why[(p[i], p[i + 1])], p[i + 1])
                                 for i in range(len(p) - 1)]
            if w in inside and w not in prev:
                prev[w] = v
                todo.append(w)
    return comp


def main():
    if not shutil.which("ctags"):
        sys.exit("circles.py: no ctags on PATH (Debian: universal-ctags, "
                 "tests/deps/debian-packages.txt)")
    edges, why = graph()
    found = circles(edges)
    for comp in found:
        print("circle: " + " -> ".join(path_around(edges, why, comp)))
    print("%d circles (%d modules)" % (len(found), len(edges)))
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
