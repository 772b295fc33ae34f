#!/bin/bash
# quickstart.sh - the first command for a new user on a fresh Debian 12
# machine, run from the source tree:
#
#     tests/quickstart.sh
#
# 1. installs the Debian packages of tests/deps/debian-packages.txt (with
#    sudo unless run as root), 2. makes /dev/fuse usable by users (0666, as
#    udev does; only if it is not), 3. builds mpictr (make), 4. builds the
#    example MPI image build/images/mpi.sif, 5. runs the main job: 4 ranks
#    of an MPI hello, then a 2-rank ping-pong up to 1 MiB, in the image.
# QUICKSTART_SKIP_INSTALL=1 skips step 1 (packages already there).
set -euo pipefail
cd "$(dirname "$0")/.."
step() { printf '\n== %s\n' "$*"; }
die() { echo "quickstart: $*" >&2; exit 1; }

# as root: run directly; otherwise through sudo, or say why we cannot
as_root() {
	if [ "$(id -u)" = 0 ]; then
		"$@"
	elif command -v sudo >/dev/null 2>&1; then
		sudo "$@"
	else
		die "'$*' needs root: run this script as root or install and configure sudo"
	fi
}

[ -r /etc/debian_version ] || echo "quickstart: warning: not a Debian system; package names are Debian 12's" >&2

if [ "${QUICKSTART_SKIP_INSTALL:-0}" != 1 ]; then
	step "installing Debian packages (tests/deps/debian-packages.txt)"
	mapfile -t pkgs < <(grep -v '^#' tests/deps/debian-packages.txt | grep -v '^$')
	missing=()
	for p in "${pkgs[@]}"; do
		dpkg-query -W -f '${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
	done
	if [ ${#missing[@]} -gt 0 ]; then
		as_root env DEBIAN_FRONTEND=noninteractive apt-get update -q
		as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
	else
		echo "all ${#pkgs[@]} packages installed"
	fi
fi

step "FUSE access for users (/dev/fuse)"
if [ ! -e /dev/fuse ]; then
	as_root mknod -m 0666 /dev/fuse c 10 229
elif ! [ -r /dev/fuse ] || ! [ -w /dev/fuse ]; then
	echo "/dev/fuse is $(stat -c %a /dev/fuse): making it 0666 as udev does"
	as_root chmod 0666 /dev/fuse
fi
ls -l /dev/fuse
unshare -U true 2>/dev/null ||
	die "unprivileged user namespaces are disabled: enable them (sysctl kernel.unprivileged_userns_clone=1 or user.max_user_namespaces > 0)"

step "building mpictr (make)"
make -j"$(nproc)"

step "building the example MPI image (build/images/mpi.sif)"
tests/images/build.sh build/images mpi

step "the main job: 4 ranks of hello in the image"
timeout -k 5 120 build/mpictr -n 4 build/images/mpi.sif /opt/mpictr/bin/hello

step "2 ranks of ping-pong, 20 iterations, up to 1 MiB"
timeout -k 5 120 build/mpictr -n 2 build/images/mpi.sif /opt/mpictr/bin/pingpong 20 1048576

step "done: mpictr works on this machine (docs: README.md, man docs/mpictr.1)"
