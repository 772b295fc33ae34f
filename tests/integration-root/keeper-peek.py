#!/usr/bin/env python3
"""keeper-peek.py - try to get namespace fds from a keeper's socket, as the
user running it (tests/integration-root/: another user's attempts).

usage: keeper-peek.py SOCKET [--instance | --claim RANK SIZE]

Sends a JOIN request (runtime/modes/wire.c: magic "mpw1", op 1, the payload's
length, 0): --instance with no payload (an instance's), --claim with join
mode's claim of local rank RANK of SIZE (default: --claim 4294967295
4294967295, neither known). Prints "connect ERRNO TEXT",
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
    args = sys.argv[2:]
    if "--instance" in args:
        payload = b""
    elif "--claim" in args:
        i = args.index("--claim")
        payload = struct.pack("=II", int(args[i + 1]), int(args[i + 2]))
    else:
        payload = struct.pack("=II", 0xFFFFFFFF, 0xFFFFFFFF)
    s.sendall(struct.pack("=IIII", 0x6d707731, 1, len(payload), 0) + payload)
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
