"""python -m vmstore.bench: random puts and gets from Python, vmstore beside py-lmdb and
rocksdict (when installed: ``pip install lmdb rocksdict``).

Each engine gets a fresh database in a temporary directory (``--dir`` to choose where),
large enough to stay in memory, then:

- puts: every key once, in random order (the keys are random bytes);
- gets: every key once, in another random order, from one thread;
- gets from ``--threads`` threads, each reading its share of the same shuffled keys.

Each engine is used the way its Python users use it: vmstore ``tree[k] = v`` and
``tree[k]``, opened with ``durability="none"`` (no write-ahead log; the default,
``"sync"``, would wait for a flush on every put); py-lmdb one write transaction for the
whole load (``txn.put``) and one read transaction per thread (``txn.get``), no sync;
rocksdict in raw (bytes) mode with its write-ahead log off (vmstore keeps none either),
``db[k] = v`` and ``db[k]``. The output is one table and, as the last line, a JSON
summary; both state the durability each engine ran with.
"""

from __future__ import annotations

import abc
import argparse
import json
import os
import random
import shutil
import sys
import tempfile
import threading
import time
from typing import Any, Callable, Dict, List, Optional, Sequence, Type

import vmstore

__all__ = ["main", "run_engine", "ENGINES"]


class _Engine(abc.ABC):
    """One engine's setup and its put and get loops."""

    name = ""
    package = ""  # what to import (and pip install)
    durability = ""  # the options that set what a put survives (printed with the results)

    @abc.abstractmethod
    def open(self, path: str, total_bytes: int) -> None:
        """Creates the database in the empty directory path, for about total_bytes."""

    @abc.abstractmethod
    def put_all(self, keys: Sequence[bytes], value: bytes) -> None:
        """Stores value under every key, in the order given."""

    @abc.abstractmethod
    def get_all(self, keys: Sequence[bytes]) -> int:
        """Reads every key in the order given; returns the value bytes read."""

    @abc.abstractmethod
    def close(self) -> None:
        """Closes the database."""


class _Vmstore(_Engine):
    name = "vmstore"
    package = "vmstore"
    durability = 'durability="none"'

    def open(self, path: str, total_bytes: int) -> None:
        pool = max(64 << 20, 4 * total_bytes)
        self.db = vmstore.open(path, pool_size=pool, durability="none")
        self.tree = self.db.tree()

    def put_all(self, keys: Sequence[bytes], value: bytes) -> None:
        tree = self.tree
        for k in keys:
            tree[k] = value

    def get_all(self, keys: Sequence[bytes]) -> int:
        tree = self.tree
        n = 0
        for k in keys:
            n += len(tree[k])
        return n

    def close(self) -> None:
        self.db.close()


class _Lmdb(_Engine):
    name = "lmdb"
    package = "lmdb"
    durability = "sync=False, metasync=False"

    def open(self, path: str, total_bytes: int) -> None:
        import lmdb

        self.env = lmdb.open(path, map_size=max(1 << 30, 8 * total_bytes), sync=False, metasync=False)

    def put_all(self, keys: Sequence[bytes], value: bytes) -> None:
        with self.env.begin(write=True) as txn:
            put = txn.put
            for k in keys:
                put(k, value)

    def get_all(self, keys: Sequence[bytes]) -> int:
        n = 0
        with self.env.begin() as txn:
            get = txn.get
            for k in keys:
                n += len(get(k))  # type: ignore[arg-type]  # every key is there
        return n

    def close(self) -> None:
        self.env.close()


class _Rocksdict(_Engine):
    name = "rocksdict"
    package = "rocksdict"
    durability = "disable_wal=True"

    def open(self, path: str, total_bytes: int) -> None:
        import rocksdict

        self.db = rocksdict.Rdict(path, options=rocksdict.Options(raw_mode=True))
        write = rocksdict.WriteOptions()
        write.disable_wal = True  # type: ignore[method-assign, assignment]  # a property; its stub says method
        self.db.set_write_options(write)

    def put_all(self, keys: Sequence[bytes], value: bytes) -> None:
        db = self.db
        for k in keys:
            db[k] = value

    def get_all(self, keys: Sequence[bytes]) -> int:
        db = self.db
        n = 0
        for k in keys:
            n += len(db[k])  # type: ignore[arg-type]  # raw mode: bytes
        return n

    def close(self) -> None:
        self.db.close()


#: The engines by name, in the order they run.
ENGINES: Dict[str, Type[_Engine]] = {"vmstore": _Vmstore, "lmdb": _Lmdb, "rocksdict": _Rocksdict}


def _timed(fn: Callable[[], Any]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def _threaded_gets(engine: _Engine, keys: Sequence[bytes], threads: int) -> float:
    shares = [keys[i::threads] for i in range(threads)]
    start = threading.Barrier(threads + 1)
    errors: List[BaseException] = []

    def reader(share: Sequence[bytes]) -> None:
        start.wait()
        try:
            engine.get_all(share)
        except BaseException as e:  # noqa: BLE001 (reported by the main thread)
            errors.append(e)

    workers = [threading.Thread(target=reader, args=(s,)) for s in shares]
    for w in workers:
        w.start()
    start.wait()
    t0 = time.perf_counter()
    for w in workers:
        w.join()
    elapsed = time.perf_counter() - t0
    if errors:
        raise errors[0]
    return elapsed


def run_engine(
    name: str, keys: Sequence[bytes], lookups: Sequence[bytes], value: bytes, threads: int, directory: str
) -> Dict[str, Any]:
    """Runs the puts, the gets and the threaded gets on one engine in a fresh directory
    under ``directory``; returns operations per second of each."""
    engine = ENGINES[name]()
    path = tempfile.mkdtemp(prefix=f"{name}-", dir=directory)
    try:
        engine.open(path, len(keys) * (len(keys[0]) + len(value)))
        try:
            put_s = _timed(lambda: engine.put_all(keys, value))
            expected = len(lookups) * len(value)
            got = [0]
            get_s = _timed(lambda: got.__setitem__(0, engine.get_all(lookups)))
            if got[0] != expected:
                raise RuntimeError(f"{name}: read {got[0]} value bytes, expected {expected}")
            threaded_s = _threaded_gets(engine, lookups, threads)
        finally:
            engine.close()
    finally:
        shutil.rmtree(path, ignore_errors=True)
    return {
        "engine": name,
        "puts_per_s": len(keys) / put_s,
        "gets_per_s": len(lookups) / get_s,
        "threaded_gets_per_s": len(lookups) / threaded_s,
        "threads": threads,
        "durability": engine.durability,
    }


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Parses the command line, runs every engine that is installed and prints a table
    and a JSON summary; returns the exit status."""
    parser = argparse.ArgumentParser(prog="python -m vmstore.bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--keys", type=int, default=1_000_000, help="number of keys (default 1000000)")
    parser.add_argument("--key-size", type=int, default=16, help="key bytes (default 16)")
    parser.add_argument("--value-size", type=int, default=100, help="value bytes (default 100)")
    parser.add_argument("--threads", type=int, default=4, help="threads of the threaded gets (default 4)")
    parser.add_argument(
        "--engines", default=",".join(ENGINES), help=f"comma-separated, from {', '.join(ENGINES)} (default all)"
    )
    parser.add_argument("--dir", default=None, help="where the databases go (default: the temporary directory)")
    parser.add_argument("--seed", type=int, default=42, help="random seed of keys and order (default 42)")
    args = parser.parse_args(argv)

    names = [n.strip() for n in args.engines.split(",") if n.strip()]
    unknown = [n for n in names if n not in ENGINES]
    if unknown:
        parser.error(f"unknown engine(s): {', '.join(unknown)}")
    rng = random.Random(args.seed)
    unique = {rng.getrandbits(8 * args.key_size).to_bytes(args.key_size, "little") for _ in range(args.keys)}
    keys = list(unique)
    rng.shuffle(keys)
    lookups = keys[:]
    rng.shuffle(lookups)
    value = rng.getrandbits(8 * args.value_size).to_bytes(args.value_size, "little")
    directory = args.dir or tempfile.gettempdir()

    print(
        f"{len(keys)} keys of {args.key_size} bytes, values of {args.value_size} bytes, "
        f"Python {sys.version.split()[0]}, {os.cpu_count()} CPUs"
    )
    header = f"{'engine':<10} {'puts/s':>12} {'gets/s':>12} {f'gets/s {args.threads} thr':>14}  durability"
    print(header)
    results = []
    for name in names:
        engine = ENGINES[name]
        try:
            __import__(engine.package)
        except ImportError:
            print(f"{name:<10} not installed (pip install {engine.package})")
            continue
        r = run_engine(name, keys, lookups, value, args.threads, directory)
        results.append(r)
        print(
            f"{name:<10} {r['puts_per_s']:>12,.0f} {r['gets_per_s']:>12,.0f} {r['threaded_gets_per_s']:>14,.0f}"
            f"  {r['durability']}"
        )
    print(json.dumps({"keys": len(keys), "key_size": args.key_size, "value_size": args.value_size,
                      "results": results}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
