#!/usr/bin/env python3
"""names.py - every file a comment or a doc names exists (make check).

Reads the comments of the sources (C's /* */ and //, the # comments of
shell, Python, the Makefile and the linker maps) and the whole text of
docs/*.md and README.md, and takes each name of a file there (foo.c,
modes/launch.h, tests/integration/35-join.sh: .c .h .sh .py .md .map). A
name is found when it is a path from the top of the tree, from runtime/,
from tests/ or from the naming file's folder; a bare name (foo.c) when a
file of the tree has that name, or, for a header, one of the system's
(/usr/include). A path whose first folder is none of the tree's is
another project's (src/libcrun/linux.c) and not checked; neither is a
pattern (check_<module>.c, fuzz_*.c, NN-topic.sh). Other projects' bare
names are listed in EXTERNAL below, each with whose it is.

Prints each stale name with where it stands and exits 1; prints "0 stale
file names" otherwise. Usage: tests/tools/names.py [ROOT]
"""
import os
import re
import sys

ROOT = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else ".")
SOURCE_DIRS = ["runtime", "sif", "pmi", "tests", ".ci"]
SOURCE_EXT = (".c", ".h", ".sh", ".py", ".map", ".bats")
SKIP_DIRS = {".git", "build", "corpus"}
NAME = re.compile(r'(?<![\w./<>*{}$-])((?:[\w.-]+/)*[\w-]+\.(?:c|h|sh|py|md|map))'
                  r'(?![\w/*-])')
# A placeholder in a name: a pattern, not a file.
PATTERN = re.compile(r'(^|[/_-])(NN|XX|N|X|NAME|FOO|foo|bar|x|y)([._-]|$)')
C_COMMENT = re.compile(r'/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\])+\'',
                       re.S)
# Other projects' files that the docs and comments compare with, by whose.
EXTERNAL = {
    # squashfuse, OpenPMIx, UCX
    "ll.c", "ll_inode.c", "ptl_base_connection_hdlr.c", "gds_ds12_lock_pthread.c",
    "mm_posix.c", "cma_ep.c",
    # Apptainer's environment scripts in an image (/.singularity.d/env/)
    "90-environment.sh",
    # Enroot's hook for apt under its remapped root
    "10-aptfix.sh",
    # the OCI distribution spec's token.md (its auth/ folder)
    "token.md",
    # the reference notes kept beside the tree (shared/reference/)
    "pmix-server.md", "sif-format.md", "peers.md", "test-env.md",
    "oci-import.md",
    # a user's files in the examples of docs/user.md and docs/slurm.md
    "job.sh", "farm.py",
}


def tree():
    files, names, dirs = set(), set(), set()
    for dirpath, dirnames, fs in os.walk(ROOT):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS)
        rel = os.path.relpath(dirpath, ROOT)
        if rel != ".":
            dirs.add(os.path.basename(rel))
        for f in fs:
            p = os.path.normpath(os.path.join(rel, f))
            files.add(p)
            names.add(f)
    return files, names, dirs


def system_headers():
    out = set()
    for dirpath, _, fs in os.walk("/usr/include"):
        out.update(f for f in fs if f.endswith(".h"))
    return out


def comments(path, text):
    """The comments of a source file, each with its line number."""
    if path.endswith((".c", ".h", ".map")):
        for m in C_COMMENT.finditer(text):
            if m.group(0)[0] in "\"'":
                continue
            line = text.count("\n", 0, m.start()) + 1
            for i, l in enumerate(m.group(0).split("\n")):
                yield line + i, l
        return
    for i, l in enumerate(text.split("\n")):
        # a '#' that starts a comment: at the start or after a blank
        m = re.search(r'(^|\s)#(?![!{#])(.*)', l)
        if m and not l.lstrip().startswith(("#include", "#define")):
            yield i + 1, m.group(2)


def found(token, where, files, names, dirs, sysh):
    if PATTERN.search(os.path.basename(token)) or token.startswith("."):
        return True
    if token.endswith(".h") and os.path.isfile(os.path.join("/usr/include", token)):
        return True
    if "/" in token:
        for base in ("", "runtime", "tests", os.path.dirname(where)):
            if os.path.normpath(os.path.join(base, token)) in files:
                return True
        # another project's path, unless it starts in one of ours
        first = token.split("/")[0]
        return first not in dirs and first not in SOURCE_DIRS + ["docs"]
    if token in names or token in EXTERNAL:
        return True
    return token.endswith(".h") and token in sysh


def main():
    files, names, dirs = tree()
    sysh = system_headers()
    checked = []
    for f in sorted(files):
        top = f.split(os.sep)[0]
        if f == "README.md" or (top == "docs" and f.endswith(".md")):
            with open(os.path.join(ROOT, f), encoding="utf-8") as fh:
                checked += [(f, i + 1, l) for i, l in enumerate(fh.read().split("\n"))]
        elif (top in SOURCE_DIRS and f.endswith(SOURCE_EXT)) or \
                f in ("Makefile", ".ci/run") or (top == "runtime" and f.endswith(".map")):
            with open(os.path.join(ROOT, f), encoding="utf-8", errors="replace") as fh:
                checked += [(f, n, l) for n, l in comments(f, fh.read())]
    stale = 0
    for f, n, text in checked:
        for m in NAME.finditer(text):
            if not found(m.group(1), f, files, names, dirs, sysh):
                print("%s:%d: names %s, which is not in the tree" % (f, n, m.group(1)))
                stale += 1
    print("%d stale file names" % stale)
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
