#!/usr/bin/env python3
"""interleave.py - run benchmark variants round-robin and record them.

This class of VM drifts by up to 4x for minutes, so variants are never run
in blocks: every round runs each variant once, and the start of the order
rotates by one each round (no variant always runs right after another).

usage: interleave.py [options] VARIANTS-FILE OUT.json

VARIANTS-FILE has one variant per line: `NAME COMMAND ARGS...` (shell
words, no shell is started: leading NAME=VALUE words of COMMAND are added to
the environment, like env(1)). Lines starting with # are ignored.

options:
  --rounds N     measured rounds (default 5)
  --warmup N     unmeasured rounds first (default 1)
  --timeout S    per run; the run's process group is killed after it (120)
  --capture      keep each run's stdout in the JSON (for parsing)

OUT.json: {"order": [names], "rounds": N, "variants": {NAME: {"cmd": str,
"times": [seconds of successful runs], "fail": count, "errors": [first
lines of stderr of failed runs], "stdout": [stdout of successful runs]}}}
Exit status 0 even when runs fail (the caller decides what a failure means).
"""
import json
import os
import shlex
import signal
import subprocess
import sys
import time


def parse_variants(path):
    out = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            words = shlex.split(line)
            name, argv = words[0], words[1:]
            env = {}
            while argv and "=" in argv[0] and not argv[0].startswith("/"):
                k, v = argv.pop(0).split("=", 1)
                env[k] = v
            out.append((name, env, argv, line[len(name):].strip()))
    return out


def run_once(env, argv, timeout, capture):
    full = dict(os.environ)
    full.update(env)
    t0 = time.perf_counter()
    try:
        p = subprocess.Popen(argv, env=full, stdin=subprocess.DEVNULL,
                             stdout=subprocess.PIPE if capture else subprocess.DEVNULL,
                             stderr=subprocess.PIPE, start_new_session=True)
    except OSError as e:
        return None, "", str(e)
    try:
        out, err = p.communicate(timeout=timeout)
        dt = time.perf_counter() - t0
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.communicate()
        return None, "", "timed out after %ss" % timeout
    out = out.decode(errors="replace") if out else ""
    err = err.decode(errors="replace") if err else ""
    if p.returncode != 0:
        return None, out, "exit %d: %s" % (p.returncode, " | ".join(err.strip().splitlines()[-3:]))
    return dt, out, err


def main():
    args = sys.argv[1:]
    rounds, warmup, timeout, capture = 5, 1, 120.0, False
    while args and args[0].startswith("--"):
        o = args.pop(0)
        if o == "--rounds":
            rounds = int(args.pop(0))
        elif o == "--warmup":
            warmup = int(args.pop(0))
        elif o == "--timeout":
            timeout = float(args.pop(0))
        elif o == "--capture":
            capture = True
        else:
            sys.exit("interleave.py: unknown option %s" % o)
    if len(args) != 2:
        sys.exit(__doc__)
    variants = parse_variants(args[0])
    res = {"order": [v[0] for v in variants], "rounds": rounds, "variants": {}}
    for name, _, _, cmd in variants:
        res["variants"][name] = {"cmd": cmd, "times": [], "fail": 0, "errors": [], "stdout": []}
    n = len(variants)
    for r in range(warmup + rounds):
        measured = r >= warmup
        line = []
        for i in range(n):
            name, env, argv, _ = variants[(i + r) % n]
            v = res["variants"][name]
            dt, out, err = run_once(env, argv, timeout, capture)
            if dt is None:
                v["fail"] += 1
                v["errors"].append(err[:500])
                print("  %s FAILED: %s" % (name, err[:300]), flush=True)
                line.append("%s=FAIL" % name)
                continue
            line.append("%s=%.1f" % (name, dt * 1e3))
            if measured:
                v["times"].append(dt)
                if capture:
                    v["stdout"].append(out)
        tag = "round %d" % (r - warmup + 1) if measured else "warmup"
        print("%-8s ms: %s" % (tag, " ".join(line)), flush=True)
    with open(args[1], "w") as f:
        json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
