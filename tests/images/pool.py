"""pool.py - mpi4py.futures.MPIPoolExecutor under mpictr (88-spawn.sh): the
pool spawns 2 workers (MPI_Comm_spawn of python3); every task reports the
worker's pid and user namespace."""
import os
import time

from mpi4py.futures import MPIPoolExecutor


def task(x):
    time.sleep(0.05)  # both workers get tasks
    return x * x, os.getpid(), os.readlink("/proc/self/ns/user")


if __name__ == "__main__":
    me = os.readlink("/proc/self/ns/user")
    with MPIPoolExecutor(max_workers=2) as ex:
        res = list(ex.map(task, range(10)))
    pids = {r[1] for r in res}
    same = all(r[2] == me for r in res) and os.getpid() not in pids
    print("pool sum %d workers %d userns %s"
          % (sum(r[0] for r in res), len(pids), "same" if same else "DIFFERENT"))
