#!/bin/bash
# mpi4py.sh OUTDIR - the mpi4py test image (used by 88-spawn.sh only): the
# mpi image's root (build.sh) plus the host's python3 and Debian's
# python3-mpi4py, and /opt/mpictr/pool.py. Prints OUTDIR/mpi4py.sqfs.
# A separate image: python3 adds ~40 MB to the 66 MB mpi root, which every
# other test would carry. Idempotent (OUTDIR/mpi4py.stamp), as any user.
set -euo pipefail
umask 022
HERE=$(cd "$(dirname "$0")" && pwd)
[ $# = 1 ] || { echo "usage: mpi4py.sh OUTDIR" >&2; exit 2; }
OUT=$1
PY=$(readlink -f /usr/bin/python3)
PYLIB=/usr/lib/$(basename "$PY")
MPI4PY=/usr/lib/python3/dist-packages/mpi4py
[ -x "$PY" ] && [ -d "$PYLIB" ] && [ -d "$MPI4PY" ] ||
	{ echo "mpi4py.sh: needs python3 and python3-mpi4py" >&2; exit 1; }
"$HERE/build.sh" "$OUT" mpi >&2

hash=$({
	sha256sum "$HERE/mpi4py.sh" "$HERE/pool.py" | cut -d' ' -f1
	cut -d" " -f1 "$OUT/mpi.stamp" # contents, not the SIF
	dpkg-query -W -f '${Package} ${Version}\n' python3 python3-mpi4py "$(basename "$PY")" 2>/dev/null || true
} | sha256sum | cut -d' ' -f1)
if [ "$(cat "$OUT/mpi4py.stamp" 2>/dev/null)" = "$hash" ] && [ -f "$OUT/mpi4py.sqfs" ]; then
	echo "$OUT/mpi4py.sqfs"
	exit 0
fi
exec 9>"$OUT/.lock-mpi4py"
flock -w 600 9
tmp=$OUT/.build-mpi4py
chmod -R u+w "$tmp" 2>/dev/null || true
rm -rf "$tmp"
mkdir -p "$tmp"
cp -a "$OUT/mpi" "$tmp/root"
R=$tmp/root
# the standard library without its tests and GUI/tooling parts
mkdir -p "$R$PYLIB" "$R$MPI4PY"
(cd "$PYLIB" && tar --exclude=./test --exclude=./idlelib --exclude=./tkinter \
	--exclude=./turtledemo --exclude=./ensurepip --exclude=./lib2to3 \
	--exclude=./pydoc_data --exclude=./config-\* -cf - .) | (cd "$R$PYLIB" && tar xf -)
(cd "$MPI4PY" && tar --exclude=./lib-pmpi -cf - .) | (cd "$R$MPI4PY" && tar xf -)
python3 "$HERE/elfclosure.py" copy "$R" "$PY" "$PYLIB"/lib-dynload/*.so "$MPI4PY"/*.so >&2
ln -sf "$(basename "$PY")" "$R/usr/bin/python3"
cp "$HERE/pool.py" "$R/opt/mpictr/pool.py"
python3 "$HERE/elfclosure.py" check "$R" >&2
mksquashfs "$R" "$tmp/mpi4py.sqfs" -noappend -quiet -no-progress -all-root -comp gzip \
	-processors 2 >/dev/null
mv "$tmp/mpi4py.sqfs" "$OUT/mpi4py.sqfs"
chmod -R u+w "$tmp"
rm -rf "$tmp"
echo "$hash" >"$OUT/mpi4py.stamp"
echo "mpi4py.sh: $(du -h "$OUT/mpi4py.sqfs" | cut -f1) $OUT/mpi4py.sqfs" >&2
echo "$OUT/mpi4py.sqfs"
