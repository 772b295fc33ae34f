#!/bin/bash
# 57-pmi-single-users.sh - the PMI-1 service of a single process
# (pmi/pmi1_single.c: PMI_PORT on 127.0.0.1, which any local user can
# reach) answers only the job user's connections. The victim V runs
# `mpictr exec tiny.sif` (no -n, no launcher); the other user A connects
# to its PMI_PORT and sends MPICH's first line: A gets no answer, V does.
# Run as root, which only switches users.
. "$(dirname "$0")/../integration/lib.sh"

V=${MPICTR_TEST_VICTIM:-mpictr-test} A=${MPICTR_TEST_ATTACKER:-mpictr-test2}
require_two_users "$A" "$V" "$V"
require_images tiny
W=$T_TMP
chmod 0755 "$W"
cd "$W" || exit 1
as() { local u=$1; shift; runuser -u "$u" -- env HOME="$(getent passwd "$u" | cut -d: -f6)" "$@"; }

# V's single process writes its PMI_PORT where root reads it, then waits
# for the test's end (the file done)
as "$V" timeout -k 5 60 "$MPICTR" exec "$IMG/tiny.sif" sh -c "echo \$PMI_PORT >'$W/port.tmp'; mv '$W/port.tmp' '$W/port'; while [ ! -e '$W/done' ]; do sleep 0.1; done" >"$W/job" 2>&1 &
JOB=$!
chmod 0777 "$W"
for _ in $(seq 200); do [ -s "$W/port" ] && break; sleep 0.1; done
PORT=$(cat "$W/port" 2>/dev/null)
check "V's single process has a PMI_PORT on 127.0.0.1" bash -c "[[ '$PORT' =~ ^127\.0\.0\.1:[0-9]+\$ ]]"
# CLIENT: connect, send MPICH's init line, print what comes back in 2 s
cat >"$W/client.py" <<'PY'
import socket, sys
host, port = sys.argv[1].split(":")
s = socket.create_connection((host, int(port)), timeout=5)
s.sendall(b"cmd=init pmi_version=1 pmi_subversion=1\n")
s.settimeout(2)
try:
    print(s.recv(4096).decode(errors="replace"), end="")
except (socket.timeout, ConnectionResetError):
    pass
PY
chmod 0644 "$W/client.py"
as "$A" python3 "$W/client.py" "$PORT" >"$W/a.out" 2>&1
check "A (another user) connecting to V's PMI_PORT gets no answer" bash -c "cat '$W/a.out'; ! grep -q 'cmd=response_to_init' '$W/a.out'"
as "$V" python3 "$W/client.py" "$PORT" >"$W/v.out" 2>&1
check "... while V's own connection is answered (the service works)" grep -q 'cmd=response_to_init' "$W/v.out"
touch "$W/done"
wait "$JOB"
check "... and V's job ends with 0" test $? = 0
done_testing
