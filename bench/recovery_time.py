"""Recovery time against log size (issue 6): how long opening a crashed database takes
when the log holds N MiB of records written since the last checkpoint.

For each size: a child process opens a fresh database with durability=async and a
log_size above the target (so no checkpoint recycles the log), puts 100-byte values under
keys from a space of --keys (1,000,000) until the log holds the target, then dies by
SIGKILL. The parent then opens the database with a pool of --recover-pool (--pool unless
given; smaller than the data, replay waits for page misses), which replays the whole log,
and prints the open's wall time and the engine's own recovery figures (stats():
recovered_records, recovered_bytes, recovery_us) and the page misses of the open.

Usage (after `make python-test` built the binding into build/python-venv):
  build/python-venv/bin/python bench/recovery_time.py DIR [--sizes 64,256,1024] [--pool 2G]
      [--keys 1000000] [--recover-pool 256M]
"""

import argparse
import os
import shutil
import signal
import sys
import time

import vmstore


def fill_and_die(path, target_bytes, pool, keys):
    with vmstore.open(path, pool_size=pool, durability="async", log_size="8G") as db:
        tree = db.tree()
        value = b"v" * 100
        i = 0
        while True:
            for _ in range(10000):
                tree[b"%012d" % ((i * 7919) % keys)] = value
                i += 1
            if db.stats()["log_bytes"] >= target_bytes:
                break
        os.kill(os.getpid(), signal.SIGKILL)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--sizes", default="64,256,1024", help="log sizes in MiB")
    ap.add_argument("--pool", default="2G", help="the writer's pool")
    ap.add_argument("--keys", type=int, default=1000000, help="the key space of the writer's puts")
    ap.add_argument("--recover-pool", default=None, help="the pool of the open that recovers (default: --pool)")
    args = ap.parse_args()
    if args.keys < 1:
        sys.exit("--keys must be at least 1")
    print("log_mib,records,recovered_bytes,open_seconds,recovery_seconds,misses")
    for mib in [int(s) for s in args.sizes.split(",")]:
        shutil.rmtree(args.dir, ignore_errors=True)
        pid = os.fork()
        if pid == 0:
            try:
                fill_and_die(args.dir, mib << 20, args.pool, args.keys)
            finally:
                os._exit(3)
        _, status = os.waitpid(pid, 0)
        if not os.WIFSIGNALED(status):
            sys.exit("the writer failed (exit %d)" % os.WEXITSTATUS(status))
        start = time.monotonic()
        db = vmstore.open(args.dir, pool_size=args.recover_pool or args.pool, durability="none")
        opened = time.monotonic() - start
        s = db.stats()
        db.close()
        print("%d,%d,%d,%.2f,%.2f,%d" % (mib, s["recovered_records"], s["recovered_bytes"], opened,
                                        s["recovery_us"] / 1e6, s["misses"]), flush=True)
    shutil.rmtree(args.dir, ignore_errors=True)


if __name__ == "__main__":
    main()
