#!/usr/bin/env python3
"""dryrun-diff.py - does a rank's environment and view of the mounts equal
what --dry-run of the same command showed? (tests/integration/38-dryrun.sh)

Usage: dryrun-diff.py [--vary-from ENV_A ENV_B] DRY.json ENVIRON MOUNTINFO
  DRY.json   mpictr's --dry-run output for the command, run by the same
             task of the same launch, so that the launcher's variables are
             the same (the rank's: in launch and node daemon mode rank
             0's, in join mode the task's)
  ENVIRON    the rank's /proc/self/environ (NUL-separated), as a shell in
             the container exported it
  MOUNTINFO  the rank's /proc/self/mountinfo
  --vary-from ENV_A ENV_B
             when the dry-run and the rank are two steps of a launch (the
             SPANK plugin's --container-dry-run): the environments of the
             same task in two plain steps (/proc/self/environ); the
             variables that differ between them (the step's id, ports,
             pids) may differ. Each must be a launcher's (below), else the
             comparison fails (exit 2).

Prints each difference and exits 1; exits 0 when there is none. What may
differ, and why (nothing else may):
  - variables the shell sets itself (PWD, SHLVL, _, OLDPWD);
  - variables the image's env scripts set (sourced at exec, step 7 of
    env.h): PATH, and the test images' MPICTR_MPI_IMAGE, TINY_*;
  - variables that the PMI servers add per rank at start (step 6: PMI_*,
    PMIX_*, OMPI_MCA_schizo; a launcher's SLURM_*, OMPI_* and PRTE_*,
    HYDRA_* and MPIR_*), when the dry-run has no value for them;
  - mounts below a dry-run "rbind" target (the host's own submounts); the
    directories that rootfs.c makes writable (a tmpfs on the layer) above a
    target, and the image's entries it binds back into them (at "/": the
    image's top-level directories).
Every dry-run mount that is not a symlink must be a mount point the rank
sees.
"""
import json
import sys

SHELL = {"PWD", "SHLVL", "_", "OLDPWD"}
ENV_SCRIPTS = {"PATH", "MPICTR_MPI_IMAGE", "TINY_IMAGE", "TINY_ORDER"}
PER_RANK = ("PMI_", "PMIX_", "SLURM_", "OMPI_", "PRTE_", "HYDRA_", "MPIR_",
            "HYDI_")


def environ(path):
    with open(path, "rb") as f:
        items = f.read().split(b"\0")
    out = {}
    for it in items:
        if b"=" in it:
            k, v = it.decode("utf-8", "replace").split("=", 1)
            out[k] = v
    return out


def mount_points(path):
    with open(path) as f:
        return {line.split()[4].replace("\\040", " ")
                for line in f if line.strip()}


def above(d, path):
    """Is directory d a proper ancestor of path?"""
    return path != d and path.startswith(d.rstrip("/") + "/")


def varying(a_path, b_path):
    """The names whose values differ between two steps' environments."""
    a, b = environ(a_path), environ(b_path)
    names = {k for k in set(a) | set(b) if a.get(k) != b.get(k)}
    bad = sorted(k for k in names if not k.startswith(PER_RANK))
    if bad:
        print("two steps differ in %s: not a launcher's variable" %
              ", ".join(bad))
        sys.exit(2)
    return names


def main(dry_path, env_path, mnt_path, vary=frozenset()):
    with open(dry_path) as f:
        dry = json.load(f)
    want = dict(kv.split("=", 1) for kv in dry["env"])
    got = environ(env_path)
    diffs = []
    for k in sorted(set(want) | set(got)):
        if k in SHELL or k in ENV_SCRIPTS or k in vary:
            continue
        if k not in got:
            diffs.append("env: %s=%s in the dry-run, unset in the rank" %
                         (k, want[k]))
        elif k not in want:
            if not k.startswith(PER_RANK):
                diffs.append("env: %s=%s in the rank, not in the dry-run" %
                             (k, got[k]))
        elif want[k] != got[k]:
            diffs.append("env: %s is %r in the dry-run, %r in the rank" %
                         (k, want[k], got[k]))
    seen = mount_points(mnt_path)
    mounts = [m for m in dry["mounts"] if m["options"] != "symlink"]
    targets = {m["target"] for m in mounts}
    rbinds = [m["target"].rstrip("/") + "/" for m in mounts
              if "rbind" in m["options"].split(",")]
    for t in sorted(targets - seen):
        diffs.append("mount: %s in the dry-run, not mounted in the rank" % t)
    for t in sorted(seen - targets):
        if any(t.startswith(r) for r in rbinds):
            continue
        parent = t.rsplit("/", 1)[0] or "/"
        if any(above(t, x) or above(parent, x) for x in targets):
            continue  # made for a bind below it, or the image's entry
            # bound back into such a directory
        diffs.append("mount: %s in the rank, not in the dry-run" % t)
    for d in diffs:
        print(d)
    return 1 if diffs else 0


if __name__ == "__main__":
    args = sys.argv[1:]
    vary = frozenset()
    if args[:1] == ["--vary-from"] and len(args) == 6:
        vary = varying(args[1], args[2])
        args = args[3:]
    if len(args) != 3:
        sys.exit(__doc__)
    sys.exit(main(*args, vary=vary))
