#!/usr/bin/env python3
"""keeper-peek.py - try to get namespace fds from a keeper's socket, as the
user running it (tests/integration-root/: another user's attempts).

usage: keeper-peek.py SOCKET [--instance]

--instance sends an instance's JOIN request first (runtime/modes/instance.c); a
join-mode keeper sends its fds unasked. Prints "connect ERRNO TEXT",
"closed ERRNO TEXT" (reset by the keeper) or "got N bytes M fds"; exit 2
when the connect failed, 0 only when fds came, else 1.
"""
import array
import socket
import struct
import sys

s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
try:
    s.connect(sys.argv[1])
except OSError as e:
    print("connect", e.errno, e.strerror)
    sys.exit(2)
try:
    if "--instance" in sys.argv[2:]:
        s.sendall(struct.pack("=II", 0x6d706931, 1))
    msg, anc, _, _ = s.recvmsg(64, socket.CMSG_SPACE(4 * array.array("i").itemsize))
except OSError as e:
    print("closed", e.errno, e.strerror)
    sys.exit(1)
fds = array.array("i")
for level, kind, data in anc:
    if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
        fds.frombytes(data[: len(data) - len(data) % fds.itemsize])
print("got", len(msg), "bytes", len(fds), "fds")
sys.exit(0 if len(fds) else 1)
