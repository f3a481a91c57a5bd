"""Out-of-memory lookups side by side (issue 7): the device, vmstore blocking, vmstore in
task mode with io=sync and with io=uring, and optionally the original vmcache code, in
one run, with the ratios the issue's targets name.

Runs, in turn:
  1. `vmstore bench read-io`: random 4 KiB O_DIRECT reads into fixed buffers; its
     fixed_iops_best (the best of pread threads and io_uring queue depths) is the
     device figure;
  2. `vmstore bench lookup` (uniform random point lookups of --data tuples through a
     --pool buffer pool, --threads worker threads) blocking, then in task mode
     (--inflight tasks per thread) with --io=sync, then with --io=uring;
  3. with --vmcache=PATH, the original vmcache binary (built by hand from
     viktorleis/vmcache; never part of this repository) with RNDREAD=1, the same
     tuples, pool (PHYSGB: whole GiB only) and threads.
Each lookup run loads its own fresh database in DIR/<mode> (removed afterwards unless
--keep). Prints one CSV row per run (lookups/s, page misses/s, data file bytes) and the
ratios: task/fixed, task/io=sync, task/blocking, task/vmcache.

Usage:
  python3 bench/out_of_memory.py DIR [--data 72000000] [--pool 1G] [--threads 2]
         [--inflight 64] [--seconds 20] [--warmup 30] [--vmcache /path/to/vmcache]
         [--vmstore BIN]
Each run measures --seconds after a --warmup (whole seconds, not counted): after the
load, the pool holds the last leaves loaded and hardly any inner node, so the first
seconds miss two or three times per lookup; the warm-up lets the pool settle first.
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys


def run_json(cmd):
    out = subprocess.run(cmd, check=True, stdout=subprocess.PIPE, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def run_bench(cmd, warmup):
    """A `vmstore bench` workload run: its JSON line, and its page misses per second in
    the measured phase (the mean of the per-second rows after the warm-up's)."""
    out = subprocess.run(cmd, check=True, stdout=subprocess.PIPE, text=True).stdout
    lines = out.strip().splitlines()
    header = lines[0].split(",")
    rows = [line.split(",") for line in lines[1:-1]][warmup:]
    misses = [int(r[header.index("page_misses")]) for r in rows]
    return json.loads(lines[-1]), sum(misses) / max(1, len(misses))


def size_bytes(text):
    m = re.fullmatch(r"(\d+)([KMGT]?)", text)
    if not m:
        sys.exit(f"--pool={text}: not a size")
    return int(m.group(1)) << {"": 0, "K": 10, "M": 20, "G": 30, "T": 40}[m.group(2)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--data", type=int, default=72000000)
    ap.add_argument("--pool", default="1G")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--inflight", type=int, default=64)
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--warmup", type=int, default=30)
    ap.add_argument("--io-seconds", type=float, default=2)
    ap.add_argument("--vmcache")
    ap.add_argument("--vmstore", default="build/release/vmstore")
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args()
    os.makedirs(args.dir, exist_ok=True)
    print("run,lookups_or_iops_per_s,page_misses_per_s,data_file_bytes,command", flush=True)

    class Rows(list):
        def append(self, row):
            name, rate, misses, data_bytes, cmd = row
            m = "%.0f" % misses if misses != "" else ""
            print("%s,%.0f,%s,%s,%s" % (name, rate, m, data_bytes, cmd), flush=True)
            super().append(row)

    rows = Rows()

    rio = run_json([args.vmstore, "bench", "read-io", "--seconds=%g" % args.io_seconds,
                    "--dir=" + os.path.join(args.dir, "read-io")])
    fixed = rio["fixed_iops_best"]
    rows.append(("device fixed_iops_best", fixed, "", "", rio.get("best_area_config", "")))
    shutil.rmtree(os.path.join(args.dir, "read-io"), ignore_errors=True)

    results = {}
    for mode, extra in [("blocking", []),
                        ("task io=sync", ["--inflight=%d" % args.inflight, "--io=sync"]),
                        ("task io=uring", ["--inflight=%d" % args.inflight])]:
        d = os.path.join(args.dir, mode.replace(" ", "-").replace("=", ""))
        shutil.rmtree(d, ignore_errors=True)
        cmd = [args.vmstore, "bench", "lookup", "--data=%d" % args.data, "--pool=" + args.pool,
               "--threads=%d" % args.threads, "--seconds=%g" % args.seconds, "--warmup=%d" % args.warmup,
               "--dir=" + d] + extra
        r, misses_per_s = run_bench(cmd, args.warmup)
        data_bytes = os.path.getsize(os.path.join(d, "data.vms"))
        results[mode] = r["tx_per_s"]
        rows.append(("vmstore " + mode, r["tx_per_s"], round(misses_per_s), data_bytes, " ".join(cmd)))
        if not args.keep:
            shutil.rmtree(d, ignore_errors=True)

    if args.vmcache:
        block = os.path.join(args.dir, "vmcache-block")
        open(block, "w").close()
        pool_gib = max(1, size_bytes(args.pool) >> 30)
        # VIRTGB: address space for the data (about 150 bytes a tuple), at least vmcache's 16.
        virt_gib = max(16, (args.data * 150 >> 30) * 2)
        env = dict(os.environ, BLOCK=block, PHYSGB=str(pool_gib), VIRTGB=str(virt_gib), THREADS=str(args.threads),
                   DATASIZE=str(args.data), RNDREAD="1", RUNFOR=str(int(args.warmup + args.seconds)))
        p = subprocess.run([args.vmcache], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if p.returncode != 0:
            sys.exit("vmcache failed (%d): %s" % (p.returncode, p.stderr[-2000:]))
        tx = [int(line.split(",")[1]) for line in p.stdout.splitlines()[1:] if line.strip()]
        tx = tx[args.warmup:]  # its per-second rows after the same warm-up
        rate = sum(tx) / max(1, len(tx))
        space = re.search(r"space: ([0-9.]+) GB", p.stderr)
        data_bytes = int(float(space.group(1)) * (1 << 30)) if space else ""
        results["vmcache"] = rate
        cmdline = " ".join("%s=%s" % (k, env[k]) for k in
                           ("BLOCK", "PHYSGB", "VIRTGB", "THREADS", "DATASIZE", "RNDREAD", "RUNFOR"))
        rows.append(("original vmcache", rate, "", data_bytes, cmdline + " " + args.vmcache))
        os.remove(block)

    task = results["task io=uring"]
    print("task_over_fixed_iops,%.3f" % (task / fixed))
    print("task_over_io_sync,%.3f" % (task / results["task io=sync"]))
    print("task_over_blocking,%.3f" % (task / results["blocking"]))
    if "vmcache" in results:
        print("task_over_vmcache,%.3f" % (task / results["vmcache"]))


if __name__ == "__main__":
    main()
