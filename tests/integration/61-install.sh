#!/bin/bash
# 61-install.sh - the library as sites embed it: `make install` into a
# temporary prefix; docs/examples/site-wrapper.c built against the installed
# library with pkg-config (shared and static) and run on the tiny image;
# exported symbols are mpictr_* only (no libc symbol: the PMIx guard
# reaches libpmix through its own relocation slots) and the soname is set; every long
# option of `mpictr --help` is in the man page, which is installed.
. "$(dirname "$0")/lib.sh"

P=$T_TMP/prefix
SO=$ROOT/build/libmpictr.so.0.1.0
WRAP=$ROOT/docs/examples/site-wrapper.c

# ---- the shared library ------------------------------------------------------
ok "soname is libmpictr.so.0" bash -c "readelf -d '$SO' | grep -q 'Library soname: \[libmpictr.so.0\]'"
nm -D --defined-only "$SO" | awk '$2 ~ /^[TDBRVW]$/ {print $3}' | sed 's/@.*//' >"$T_TMP/syms"
ok "exports public functions" grep -qx mpictr_config_load_site "$T_TMP/syms"
ok "exported symbols are mpictr_* only" bash -c "! grep -v -e '^mpictr_' '$T_TMP/syms'"
ok "... and no symbol of libc's version (no accept interposed)" bash -c "! nm -D --defined-only '$SO' | grep -q '@@GLIBC_'"
# every MPICTR_PUBLIC function of the header is exported
grep -o 'mpictr_[a-z_0-9]*(' "$ROOT/runtime/mpictr.h" | tr -d '(' | sort -u >"$T_TMP/decl"
ok "every function declared in mpictr.h is exported" bash -c "sort -u '$T_TMP/syms' | comm -23 '$T_TMP/decl' - | { ! grep .; }"

# ---- man page and --help ---------------------------------------------------------
"$MPICTR" --help | grep -o -- '--[a-z][a-z-]*' | sort -u >"$T_TMP/opts"
ok "--help lists long options" test "$(wc -l <"$T_TMP/opts")" -gt 15
missing=
while read -r o; do
	# groff spells every '-' of an option '\-'
	grep -qF -- "${o//-/\\-}" "$ROOT/docs/mpictr.1" || missing="$missing $o"
done <"$T_TMP/opts"
ok "every long option of --help is in docs/mpictr.1${missing:+ (missing:$missing)}" test -z "$missing"
for v in MPICTR_CONF MPICTR_ENV_ MPICTR_JOIN MPICTR_SYSROOT MPICTR_TEST_SITE_CONF; do
	ok "man page documents $v" grep -q "$v" "$ROOT/docs/mpictr.1"
done
ok "man page documents exit codes 126, 127, 255" bash -c "grep -q '^126' '$ROOT/docs/mpictr.1' && grep -q '^127' '$ROOT/docs/mpictr.1' && grep -q '^255' '$ROOT/docs/mpictr.1'"
if command -v man >/dev/null && command -v groff >/dev/null; then
	ok "man page renders without warnings" bash -c "[ -z \"\$(LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -l '$ROOT/docs/mpictr.1' 2>&1 >/dev/null)\" ]"
else
	skip "man page renders without warnings" "man or groff not installed"
fi

# ---- make install into a temporary prefix --------------------------------------
ok "make install PREFIX=tmp" env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s -C "$ROOT" install PREFIX="$P"
ok "installed: header, both libraries, pc file, man page, CLI" bash -c "cd '$P' && test -f include/mpictr.h -a -f lib/libmpictr.a \
	-a -L lib/libmpictr.so.0 -a -f lib/pkgconfig/mpictr.pc -a -f share/man/man1/mpictr.1 -a -x bin/mpictr"
export PKG_CONFIG_PATH=$P/lib/pkgconfig
ok "pkg-config names the temporary prefix" bash -c "pkg-config --cflags mpictr | grep -q -- '-I$P/include'"
ok "pkg-config --static lists the private dependency (libcap), not libmount (unused)" bash -c "pkg-config --static --libs mpictr | grep -q -- -lcap &&
	! pkg-config --static --libs mpictr | grep -q -- -lmount"
ok "plugins installed in lib/mpictr: PMIx and squashfuse stay out of the library" bash -c "cd '$P' && test -f lib/mpictr/mpictr-pmix.so -a -f lib/mpictr/mpictr-squash.so &&
	! readelf -d lib/libmpictr.so.0 | grep NEEDED | grep -q -e squashfuse -e pmix -e fuse &&
	! readelf -d bin/mpictr | grep NEEDED | grep -q -e squashfuse -e pmix -e fuse &&
	readelf -d lib/mpictr/mpictr-pmix.so | grep NEEDED | grep -q pmix"
ok "the verify plugins installed: OpenSSL and RNP stay out of the library, RNP out of mpictr-verify.so" bash -c "cd '$P' && test -f lib/mpictr/mpictr-verify.so -a -f lib/mpictr/mpictr-verify-pgp.so &&
	! readelf -d lib/libmpictr.so.0 | grep NEEDED | grep -q -e libcrypto -e librnp &&
	! readelf -d bin/mpictr | grep NEEDED | grep -q -e libcrypto -e librnp &&
	readelf -d lib/mpictr/mpictr-verify.so | grep NEEDED | grep -q libcrypto &&
	! readelf -d lib/mpictr/mpictr-verify.so | grep NEEDED | grep -q librnp &&
	readelf -d lib/mpictr/mpictr-verify-pgp.so | grep NEEDED | grep -q librnp"
if [ -f "$ROOT/build/plugins/mpictr-spank.so" ]; then
	ok "the SPANK plugin installed beside them (lib/mpictr/mpictr-spank.so)" test -f "$P/lib/mpictr/mpictr-spank.so"
else
	need "the SPANK plugin installed beside them" "not built: Slurm's spank.h (libslurm-dev) is missing"
fi
ok "installed header compiles alone (C and C++)" bash -c "echo '#include <mpictr.h>' | cc -x c -std=c99 -Wall -Werror -fsyntax-only \$(pkg-config --cflags mpictr) - &&
	{ ! command -v c++ >/dev/null || echo '#include <mpictr.h>' | c++ -x c++ -Wall -Werror -fsyntax-only \$(pkg-config --cflags mpictr) -; }"
ok "site wrapper builds against the shared library" bash -c "cc -Wall -Wextra -Werror -o '$T_TMP/w-shared' '$WRAP' \$(pkg-config --cflags --libs mpictr)"
ok "... and needs libmpictr.so.0 only (private dependencies stay private)" bash -c "readelf -d '$T_TMP/w-shared' | grep NEEDED | grep -q 'libmpictr.so.0' &&
	! readelf -d '$T_TMP/w-shared' | grep NEEDED | grep -q -e squashfuse -e pmix"
ok "site wrapper builds static against libmpictr.a (pkg-config --static)" bash -c "cc -Wall -Werror -o '$T_TMP/w-static' '$WRAP' \$(pkg-config --cflags mpictr) \
	\$(pkg-config --static --libs mpictr | sed 's/-lmpictr/-Wl,-Bstatic -lmpictr -Wl,-Bdynamic/')"
ok "... without a libmpictr.so dependency" bash -c "! readelf -d '$T_TMP/w-static' | grep NEEDED | grep -q libmpictr"

require_userns_fuse
require_images tiny
mkdir -p "$T_TMP/scratch" && echo scratch-ok >"$T_TMP/scratch/marker"
export SITE_SCRATCH=$T_TMP/scratch
T="timeout -k 5 60"
ok "shared wrapper runs a job: its bind and env are there" bash -c "[ \"\$(LD_LIBRARY_PATH='$P/lib' $T '$T_TMP/w-shared' '$IMG/tiny.sif' sh -c 'cat /scratch/marker; echo \$SITE_WRAPPER')\" = 'scratch-ok
0.1.0' ]"
ok_status "static wrapper passes the job's exit status" 7 $T "$T_TMP/w-static" "$IMG/tiny.sif" sh -c 'exit 7'
ok "wrapper's dry-run plan has its bind" bash -c "SITE_WRAPPER_DRY_RUN=1 '$T_TMP/w-static' '$IMG/tiny.sif' true | grep -q '\"target\": \"/scratch\"'"
ok_status "wrapper reports library errors (missing image: 255)" 255 "$T_TMP/w-static" "$T_TMP/none.sif" true
ok "installed CLI runs a job from its prefix" bash -c "[ \"\$($T '$P/bin/mpictr' '$IMG/tiny.sif' cat /probe/marker)\" = 'tiny image: marker file' ]"
# An MPI job through the installed PMIx plugin (and its connection gate).
if MPI_IMG=$(test_images mpi); then
	ok "installed CLI runs an MPI job (-n 2, installed PMIx plugin)" bash -c "[ \"\$($T '$P/bin/mpictr' -n 2 '$MPI_IMG/mpi.sif' /opt/mpictr/bin/hello | grep -c '^hello rank')\" = 2 ]"
	# libmpictr.so serves PMIx with its guard in front of libpmix, though
	# it exports no accept(): the wrapper linked against it, -n 2
	ok "shared wrapper serves PMIx (-n 2 MPI job, guard in libpmix's slot)" bash -c "[ \"\$(LD_LIBRARY_PATH='$P/lib' $T '$T_TMP/w-shared' -n 2 '$MPI_IMG/mpi.sif' /opt/mpictr/bin/hello | grep -c '^hello rank')\" = 2 ]"
else
	need "mpi image" "tests/images/build.sh failed"
fi
missing_plugin() {
	mv "$P/lib/mpictr" "$P/lib/mpictr.off"
	$T "$P/bin/mpictr" "$IMG/tiny.sif" true
	local rc=$?
	mv "$P/lib/mpictr.off" "$P/lib/mpictr"
	[ $rc = 255 ]
}
ok "a missing plugin: exit 255, the message names the plugin and where it was looked for" bash -c "$(declare -f missing_plugin); P='$P' IMG='$IMG' T='$T' missing_plugin 2>&1 | grep -q \"plugin 'mpictr-squash.so' not found (looked for .*$P/lib/mpictr/mpictr-squash.so\""
# `make install PREFIX=...` rebuilt the tree's objects with the prefix's
# paths compiled in: rebuild them with the default ones, so that the tree
# is as the tests after this one expect (90-spank.sh compares the SPANK
# plugin root installed from it, byte for byte)
ok "the tree rebuilt with its default paths" env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s -C "$ROOT" all
done_testing
