#!/bin/sh
# selftest.sh - the architecture checks can fail (make check). Each check
# of tests/tools/ runs on a copy of the tree, first clean (it must pass),
# then with one fault planted (it must fail, naming the fault):
#
#   layers.sh   an upward include in runtime/pull/ and in runtime/spank/, a
#               header spank's row does not name,
#               a relative include, a folder without a row, the table of
#               docs/architecture.md narrowed (the script reads it)
#   circles.py  an include that closes a circle (pull/ -> modes/ -> pull/)
#   names.py    a comment naming a missing file, a doc naming one
#   voice.sh    a doc that says who measured, a machine's absolute path
#   docmap.sh   a source file missing from the module map
#   forks.sh    a fork outside proc.c, a second one in the SPANK plugin
#
# Prints TAP; exits 1 when a check does not do what it says.
# Usage: tests/tools/selftest.sh [ROOT]
cd "${1:-.}" || exit 2
src=$(pwd)
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT

# the tree as the checks read it: tracked and new files, no build output
# nor fuzz corpus
mkdir "$tmp/clean"
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
	git ls-files -co --exclude-standard
else
	find . -path ./build -prune -o -path ./.git -prune -o -type f -print
fi | grep -v '^\(\./\)\?tests/fuzz/corpus/' |
	while IFS= read -r f; do [ -e "$f" ] && printf '%s\n' "$f"; done |
	tar cf - -T - | tar xf - -C "$tmp/clean" || exit 2

n=0
fails=0
tap() { # tap OK TEXT
	n=$((n + 1))
	if [ "$1" = 0 ]; then echo "ok $n - $2"; else
		echo "not ok $n - $2"
		fails=$((fails + 1))
	fi
}

run() { # run CHECK: the check on $tmp/t, its output in $tmp/out
	case $1 in
	*.py) python3 "$src/tests/tools/$1" "$tmp/t" >"$tmp/out" 2>&1 ;;
	*) sh "$src/tests/tools/$1" "$tmp/t" >"$tmp/out" 2>&1 ;;
	esac
}

fresh() {
	rm -rf "$tmp/t"
	cp -a "$tmp/clean" "$tmp/t"
}

# planted CHECK EXPECT WHAT: the fault planted by the commands on stdin
# (run in the copy) makes CHECK fail with EXPECT in its output
planted() {
	fresh
	(cd "$tmp/t" && sh -e) || {
		tap 1 "$1: plant $3"
		return
	}
	run "$1"
	rc=$?
	if [ $rc -eq 1 ] && grep -qF -- "$2" "$tmp/out"; then tap 0 "$1 fails on $3"; else
		tap 1 "$1 fails on $3 (rc $rc)"
		sed 's/^/# /' "$tmp/out"
	fi
}

for c in layers.sh circles.py names.py voice.sh docmap.sh forks.sh; do
	fresh
	run $c
	rc=$?
	tap $rc "$c passes on the tree"
	[ $rc -eq 0 ] || sed 's/^/# /' "$tmp/out"
done

planted layers.sh runtime/pull/cache.c "an upward include in runtime/pull/" <<'EOF'
sed -i '1i #include "modes/launch.h"' runtime/pull/cache.c
EOF
planted layers.sh runtime/spank/mpictr_spank.c "an upward include in runtime/spank/" <<'EOF'
sed -i '1i #include "plan/plan.h"' runtime/spank/mpictr_spank.c
EOF
planted layers.sh runtime/host/ucx.c "a relative include" <<'EOF'
sed -i '1i #include "../plan/plan.h"' runtime/host/ucx.c
EOF
planted layers.sh runtime/cli "a CLI verb's file with an internal header" <<'EOF'
mkdir -p runtime/cli
printf '#include "mpictr.h"\n#include "common/util.h"\n' >runtime/cli/verb.c
EOF
planted layers.sh "no row in the layers table of docs/architecture.md: runtime/newdir" \
	"a folder without a row" <<'EOF'
mkdir runtime/newdir
touch runtime/newdir/new.c
EOF
planted layers.sh 'runtime/spank/mpictr_spank.c:1:#include "config/config.h"' \
	"a header spank's row does not name, of a folder it uses" <<'EOF'
sed -i '1i #include "config/config.h"' runtime/spank/mpictr_spank.c
EOF
planted layers.sh '#include "config/imageref.h"' "the table narrowed in docs/architecture.md" <<'EOF'
sed -i 's|^\(runtime/spank: .*\) config/imageref.h|\1|' docs/architecture.md
! grep -q '^runtime/spank: .*config/imageref.h' docs/architecture.md
EOF
planted circles.py "1 circles" "an include from runtime/pull/ that closes a circle" <<'EOF'
sed -i 's|^#include "common/error.h"|#include "common/error.h"\n#include "modes/instance.h"|' runtime/pull/pull.h
grep -q modes/instance.h runtime/pull/pull.h
EOF
planted names.py "names gone.c" "a comment naming a missing file" <<'EOF'
sed -i '1s|^/\* \([a-z_]*\.c\) - |/* \1 (was gone.c) - |' runtime/pull/image.c
grep -q gone.c runtime/pull/image.c
EOF
planted names.py "names runtime/pull/removed.c" "a doc naming a missing file" <<'EOF'
echo 'The manifest parser is `runtime/pull/removed.c`.' >>docs/pull.md
EOF
planted names.py "names modes/gone.h" "a test naming a missing file" <<'EOF'
echo '# as modes/gone.h says' >>tests/integration/lib.sh
EOF
planted voice.sh "other engineers" "a doc that says who measured" <<'EOF'
echo 'Measured while other engineers ran their tests.' >>docs/pull.md
EOF
planted voice.sh "this session" "a doc that speaks of its session" <<'EOF'
echo '### Tried this session' >>README.md
EOF
planted voice.sh "/home/alice/" "a doc naming a home directory" <<'EOF'
echo 'See /home/alice/notes.md.' >>docs/pull.md
EOF
planted voice.sh "/var/tmp/wt/" "a doc naming a machine's scratch path" <<'EOF'
echo 'The reference lies in /var/tmp/wt/shared.' >>docs/pull.md
EOF
# ... but a session in its technical sense is the project's own word
fresh
printf 'The janitor runs in its own session; the FUSE session; a login session.\n' >>"$tmp/t/docs/pull.md"
run voice.sh
tap $? "voice.sh passes on login, FUSE and own sessions"
planted docmap.sh "runtime/pull/oci2.c" "a source file missing from the module map" <<'EOF'
touch runtime/pull/oci2.c
EOF

planted forks.sh "runtime/modes/save.c" "a fork outside proc.c" <<'EOF'
printf 'static int f(void) { return fork(); }\n' >>runtime/modes/save.c
EOF
planted forks.sh "runtime/spank/mpictr_spank.c" "a second fork in the SPANK plugin" <<'EOF'
printf 'static int g(void) { return vfork (); }\n' >>runtime/spank/mpictr_spank.c
EOF

echo "1..$n"
[ $fails -eq 0 ]
