# lib.sh - TAP helpers for the integration tests (sourced).
#
#   ok DESC CMD...        passes when CMD exits 0
#   ok_fail DESC CMD...   passes when CMD exits non-zero
#   ok_status DESC N CMD...  passes when CMD exits with status N
#   check DESC COND-CMD...  same as ok, for [ ] / grep style checks
#   skip DESC REASON      hardware this machine lacks: always a skip
#   need DESC REASON      an environment requirement: a skip on a
#                         developer machine, a failure under CI=true
# Every test prints its output on failure, indented with '# '.
set -u
ROOT=${MPICTR_TEST_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
MPICTR=$ROOT/build/mpictr
export MPICTR ROOT
T_N=0
T_FAIL=0
T_TMP=$(mktemp -d "${TMPDIR:-/tmp}/mpictr-test.XXXXXX")
T_OUT=$T_TMP/.out
t_cleanup() { rm -rf "$T_TMP" 2>/dev/null; }
trap t_cleanup EXIT

t_report() { # DESC RESULT(0/1)
	T_N=$((T_N + 1))
	if [ "$2" = 0 ]; then
		echo "ok $T_N - $1"
	else
		T_FAIL=$((T_FAIL + 1))
		echo "not ok $T_N - $1"
		sed -n '1,40s/^/#   /p' "$T_OUT"
	fi
}
ok() { local d=$1; shift; "$@" >"$T_OUT" 2>&1; t_report "$d" $(($? != 0)); }
check() { ok "$@"; }
ok_fail() { local d=$1; shift; "$@" >"$T_OUT" 2>&1; t_report "$d" $(($? == 0)); }
ok_status() {
	local d=$1 want=$2 got; shift 2
	"$@" >"$T_OUT" 2>&1; got=$?
	[ "$got" = "$want" ] || echo "exit status $got, expected $want" >>"$T_OUT"
	t_report "$d" $((got != want))
}
skip() { T_N=$((T_N + 1)); echo "ok $T_N - $1 # SKIP $2"; }
need() {
	if [ "${CI:-}" = true ]; then
		echo "required under CI but missing: $2" >"$T_OUT"
		t_report "$1" 1
	else
		skip "$1" "$2"
	fi
}
# Print the output of the last command (for extra assertions).
last_out() { cat "$T_OUT"; }
done_testing() { echo "1..$T_N"; [ "$T_FAIL" = 0 ]; }

# run NAME CMD...: CMD (under $T, a timeout prefix, when set) with its
# output in $W/out.NAME, then printed; CMD's status.
run() {
	local n=$1 rc
	shift
	${T:-} "$@" >"$W/out.$n" 2>&1
	rc=$?
	cat "$W/out.$n"
	return $rc
}
# settle TENTHS CMD...: run CMD every 0.1 s until it prints nothing, at most
# TENTHS times; 1 (with CMD's last output) when it never did.
settle() {
	local n=$1 i
	shift
	for i in $(seq "$n"); do
		[ -z "$("$@")" ] && return 0
		sleep 0.1
	done
	"$@"
	return 1
}

# Environment probes.
have_userns() { unshare -U true 2>/dev/null; }
have_fuse() { [ -r /dev/fuse ] && [ -w /dev/fuse ]; }

# Skip preambles: each ends the script right there (a `need`, so a skip,
# or a failure under CI=true, then done_testing) unless the machine has
# what the rest of the script needs. DESC and REASON replace the defaults.
#   require_userns [DESC REASON]       unprivileged user namespaces
#   require_fuse DESC REASON           /dev/fuse usable
#   require_userns_fuse [DESC REASON]  both, as one requirement
#   require_images NAME [VAR]          test_images NAME, its directory in
#                                      $VAR (IMG when not given)
require_userns() {
	have_userns && return 0
	need "${1:-user namespaces}" "${2:-unprivileged user namespaces are not available}"
	done_testing; exit
}
require_fuse() {
	have_fuse && return 0
	need "$1" "$2"
	done_testing; exit
}
require_userns_fuse() {
	have_userns && have_fuse && return 0
	need "${1:-user namespaces and FUSE}" "${2:-unprivileged user namespaces or /dev/fuse are not usable}"
	done_testing; exit
}
# require_two_users A V [RUNNER]: tests/integration-root/ preamble: root,
# both test users, and user namespaces plus /dev/fuse usable by RUNNER
# (default V), as .ci/run sets them up.
require_two_users() {
	local a=$1 v=$2 u=${3:-$2}
	if [ "$(id -u)" != 0 ]; then
		need "run as root" "tests/integration-root/ needs root (make check-root)"
		done_testing; exit
	fi
	if ! id "$v" >/dev/null 2>&1 || ! id "$a" >/dev/null 2>&1; then
		need "users $a and $v" "the test users (.ci/run creates them)"
		done_testing; exit
	fi
	if ! runuser -u "$u" -- unshare -U true 2>/dev/null || ! [ -w /dev/fuse ] || [ "$(stat -c %a /dev/fuse)" != 666 ]; then
		need "user namespaces and /dev/fuse for $u" "unprivileged user namespaces and /dev/fuse mode 0666"
		done_testing; exit
	fi
}
require_images() {
	local dir desc="$1 image"
	[ "$1" = all ] && desc="test images"
	dir=$(test_images "$1") || { need "$desc" "tests/images/build.sh failed"; done_testing; exit; }
	printf -v "${2:-IMG}" '%s' "$dir"
}

# Build (if needed) and print the directory holding the test images:
# test_images tiny|mpi|all. Images live in build/images, shared by tests.
test_images() {
	local dir=${MPICTR_TEST_IMAGES:-$ROOT/build/images}
	if ! "$ROOT/tests/images/build.sh" "$dir" "${1:-all}" >"$T_TMP/images.log" 2>&1; then
		sed 's/^/# /' "$T_TMP/images.log" >&2
		return 1
	fi
	echo "$dir"
}

# Processes that carry this test's marker in their environment (mpictr's
# holder, janitor, FUSE workers, keeper and ranks all inherit it), so
# leftover checks see only what this test started, not other jobs of the
# same user on the machine.
export T_MARKER_MPICTR=$$
marked_procs() {
	local p
	for p in /proc/[0-9]*; do
		[ "${p#/proc/}" = "$$" ] && continue
		[ "${p#/proc/}" = "$BASHPID" ] && continue
		tr '\0' '\n' <"$p/environ" 2>/dev/null | grep -qx "T_MARKER_MPICTR=$T_MARKER_MPICTR" &&
			echo "${p#/proc/} $(tr '\0' ' ' <"$p/cmdline" 2>/dev/null)"
	done
}
# A private TMPDIR for mpictr's job directories, so a leftover check can
# look at this test's alone (not for tests that pass it to srun: nodes
# have private /tmp directories).
private_tmpdir() { export TMPDIR=$T_TMP/tmpdir; mkdir -p "$TMPDIR"; }
