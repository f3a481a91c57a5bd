"""Tree.modify: atomic read-modify-write of one key (issue 8 item 5). Every outcome of the
function (store, delete, KEEP, raise), bad input, counters incremented by many threads
that lose nothing, re-entering the database from the function, durability across a
reopen."""

import mmap
import threading

import pytest

import vmstore
from threads_util import run_threads


def test_every_outcome(tree):
    seen = []

    def record(result):
        def fn(value):
            seen.append(value)
            return result
        return fn

    assert tree.modify(b"k", record(b"first")) == b"first"  # absent: inserted
    assert seen[-1] is None
    assert tree[b"k"] == b"first"
    assert tree.modify(b"k", record(b"FIRST")) == b"FIRST"  # the same size
    assert seen[-1] == b"first"
    assert tree.modify(b"k", record(bytearray(b"a longer value"))) == b"a longer value"
    assert type(tree[b"k"]) is bytes
    assert tree.modify(b"k", record(memoryview(b"xyz"))) == b"xyz"
    assert tree.modify(b"k", record(vmstore.KEEP)) == b"xyz"  # left as it is
    assert tree[b"k"] == b"xyz"
    assert tree.modify(b"k", record(b"")) == b""  # empty: present, not absent
    assert b"k" in tree
    assert tree.modify(b"k", record(None)) is None  # deleted
    assert b"k" not in tree
    assert tree.modify(b"k", record(None)) is None  # absent stays absent
    assert tree.modify(b"k", record(vmstore.KEEP)) is None
    assert b"k" not in tree
    assert seen[-2:] == [None, None]
    assert repr(vmstore.KEEP) == "vmstore.KEEP"


def test_counter(tree):
    for _ in range(10):
        tree.modify(b"hits", lambda v: str(int(v or b"0") + 1).encode())
    assert tree[b"hits"] == b"10"


def test_an_exception_changes_nothing(tree):
    tree[b"k"] = b"v"

    class Mine(Exception):
        pass

    def fail(value):
        raise Mine(value)

    with pytest.raises(Mine) as info:
        tree.modify(b"k", fail)
    assert info.value.args == (b"v",)
    assert tree[b"k"] == b"v"
    tree[b"k"] = b"w"  # nothing is left held
    assert tree.modify(b"k", lambda v: v + b"!") == b"w!"


def test_bad_input(tree):
    tree[b"k"] = b"v"
    with pytest.raises(TypeError):
        tree.modify(b"k", lambda v: "text")  # not bytes-like
    with pytest.raises(TypeError):
        tree.modify(b"k", lambda v: 5)
    with pytest.raises(TypeError):
        tree.modify(b"k", b"not callable")
    with pytest.raises(TypeError):
        tree.modify("text key", lambda v: v)
    with pytest.raises(vmstore.InvalidArgumentError):
        tree.modify(b"", lambda v: b"x")
    with pytest.raises(vmstore.TooBigError):
        tree.modify(b"x" * (vmstore.MAX_KEY_SIZE + 1), lambda v: b"x")
    with pytest.raises(vmstore.TooBigError):
        tree.modify(b"k", lambda v: memoryview(mmap.mmap(-1, vmstore.MAX_VALUE_SIZE + 1)))
    assert tree[b"k"] == b"v"
    assert b"" not in list(tree.keys())


def test_the_function_must_not_use_its_database(db):
    t = db.tree()
    other = db.tree("other")
    t[b"k"] = b"v"
    for misuse in (
        lambda v: t[b"k"],
        lambda v: other.get(b"x"),
        lambda v: t.modify(b"k", lambda w: w),
        lambda v: db.stats(),
        lambda v: db.close(),
    ):
        with pytest.raises(RuntimeError, match="must not use its own database"):
            t.modify(b"k", misuse)
    assert not db.closed
    assert t[b"k"] == b"v"
    # Another database may be used.
    with vmstore.open(db.path + "-second", pool_size="4M") as second:
        s = second.tree()
        s[b"x"] = b"from the other database"
        assert t.modify(b"k", lambda v: s[b"x"]) == b"from the other database"


def test_dropped_tree_and_closed_database(db):
    t = db.tree("gone")
    db.drop_tree("gone")
    with pytest.raises(vmstore.ClosedError):
        t.modify(b"k", lambda v: b"x")
    d = db.tree()
    db.close()
    with pytest.raises(vmstore.ClosedError):
        d.modify(b"k", lambda v: b"x")


@pytest.mark.parametrize("durability", ["none", "async", "sync"])
def test_threads_lose_no_increment(db_path, durability):
    with vmstore.open(db_path, pool_size="16M", durability=durability) as db:
        t = db.tree()
        threads, each = 6, 300 if durability != "sync" else 60
        stop = threading.Event()

        def add(i):
            for j in range(each):
                key = b"c%d" % ((i + j) % 3)
                t.modify(key, lambda v: (int.from_bytes(v or b"\0" * 8, "little") + 1).to_bytes(8, "little"))

        def put_others():
            n = 0
            while not stop.is_set():
                t[b"c%d-%06d" % (n % 3, n)] = b"filler" * 10
                n += 1

        filler = threading.Thread(target=put_others)
        filler.start()
        try:
            run_threads(add, threads)
        finally:
            stop.set()
            filler.join()
        total = sum(int.from_bytes(t[b"c%d" % c], "little") for c in range(3))
        assert total == threads * each


def test_survives_reopen(db_path):
    with vmstore.open(db_path, pool_size="4M", durability="sync") as db:
        t = db.tree()
        for _ in range(50):
            t.modify(b"n", lambda v: b"%d" % (int(v or b"0") + 1))
        t.modify(b"gone", lambda v: b"x")
        t.modify(b"gone", lambda v: None)
    with vmstore.open(db_path, pool_size="4M") as db:
        t = db.tree()
        assert t[b"n"] == b"50"
        assert b"gone" not in t
