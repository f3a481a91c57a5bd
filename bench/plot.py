#!/usr/bin/env python3
"""Turn a `vmstore bench` results directory into PNG charts.

usage: python3 bench/plot.py RESULTS_DIR

Reads every *.csv in RESULTS_DIR (not recursively) and recognises it by its header:
  second,tx,...,engine,workload,threads   a workload run (one row per second), named
                                          CASE-ENGINE.csv by `vmstore bench suite`
                                          (ENGINE-WORKLOAD.csv works too)
  variant,step,working_set,...            page-access
  variant,threads,ops,...                 vm-alloc
  api,target,threads,queue_depth,...      read-io
  case,engine,...,tx_per_s,...            summary.csv of the suite
  workload,pool_percent,...,policy,...    summary.csv of `vmstore bench policies`
Lines that are not CSV rows of the header (e.g. the JSON line when stdout was saved) are
skipped. Writes into RESULTS_DIR/plots/:
  throughput-CASE.png   transactions per second over time, one line per engine
  engines.png           mean transactions per second per case, engines side by side; a
                        case whose summary.csv rows say memory_bound "cgroup" shows its
                        limit, "unbounded" ones are hatched and titled UNBOUNDED
  page-access.png       the Table 2 ladder: ns per access, both working sets
  vm-alloc.png          page operations per second and TLB shootdowns per operation vs threads
  read-io.png           IOPS vs threads (pread) and vs queue depth (io_uring)
  policies-WORKLOAD.png throughput and hit rate against pool size, one line per policy
                        (OPT dashed), and hit rate against throughput (the thesis's
                        Figures 1.29 and 1.30 side by side)
Missing or unreadable files are skipped with a message. Needs matplotlib, which it does
not install: without it, it says so in one line on stderr (Debian: apt-get install
python3-matplotlib; else python3 -m pip install matplotlib), writes no plots and exits 1
(`vmstore bench suite` then reports the plots as skipped; its tables and CSV files are
written before the script runs).
"""

import csv
import os
import sys


def log(msg):
    print("plot.py: " + msg, file=sys.stderr)


def have_matplotlib():
    """Whether matplotlib can be imported; if not, says on stderr how to get it. This
    script never installs anything."""
    try:
        import matplotlib  # noqa: F401
        return True
    except ImportError:
        log("matplotlib is not installed: no plots (the CSV files are unchanged); to get it: "
            "apt-get install python3-matplotlib (Debian) or python3 -m pip install matplotlib")
        return False


def to_float(s):
    try:
        return float(s)
    except (TypeError, ValueError):
        return None


def read_csv(path):
    """(header, rows as dicts) of a CSV file, skipping lines that do not fit the header."""
    try:
        with open(path, newline="") as f:
            lines = [l for l in f if l.strip() and not l.lstrip().startswith("{")]
    except OSError as e:
        log("skipping %s: %s" % (path, e))
        return None, []
    if not lines:
        return None, []
    reader = csv.reader(lines)
    header = None
    rows = []
    for rec in reader:
        if header is None:
            header = [h.strip() for h in rec]
            continue
        if len(rec) != len(header) or rec == header:
            continue
        rows.append(dict(zip(header, (v.strip() for v in rec))))
    return header, rows


def kind_of(header):
    if not header:
        return None
    h = header
    if h[:2] == ["second", "tx"] and "engine" in h:
        return "run"
    if h[:3] == ["variant", "step", "working_set"]:
        return "page-access"
    if h[:3] == ["variant", "threads", "ops"]:
        return "vm-alloc"
    if h[:4] == ["api", "target", "threads", "queue_depth"]:
        return "read-io"
    if "engine" in h and "tx_per_s" in h:
        return "summary"
    if "policy" in h and "hit_rate" in h and "pool_percent" in h:
        return "policies"
    return None


def case_of(stem, rows):
    """The case a run file belongs to: its name without the engine part."""
    engine = rows[0].get("engine", "") if rows else ""
    if engine and stem.endswith("-" + engine):
        return stem[: -len(engine) - 1]
    if engine and stem.startswith(engine + "-"):
        return stem[len(engine) + 1:]
    return rows[0].get("workload", stem) if rows else stem


def save(fig, outdir, name, written):
    path = os.path.join(outdir, name)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    written.append(path)


def plot_runs(plt, runs, summary, outdir, written):
    # runs: case -> engine -> [(second, tx)]
    for case in sorted(runs):
        fig, ax = plt.subplots(figsize=(8, 4.5))
        for engine in sorted(runs[case]):
            pts = runs[case][engine]
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker=".", label=engine)
        ax.set_title("%s: transactions per second" % case)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: "{:,.0f}".format(v)))
        ax.set_xlabel("second")
        ax.set_ylabel("transactions / s")
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
        ax.legend()
        save(fig, outdir, "throughput-%s.png" % case, written)
        plt.close(fig)

    # Mean tx/s per case and engine: summary.csv when there is one, else the per-second rows.
    # A case run in a memory cgroup says its limit; an unbounded one (memory_bound
    # "unbounded": the kernel page cache was not limited) is hatched and titled so.
    means, bounds = {}, {}
    for row in summary:
        case = row.get("case") or row.get("workload")
        bound = row.get("memory_bound", "n/a")
        if case and bound == "cgroup":
            limit = to_float(row.get("memory_limit"))
            bounds[case] = "memory cgroup %.0f MiB" % (limit / 1048576.0) if limit else "memory cgroup"
        elif case and bound == "unbounded":
            bounds[case] = "UNBOUNDED: page cache not limited"
        if row.get("status", "ok") != "ok":
            continue
        v = to_float(row.get("tx_per_s"))
        if v is not None and case and row.get("engine"):
            means.setdefault(case, {})[row["engine"]] = v
    for case, engines in runs.items():
        for engine, pts in engines.items():
            if engine not in means.get(case, {}) and pts:
                means.setdefault(case, {})[engine] = sum(p[1] for p in pts) / len(pts)
    if not means:
        return
    cases = sorted(means)
    all_engines = sorted({e for c in means.values() for e in c})
    color = {e: "C%d" % (i % 10) for i, e in enumerate(all_engines)}
    fig, axes = plt.subplots(1, len(cases), figsize=(max(5, 4 * len(cases)), 4.5), squeeze=False)
    for ax, case in zip(axes[0], cases):
        engines = sorted(means[case])
        vals = [means[case][e] for e in engines]
        unbounded = bounds.get(case, "").startswith("UNBOUNDED")
        bars = ax.bar(engines, vals, color=[color[e] for e in engines],
                      hatch="//" if unbounded else None, alpha=0.6 if unbounded else 1.0)
        for b, v in zip(bars, vals):
            ax.annotate("{:,.0f}".format(v), (b.get_x() + b.get_width() / 2, v),
                        ha="center", va="bottom", fontsize=8)
        ax.set_title(case + ("\n(%s)" % bounds[case] if case in bounds else ""), fontsize=10)
        ax.set_ylabel("mean transactions / s")
        ax.tick_params(axis="x", rotation=30)
        ax.grid(axis="y", alpha=0.3)
    fig.suptitle("engines side by side")
    save(fig, outdir, "engines.png", written)
    plt.close(fig)


def plot_page_access(plt, rows, outdir, written):
    sets = [s for s in ("cache", "dram") if any(r.get("working_set") == s for r in rows)]
    if not sets:
        return
    fig, axes = plt.subplots(1, len(sets), figsize=(6 * len(sets), 4.5), squeeze=False)
    for ax, s in zip(axes[0], sets):
        rs = [r for r in rows if r.get("working_set") == s and to_float(r.get("ns_per_access"))]
        labels = ["%s %s" % (r.get("step", ""), r.get("variant", "")) for r in rs]
        vals = [to_float(r["ns_per_access"]) for r in rs]
        colors = ["C0" if r.get("step", "").startswith("1") else
                  "C3" if r.get("step", "").startswith("3") else "C2" for r in rs]
        bars = ax.barh(labels, vals, color=colors)
        for b, v in zip(bars, vals):
            ax.annotate("%.1f" % v, (v, b.get_y() + b.get_height() / 2), va="center",
                        fontsize=8, xytext=(2, 0), textcoords="offset points")
        size = rs[0].get("bytes", "") if rs else ""
        try:
            size = "%.0f KiB" % (int(size) / 1024) if int(size) < (1 << 20) else \
                "%.0f MiB" % (int(size) / (1 << 20))
        except ValueError:
            pass
        ax.set_title("%s-resident set (%s)" % ("cache" if s == "cache" else "DRAM", size))
        ax.set_xlabel("ns per random page access")
        ax.invert_yaxis()
        ax.grid(axis="x", alpha=0.3)
    fig.suptitle("page-access (paper Table 2)")
    save(fig, outdir, "page-access.png", written)
    plt.close(fig)


def plot_vm_alloc(plt, rows, outdir, written):
    series = {}
    for r in rows:
        t, ops = to_float(r.get("threads")), to_float(r.get("ops_per_s"))
        if t is None or ops is None or t <= 0:
            continue
        series.setdefault(r.get("variant", "?"), []).append((t, ops, to_float(r.get("shootdowns_per_op"))))
    if not series:
        return
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 4.5))
    for name in sorted(series):
        pts = sorted(series[name])
        a1.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=name)
        sp = [p for p in pts if p[2] is not None]
        if sp:
            a2.plot([p[0] for p in sp], [p[2] for p in sp], marker="o", label=name)
    a1.set_title("page operations (fault in + release) per second")
    a1.set_xlabel("threads")
    a1.set_ylabel("ops / s")
    a1.set_ylim(bottom=0)
    a2.set_title("TLB shootdowns per operation (/proc/interrupts)")
    a2.set_xlabel("threads")
    a2.set_ylim(bottom=0)
    for a in (a1, a2):
        a.xaxis.set_major_locator(MaxNLocator(integer=True))
        a.grid(alpha=0.3)
        a.legend()
    fig.suptitle("vm-alloc (paper Figures 4 and 9)")
    save(fig, outdir, "vm-alloc.png", written)
    plt.close(fig)


def plot_read_io(plt, rows, outdir, written):
    pread, uring = {}, {}
    for r in rows:
        iops = to_float(r.get("iops"))
        if iops is None:
            continue
        if r.get("api") == "pread":
            x = to_float(r.get("threads"))
            pread.setdefault(r.get("target", "?"), []).append((x, iops))
        elif r.get("api") == "io_uring":
            x = to_float(r.get("queue_depth"))
            uring.setdefault(r.get("target", "?"), []).append((x, iops))
    if not pread and not uring:
        return
    panels = [p for p in (("pread (one read in flight per thread)", "threads", pread, False),
                          ("io_uring (one thread)", "queue depth", uring, True)) if p[2]]
    fig, axes = plt.subplots(1, len(panels), figsize=(5.5 * len(panels), 4.5), squeeze=False)
    for ax, (title, xlabel, data, logx) in zip(axes[0], panels):
        for target in sorted(data):
            pts = sorted(p for p in data[target] if p[0] is not None)
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=target)
        if logx:
            ax.set_xscale("log", base=2)
        else:
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_title(title)
        ax.set_xlabel(xlabel)
        ax.set_ylabel("random 4 KiB reads / s")
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
        ax.legend()
    fig.suptitle("read-io: O_DIRECT reads into fixed buffers vs the vmstore area (paper Figure 10)")
    save(fig, outdir, "read-io.png", written)
    plt.close(fig)


def plot_policies(plt, rows, outdir, written):
    by_workload = {}
    for r in rows:
        pct, tx, hit = to_float(r.get("pool_percent")), to_float(r.get("tx_per_s")), to_float(r.get("hit_rate"))
        if pct is None or tx is None or hit is None:
            continue
        by_workload.setdefault(r.get("workload", "?"), []).append(
            (r.get("policy", "?"), pct, tx, hit * 100, to_float(r.get("opt_hit_rate"))))
    for workload, pts in sorted(by_workload.items()):
        policies = sorted({p[0] for p in pts})
        fig, axes = plt.subplots(1, 3, figsize=(18, 5.5))
        cmap = plt.get_cmap("tab20")
        for i, policy in enumerate(policies):
            mine = sorted(p for p in pts if p[0] == policy)
            mine.sort(key=lambda p: p[1])
            style = dict(marker="o", color=cmap(i % 20), label=policy,
                         linewidth=2.5 if policy == "clock" else 1.2)
            axes[0].plot([p[1] for p in mine], [p[2] for p in mine], **style)
            axes[1].plot([p[1] for p in mine], [p[3] for p in mine], **style)
            axes[2].scatter([p[3] for p in mine], [p[2] for p in mine], color=cmap(i % 20), label=policy)
        opt = sorted({(p[1], p[4]) for p in pts if p[4] is not None and p[4] >= 0})
        if opt:
            axes[1].plot([o[0] for o in opt], [o[1] * 100 for o in opt], "k--", marker="x", markersize=9, label="OPT (simulated)")
        axes[0].set_title("throughput (Fig. 1.29)")
        axes[0].set_xlabel("pool, % of the data")
        axes[0].set_ylabel("transactions / s")
        axes[0].set_ylim(bottom=0)
        axes[1].set_title("hit rate (Fig. 1.30, as hits)")
        axes[1].set_xlabel("pool, % of the data")
        axes[1].set_ylabel("page hit rate, %")
        axes[2].set_title("hit rate against throughput")
        axes[2].set_xlabel("page hit rate, %")
        axes[2].set_ylabel("transactions / s")
        for ax in axes:
            ax.grid(alpha=0.3)
        axes[1].legend(fontsize=8, ncol=2)
        fig.suptitle("replacement policies on %s (vmstore bench policies)" % workload)
        save(fig, outdir, "policies-%s.png" % workload, written)
        plt.close(fig)


def main(argv):
    if len(argv) != 2 or argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if len(argv) == 2 else 2
    resdir = argv[1]
    if not os.path.isdir(resdir):
        log("%s is not a directory" % resdir)
        return 2

    runs, summary, micro = {}, [], {}
    for name in sorted(os.listdir(resdir)):
        path = os.path.join(resdir, name)
        if not name.endswith(".csv") or not os.path.isfile(path):
            continue
        header, rows = read_csv(path)
        kind = kind_of(header)
        if kind is None or not rows:
            log("skipping %s (%s)" % (name, "no rows" if kind else "unknown format"))
            continue
        if kind == "run":
            case = case_of(name[:-4], rows)
            pts = []
            for r in rows:
                sec, tx = to_float(r.get("second")), to_float(r.get("tx"))
                if sec is not None and tx is not None:
                    pts.append((sec, tx))
            engine = rows[0].get("engine") or name[:-4]
            runs.setdefault(case, {})[engine] = pts
        elif kind == "summary":
            summary.extend(rows)
        else:
            micro.setdefault(kind, []).extend(rows)

    if not runs and not summary and not micro:
        log("no benchmark CSV files in %s; nothing to plot" % resdir)
        return 0
    if not have_matplotlib():
        return 1
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter, MaxNLocator
    globals()["MaxNLocator"] = MaxNLocator
    globals()["FuncFormatter"] = FuncFormatter

    outdir = os.path.join(resdir, "plots")
    os.makedirs(outdir, exist_ok=True)
    written = []
    steps = [("runs", lambda: plot_runs(plt, runs, summary, outdir, written)),
             ("page-access", lambda: plot_page_access(plt, micro.get("page-access", []), outdir, written)),
             ("vm-alloc", lambda: plot_vm_alloc(plt, micro.get("vm-alloc", []), outdir, written)),
             ("read-io", lambda: plot_read_io(plt, micro.get("read-io", []), outdir, written)),
             ("policies", lambda: plot_policies(plt, micro.get("policies", []), outdir, written))]
    failed = 0
    for what, fn in steps:
        try:
            fn()
        except Exception as e:  # one broken file must not cost the other charts
            failed += 1
            log("could not plot %s: %s" % (what, e))
            plt.close("all")
    for p in written:
        print(p)
    log("%d chart(s) in %s" % (len(written), outdir))
    return 1 if failed and not written else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
