"""Writers during a checkpoint (issue 6): how long puts wait while sync() writes a large
set of changed pages.

A fresh database (durability=async) is loaded with --keys keys of --value bytes, which
leaves every page of the tree changed since the last checkpoint. Then one thread puts
random keys for --seconds, timing each put, while the main thread calls sync() once
after one second. Printed (CSV): how long the sync took, how many pages it wrote, how
many puts completed while it ran, the longest put while it ran, and the put rate
before, during and after it. A checkpoint that stops writers shows as no puts during the
sync and one put as long as the sync.

Usage (after `make python-test` built the binding into build/python-venv):
  build/python-venv/bin/python bench/checkpoint_stall.py DIR [--keys 1000000] [--pool 2G]
"""

import argparse
import random
import shutil
import threading
import time

import vmstore


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--keys", type=int, default=1000000)
    ap.add_argument("--value", type=int, default=100)
    ap.add_argument("--pool", default="2G")
    ap.add_argument("--seconds", type=float, default=4.0)
    args = ap.parse_args()
    shutil.rmtree(args.dir, ignore_errors=True)
    value = b"v" * args.value
    with vmstore.open(args.dir, pool_size=args.pool, durability="async", log_size="8G") as db:
        tree = db.tree()
        for start in range(0, args.keys, 10000):
            with db.batch() as b:
                for i in range(start, min(args.keys, start + 10000)):
                    b.put(tree, b"%012d" % i, value)
        done = threading.Event()
        puts = []  # (start, seconds) of every put

        def writer():
            rng = random.Random(1)
            while not done.is_set():
                k = b"%012d" % rng.randrange(args.keys)
                t0 = time.perf_counter()
                tree[k] = value
                puts.append((t0, time.perf_counter() - t0))

        th = threading.Thread(target=writer)
        th.start()
        time.sleep(1.0)
        written = db.stats()["pages_written"]
        s0 = time.perf_counter()
        db.sync()
        s1 = time.perf_counter()
        written = db.stats()["pages_written"] - written
        time.sleep(max(0.0, args.seconds - 1.0 - (s1 - s0)))
        done.set()
        th.join()
    during = [d for (t, d) in puts if t + d > s0 and t < s1]
    before = [1 for (t, d) in puts if t + d <= s0]
    after = [1 for (t, d) in puts if t >= s1]
    first = puts[0][0] if puts else s0
    last = puts[-1][0] if puts else s1
    print("sync_s,pages_written,puts_during,longest_put_during_ms,puts_per_s_before,puts_per_s_during,puts_per_s_after")
    print("%.3f,%d,%d,%.2f,%.0f,%.0f,%.0f" % (
        s1 - s0, written, len(during), 1000 * max(during, default=0.0),
        len(before) / max(1e-9, s0 - first), len(during) / max(1e-9, s1 - s0),
        len(after) / max(1e-9, last - s1)))


if __name__ == "__main__":
    main()
