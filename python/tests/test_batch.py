"""Batches: db.batch() gathers puts and deletes on trees of one database and writes them
all or nothing; each operation is checked when it is added."""

import mmap
import threading

import pytest

import vmstore
from threads_util import run_threads


def test_nothing_visible_before_write_everything_after(db):
    users, log = db.tree("users"), db.tree("log")
    users[b"old"] = b"x"
    b = db.batch()
    assert len(b) == 0 and not b
    b.put(users, b"alice", b"admin")
    b.put(users, b"bob", b"staff")
    b.delete(users, b"old")
    b.put(log, b"0001", b"alice and bob added")
    assert len(b) == 4 and b
    # Nothing reaches the database before write().
    assert dict(users) == {b"old": b"x"}
    assert len(log) == 0
    b.write()
    assert dict(users) == {b"alice": b"admin", b"bob": b"staff"}
    assert dict(log) == {b"0001": b"alice and bob added"}
    # write() empties the batch; writing it again changes nothing.
    assert len(b) == 0
    b.write()
    assert dict(users) == {b"alice": b"admin", b"bob": b"staff"}


def test_with_block_writes_on_normal_exit(db, tree):
    with db.batch() as b:
        assert isinstance(b, vmstore.Batch)
        assert b.database is db
        b.put(tree, b"k1", b"v1")
        b.put(tree, b"k2", bytearray(b"v2"))
        b.put(tree, memoryview(b"k3"), b"")
        assert len(tree) == 0
    assert dict(tree) == {b"k1": b"v1", b"k2": b"v2", b"k3": b""}
    assert len(b) == 0


def test_with_block_discards_when_it_raises(db, tree):
    tree[b"keep"] = b"1"
    with pytest.raises(RuntimeError, match="boom"):
        with db.batch() as b:
            b.put(tree, b"new", b"2")
            b.delete(tree, b"keep")
            raise RuntimeError("boom")
    assert len(b) == 0
    assert dict(tree) == {b"keep": b"1"}
    b.write()  # discarded, not pending
    assert dict(tree) == {b"keep": b"1"}


def test_explicit_write_inside_a_with_block(db, tree):
    with db.batch() as b:
        b.put(tree, b"a", b"1")
        b.write()
        assert tree[b"a"] == b"1"
        b.put(tree, b"b", b"2")
    assert dict(tree) == {b"a": b"1", b"b": b"2"}


def test_mixed_trees_in_order(db):
    t1, t2, t3 = db.tree("one"), db.tree("two"), db.tree("")
    t1[b"gone"] = b"x"
    t2[b"replaced"] = b"old"
    with db.batch() as b:
        b.put(t1, b"k", b"1")
        b.put(t2, b"k", b"2")
        b.put(t3, b"k", b"3")
        b.delete(t1, b"gone")
        b.put(t2, b"replaced", b"new")
        # A later operation on the same key wins.
        b.put(t3, b"put-then-delete", b"x")
        b.delete(t3, b"put-then-delete")
        b.delete(t3, b"delete-then-put")
        b.put(t3, b"delete-then-put", b"y")
        b.put(t1, b"twice", b"first")
        b.put(t1, b"twice", b"second")
    assert dict(t1) == {b"k": b"1", b"twice": b"second"}
    assert dict(t2) == {b"k": b"2", b"replaced": b"new"}
    assert dict(t3) == {b"k": b"3", b"delete-then-put": b"y"}


def test_delete_of_an_absent_key_is_fine(db, tree):
    other = db.tree("other")
    with db.batch() as b:
        b.delete(tree, b"never-there")
        b.delete(other, b"never-there")
        b.put(tree, b"k", b"v")
    assert dict(tree) == {b"k": b"v"}
    assert len(other) == 0
    # A batch of nothing but absent deletes.
    with db.batch() as b:
        b.delete(tree, b"absent")
    assert dict(tree) == {b"k": b"v"}


def tree_error(action):
    """The exception a Tree operation raises (None when it raises none)."""
    try:
        action()
    except Exception as e:  # noqa: BLE001 (compared with the batch's)
        return e
    return None


BIG_KEY = b"k" * (vmstore.MAX_KEY_SIZE + 1)
# One byte over the limit, as zero pages of an anonymous mapping that cost no memory
# (refused before it is read).
BIG_VALUE = memoryview(mmap.mmap(-1, vmstore.MAX_VALUE_SIZE + 1))
BAD_PUTS = [
    ("str key", "key", b"v"),
    ("str value", b"k", "value"),
    ("int key", 5, b"v"),
    ("None value", b"k", None),
    ("list key", [b"a"], b"v"),
    ("empty key", b"", b"v"),
    ("empty bytearray key", bytearray(), b"v"),
    ("key too big", BIG_KEY, b"v"),
    ("value too big", b"k", BIG_VALUE),
]


@pytest.mark.parametrize("what,key,value", BAD_PUTS, ids=[p[0] for p in BAD_PUTS])
def test_bad_put_raises_as_tree_does_and_leaves_the_batch(db, tree, what, key, value):
    expected = tree_error(lambda: tree.__setitem__(key, value))
    assert expected is not None, what
    b = db.batch()
    b.put(tree, b"good", b"1")
    with pytest.raises(type(expected)) as info:
        b.put(tree, key, value)
    assert type(info.value) is type(expected)
    if key is None or value is None:
        # Tree's message comes from nanobind's argument check; the batch names the argument.
        what_arg = "key" if key is None else "value"
        assert str(info.value) == f"{what_arg} must be bytes, bytearray or memoryview, not NoneType"
    else:
        assert str(info.value) == str(expected)
    assert getattr(info.value, "errno", None) == getattr(expected, "errno", None)
    assert len(b) == 1
    b.write()
    assert dict(tree) == {b"good": b"1"}


BAD_DELETES = [
    ("str key", "key"),
    ("None key", None),
    ("empty key", b""),
    ("key too big", BIG_KEY),
]


@pytest.mark.parametrize("what,key", BAD_DELETES, ids=[p[0] for p in BAD_DELETES])
def test_bad_delete_raises_as_tree_does_and_leaves_the_batch(db, tree, what, key):
    tree[b"keep"] = b"1"
    expected = tree_error(lambda: tree.__delitem__(key))
    assert expected is not None and not isinstance(expected, KeyError), what
    b = db.batch()
    b.put(tree, b"good", b"1")
    with pytest.raises(type(expected)) as info:
        b.delete(tree, key)
    assert type(info.value) is type(expected)
    if key is None:
        assert str(info.value) == "key must be bytes, bytearray or memoryview, not NoneType"
    else:
        assert str(info.value) == str(expected)
    assert len(b) == 1
    b.write()
    assert dict(tree) == {b"good": b"1", b"keep": b"1"}


def test_limits_are_accepted(db, tree):
    with db.batch() as b:
        # The largest value a 16 MiB pool holds (one value: at most half the pool).
        b.put(tree, b"k" * vmstore.MAX_KEY_SIZE, b"v" * ((8 << 20) - 40))
        b.delete(tree, b"d" * vmstore.MAX_KEY_SIZE)
    assert tree[b"k" * vmstore.MAX_KEY_SIZE] == b"v" * ((8 << 20) - 40)


@pytest.mark.parametrize("bad", ["users", None, b"users", object()])
def test_tree_argument_must_be_a_tree(db, tree, bad):
    b = db.batch()
    with pytest.raises(TypeError, match="vmstore.Tree"):
        b.put(bad, b"k", b"v")
    with pytest.raises(TypeError, match="vmstore.Tree"):
        b.delete(bad, b"k")
    assert len(b) == 0


def test_the_batch_copies_keys_and_values(db, tree):
    key, value = bytearray(b"key"), bytearray(b"value")
    b = db.batch()
    b.put(tree, key, value)
    key[:] = b"changed"
    value[:] = b"changed too"
    key.extend(b"!")  # no buffer export is kept: the bytearray can be resized
    b.write()
    assert dict(tree) == {b"key": b"value"}


def test_tree_of_another_database_writes_nothing(tmp_path, db, tree):
    with vmstore.open(str(tmp_path / "other"), pool_size="16M") as other_db:
        foreign = other_db.tree()
        b = db.batch()
        b.put(tree, b"mine", b"1")
        with pytest.raises(vmstore.InvalidArgumentError, match="another database") as info:
            b.put(foreign, b"theirs", b"2")
        assert isinstance(info.value, ValueError)
        with pytest.raises(vmstore.InvalidArgumentError, match="another database"):
            b.delete(foreign, b"theirs")
        assert len(b) == 1

        # In a with block the error discards the whole batch: nothing is written anywhere.
        tree[b"keep"] = b"k"
        with pytest.raises(vmstore.InvalidArgumentError):
            with db.batch() as b2:
                b2.put(tree, b"before", b"1")
                b2.delete(tree, b"keep")
                b2.put(foreign, b"theirs", b"2")
                b2.put(tree, b"after", b"3")
        assert dict(tree) == {b"keep": b"k"}
        assert len(foreign) == 0

        # A batch of the other database takes its own trees only.
        with other_db.batch() as b3:
            b3.put(foreign, b"theirs", b"2")
            with pytest.raises(vmstore.InvalidArgumentError):
                b3.put(tree, b"mine", b"1")
        assert dict(foreign) == {b"theirs": b"2"}
        assert dict(tree) == {b"keep": b"k"}


def test_dropped_tree(db):
    keep, gone = db.tree("keep"), db.tree("gone")
    b = db.batch()
    b.put(keep, b"k", b"1")
    b.put(gone, b"g", b"2")
    db.drop_tree("gone")
    # Adding to a dropped tree raises, as Tree's own calls do.
    with pytest.raises(vmstore.ClosedError, match="dropped"):
        b.put(gone, b"x", b"3")
    assert len(b) == 2
    # Writing a batch that names it stores nothing, and the batch keeps its operations.
    with pytest.raises(vmstore.ClosedError, match="dropped"):
        b.write()
    assert len(b) == 2
    assert len(keep) == 0
    assert len(db.tree("gone")) == 0  # a new tree of that name
    b.clear()
    b.put(keep, b"k", b"1")
    b.write()
    assert dict(keep) == {b"k": b"1"}


def test_tree_dropped_while_the_batch_is_written(db):
    # The race the binding cannot rule out by checking first: the engine finds the tree
    # dropped (NotFound), undoes the batch, and the binding raises ClosedError.
    keep, gone = db.tree("keep"), db.tree("gone")
    keep[b"k"] = b"old"
    b = db.batch()
    b.put(keep, b"k", b"new")
    b.put(keep, b"k2", b"new")
    b.put(gone, b"g", b"2")
    assert db._core.drop_tree(b"gone")  # dropped in the engine, its Tree not yet marked
    with pytest.raises(vmstore.ClosedError, match="dropped"):
        b.write()
    assert len(b) == 3
    assert dict(keep) == {b"k": b"old"}


def test_closed_database(db_path):
    db = vmstore.open(db_path, pool_size="16M")
    tree = db.tree()
    b = db.batch()
    b.put(tree, b"k", b"v")
    db.close()
    with pytest.raises(vmstore.ClosedError):
        db.batch()
    with pytest.raises(vmstore.ClosedError):
        b.put(tree, b"k2", b"v")
    with pytest.raises(vmstore.ClosedError):
        b.delete(tree, b"k")
    with pytest.raises(vmstore.ClosedError):
        b.write()
    assert len(b) == 1
    with vmstore.open(db_path, pool_size="16M") as db2:
        assert len(db2.tree()) == 0


def test_reuse_after_clear_and_after_write(db, tree):
    b = db.batch()
    b.put(tree, b"discarded", b"1")
    b.delete(tree, b"also discarded")
    b.clear()
    assert len(b) == 0
    b.put(tree, b"first", b"1")
    b.write()
    b.put(tree, b"second", b"2")
    b.delete(tree, b"first")
    assert len(b) == 2
    b.write()
    assert dict(tree) == {b"second": b"2"}
    with b:  # a batch may be used as a context manager more than once
        b.put(tree, b"third", b"3")
    assert dict(tree) == {b"second": b"2", b"third": b"3"}


def test_persists_across_reopen(db_path):
    with vmstore.open(db_path, pool_size="16M") as db:
        a, z = db.tree("a"), db.tree("z")
        with db.batch() as b:
            for i in range(500):
                b.put(a, b"%04d" % i, b"a%d" % i)
                b.put(z, b"%04d" % i, b"z%d" % i)
        with db.batch() as b:
            for i in range(0, 500, 2):
                b.delete(a, b"%04d" % i)
        with pytest.raises(KeyError):
            with db.batch() as b:
                b.put(z, b"never", b"written")
                raise KeyError("discard")
    with vmstore.open(db_path, pool_size="16M", create=False) as db:
        db.check()
        assert sorted(db.trees()) == ["a", "z"]
        assert dict(db.tree("a")) == {b"%04d" % i: b"a%d" % i for i in range(1, 500, 2)}
        assert dict(db.tree("z")) == {b"%04d" % i: b"z%d" % i for i in range(500)}


def test_a_large_batch(db, tree):
    n = 20000
    with db.batch() as b:
        for i in range(n):
            b.put(tree, b"%08d" % i, b"x" * 100)
        assert len(b) == n
    assert len(tree) == n
    with db.batch() as b:
        for key in tree.keys():
            b.delete(tree, key)
    assert len(tree) == 0
    db.check()


def test_repr(db, tree):
    b = db.batch()
    assert repr(b) == f"<vmstore.Batch of 0 operations on {db.path!r}>"
    b.put(tree, b"k", b"v")
    assert repr(b) == f"<vmstore.Batch of 1 operation on {db.path!r}>"


def test_threads_never_see_half_a_batch_after_write_returns(db):
    # Each writer owns a group of keys spread over two trees; batch g writes generation g
    # to all of them and, for each, deletes the marker key of batch g - 1 and puts its own.
    # After write() returns the writer publishes g. Readers take a published generation
    # and check that every key of the group holds it or a later one and that every marker
    # of g - 1 is gone (a later batch may be in progress: readers may see part of a batch
    # while it is being written, never less than a whole batch once write() has returned).
    left, right = db.tree("left"), db.tree("right")
    writers, readers, keys_per_group, generations = 3, 2, 40, 200
    published = [0] * writers
    lock = threading.Lock()
    done = threading.Event()

    def keys(group):
        return [b"g%d-%03d" % (group, j) for j in range(keys_per_group)]

    def writer(i):
        for g in range(1, generations + 1):
            with db.batch() as b:
                for n, key in enumerate(keys(i)):
                    t = left if n % 2 else right
                    b.put(t, key, b"%06d" % g)
                    b.delete(t, key + b"-del%d" % (g - 1))
                    b.put(t, key + b"-del%d" % g, b"")
            # Visible to this thread at once, all of it.
            values = {(left if n % 2 else right)[key] for n, key in enumerate(keys(i))}
            assert values == {b"%06d" % g}
            with lock:
                published[i] = g

    def check_groups():
        checked = 0
        for group in range(writers):
            with lock:
                g = published[group]
            if g == 0:
                continue
            for n, key in enumerate(keys(group)):
                t = left if n % 2 else right
                assert int(t[key]) >= g, (group, key, g)
                assert key + b"-del%d" % (g - 1) not in t, (group, key, g)
            checked += 1
        return checked

    def reader(i):
        while not done.is_set():
            checked = check_groups()
            if not done.is_set():
                with lock:
                    checks_during_writes[0] += checked
        check_groups()

    def work(i):
        start.wait(timeout=60)
        if i < writers:
            try:
                writer(i)
            finally:
                with lock:
                    finished[0] += 1
                    if finished[0] == writers:
                        done.set()
        else:
            reader(i - writers)

    finished = [0]
    checks_during_writes = [0]
    start = threading.Barrier(writers + readers)
    run_threads(work, writers + readers)
    assert checks_during_writes[0] > 0  # the readers did run while batches were written
    for group in range(writers):
        for n, key in enumerate(keys(group)):
            t = left if n % 2 else right
            assert t[key] == b"%06d" % generations
            assert list(t.keys(start=key + b"-", stop=key + b".")) == [key + b"-del%d" % generations]
    assert len(left) + len(right) == writers * keys_per_group * 2
    db.check()


def test_threads_each_writing_their_own_batches(db):
    trees = [db.tree("t%d" % i) for i in range(3)]

    def writer(i):
        b = db.batch()  # one batch per thread, reused
        for round_ in range(100):
            for t in trees:
                b.put(t, b"w%d-r%03d" % (i, round_), b"%d" % round_)
            b.write()

    run_threads(writer, 4)
    for t in trees:
        assert len(t) == 4 * 100
    db.check()


def test_write_nowait_then_wait_durable(db, tree):
    lock = threading.Lock()  # the application's own lock around its transaction
    b = db.batch()
    with lock:
        b.put(tree, b"a", b"1")
        b.put(tree, b"b", b"2")
        commit = b.write_nowait()
    # Released before the flush: readers (and the next transaction) see it already.
    assert isinstance(commit, int) and commit > 0
    assert len(b) == 0
    assert dict(tree) == {b"a": b"1", b"b": b"2"}
    flushes = db.stats()["log_flushes"]
    db.wait_durable(commit)
    assert db.stats()["log_flushes"] == flushes + 1
    db.wait_durable(commit)  # again: already durable
    db.wait_durable(0)
    assert db.stats()["log_flushes"] == flushes + 1
    assert b.write_nowait() == 0  # an empty batch logs nothing
    with pytest.raises(vmstore.InvalidArgumentError, match="not returned by this database"):
        db.wait_durable(commit + 10**9)
    with pytest.raises((OverflowError, TypeError)):
        db.wait_durable(-1)


def test_write_nowait_survives_reopen_after_the_wait(db_path):
    with vmstore.open(db_path, pool_size="16M", durability="sync") as db:
        tree = db.tree()
        b = db.batch()
        b.put(tree, b"k", b"v")
        db.wait_durable(b.write_nowait())
    with vmstore.open(db_path, pool_size="16M", create=False) as db:
        assert dict(db.tree()) == {b"k": b"v"}


def test_write_nowait_without_a_log(db_path):
    with vmstore.open(db_path, pool_size="16M", durability="none") as db:
        tree = db.tree()
        b = db.batch()
        b.put(tree, b"k", b"v")
        assert b.write_nowait() == 0
        db.wait_durable(0)
        assert tree[b"k"] == b"v"


def test_wait_durable_on_a_closed_database(db_path):
    db = vmstore.open(db_path, pool_size="16M")
    b = db.batch()
    b.put(db.tree(), b"k", b"v")
    commit = b.write_nowait()
    db.close()
    with pytest.raises(vmstore.ClosedError):
        db.wait_durable(commit)
