"""Transactions: db.transaction() writes in place as it goes and commits (or undoes) its
writes together. Commit and abort of every kind of write, the with block both ways, reuse,
concurrent transfers and counters from several threads, bad input for every method, a
closed database, a dropped tree, commit_nowait, durability across a reopen, and the
thread rules (one thread at a time, an open transaction goes on from another thread,
what its thread may not do meanwhile, close and garbage collection from other threads)."""

import functools
import random
import threading
import time

import pytest

import vmstore
from threads_util import run_threads

# Generous: nothing here should take more than a fraction of this, but a hang must fail.
TIMEOUT = 60


def started(target, *args):
    t = threading.Thread(target=target, args=args, daemon=True)
    t.start()
    return t


def finished(thread):
    thread.join(TIMEOUT)
    return not thread.is_alive()


def bounded(test):
    """Runs the test on a thread of its own, so that a binding that hangs fails it
    instead of stopping the suite."""

    @functools.wraps(test)
    def wrapper(*args, **kwargs):
        errors = []

        def body():
            try:
                test(*args, **kwargs)
            except BaseException as e:  # noqa: BLE001 (handed to the main thread)
                errors.append(e)

        thread = started(body)
        assert finished(thread), "hung"
        if errors:
            raise errors[0]

    return wrapper


def test_commit_of_put_delete_and_modify(db):
    t, other = db.tree("t"), db.tree("other")
    t[b"gone"] = b"x"
    t[b"count"] = b"41"
    txn = db.transaction()
    assert isinstance(txn, vmstore.Transaction) and txn.database is db
    assert len(txn) == 0
    txn.put(t, b"new", b"1")
    txn.put(other, bytearray(b"k"), memoryview(b"v"))
    txn.delete(t, b"gone")
    assert txn.modify(t, b"count", lambda v: b"%d" % (int(v) + 1)) == b"42"
    assert len(txn) == 4
    # Its own reads see its writes; so do readers outside it (no isolation from them).
    assert txn.get(t, b"new") == b"1"
    assert txn.get(t, b"gone") is None
    assert txn.get(t, b"gone", b"dflt") == b"dflt"
    assert t[b"count"] == b"42"
    txn.commit()
    assert len(txn) == 0
    assert dict(t) == {b"new": b"1", b"count": b"42"}
    assert dict(other) == {b"k": b"v"}
    txn.commit()  # nothing begun: nothing to do
    assert dict(t) == {b"new": b"1", b"count": b"42"}


def test_abort_puts_everything_back(db):
    t = db.tree("t")
    t[b"replaced"] = b"old"
    t[b"deleted"] = b"here"
    t[b"modified"] = b"1"
    t[b"modify-deleted"] = b"2"
    before = dict(t)
    txn = db.transaction()
    txn.put(t, b"replaced", b"new value, longer")
    txn.put(t, b"inserted", b"x")
    txn.delete(t, b"deleted")
    txn.modify(t, b"modified", lambda v: v + b"0")
    assert txn.modify(t, b"modify-deleted", lambda v: None) is None
    assert txn.modify(t, b"modify-inserted", lambda v: b"new") == b"new"
    txn.put(t, b"replaced", b"twice")  # the same key again
    assert len(txn) == 7
    assert t[b"replaced"] == b"twice"
    txn.abort()
    assert len(txn) == 0
    assert dict(t) == before
    txn.abort()  # harmless on an ended transaction
    assert dict(t) == before


def test_modify_outcomes_and_keep(db):
    t = db.tree("t")
    t[b"k"] = b"v"
    with db.transaction() as txn:
        assert txn.modify(t, b"k", lambda v: vmstore.KEEP) == b"v"
        assert len(txn) == 0  # KEEP writes nothing
        assert txn.modify(t, b"absent", lambda v: None) is None
        assert txn.modify(t, b"absent", lambda v: vmstore.KEEP) is None
        assert txn.modify(t, b"k", lambda v: bytearray(v + b"!")) == b"v!"
        assert txn.modify(t, b"k", lambda v: memoryview(b"")) == b""
    assert dict(t) == {b"k": b""}


def test_with_block_commits_on_normal_exit(db):
    t = db.tree("t")
    with db.transaction() as txn:
        txn.put(t, b"a", b"1")
        txn.put(t, b"b", b"2")
    assert dict(t) == {b"a": b"1", b"b": b"2"}
    assert len(txn) == 0


def test_with_block_aborts_when_it_raises(db):
    t = db.tree("t")
    t[b"keep"] = b"1"

    class Mine(Exception):
        pass

    with pytest.raises(Mine):
        with db.transaction() as txn:
            txn.put(t, b"new", b"2")
            txn.delete(t, b"keep")
            raise Mine()
    assert dict(t) == {b"keep": b"1"}
    assert len(txn) == 0
    txn.commit()  # aborted, not pending
    assert dict(t) == {b"keep": b"1"}


def test_reuse_after_commit_and_abort(db):
    t = db.tree("t")
    txn = db.transaction()
    txn.put(t, b"a", b"1")
    txn.commit()
    txn.put(t, b"b", b"2")  # a new transaction
    assert len(txn) == 1
    txn.abort()
    txn.put(t, b"c", b"3")
    txn.commit()
    with txn:
        txn.put(t, b"d", b"4")
    assert dict(t) == {b"a": b"1", b"c": b"3", b"d": b"4"}


def test_large_value_through_get(db):
    t = db.tree("t")
    big = bytes(range(256)) * 400  # larger than a page
    with db.transaction() as txn:
        txn.put(t, b"big", big)
        assert txn.get(t, b"big") == big
    assert t[b"big"] == big


@bounded
def test_locks_conflict_with_busy_error(db):
    """A transaction that holds a lock and waits for another's gets BusyError within
    milliseconds; after it aborts, the other commits."""
    t = db.tree("t")
    holder_has_key = threading.Event()
    release = threading.Event()
    errors = []

    def holder():
        try:
            with db.transaction() as txn:
                txn.put(t, b"k", b"holder")
                holder_has_key.set()
                assert release.wait(TIMEOUT)
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    thread = started(holder)
    assert holder_has_key.wait(TIMEOUT)
    txn = db.transaction()
    txn.put(t, b"j", b"mine")  # holds j: waiting for k ends in BusyError
    start = time.monotonic()
    with pytest.raises(vmstore.BusyError) as info:
        txn.put(t, b"k", b"mine")
    assert time.monotonic() - start < 5
    assert info.value.errno is not None
    assert len(txn) == 1  # still open with its earlier write
    txn.abort()
    assert b"j" not in t
    release.set()
    assert finished(thread)
    assert not errors
    assert t[b"k"] == b"holder"


def transfer_all(db, accounts, threads, transfers, amount_max=10):
    t = db.tree("accounts")
    retries = [0] * threads

    def worker(i):
        rng = random.Random(i)
        for _ in range(transfers):
            a, b = rng.sample(range(accounts), 2)
            amount = rng.randint(1, amount_max)
            while True:
                try:
                    with db.transaction() as txn:
                        ka, kb = b"acct%03d" % a, b"acct%03d" % b
                        va = int(txn.get(t, ka))
                        vb = int(txn.get(t, kb))
                        txn.put(t, ka, b"%d" % (va - amount))
                        txn.put(t, kb, b"%d" % (vb + amount))
                    break
                except vmstore.BusyError:
                    retries[i] += 1

    run_threads(worker, threads)
    return retries


def test_concurrent_transfers_keep_the_sum(db):
    t = db.tree("accounts")
    accounts, start = 8, 1000
    for i in range(accounts):
        t[b"acct%03d" % i] = b"%d" % start
    transfer_all(db, accounts, threads=4, transfers=150)
    values = [int(v) for v in t.values()]
    assert len(values) == accounts
    assert sum(values) == accounts * start
    assert values != [start] * accounts  # money moved


def test_counter_through_modify_loses_nothing(db):
    t = db.tree("counters")
    threads, rounds = 4, 150

    def worker(i):
        for _ in range(rounds):
            while True:
                try:
                    with db.transaction() as txn:
                        txn.modify(t, b"hits", lambda v: b"%d" % (int(v or b"0") + 1))
                        txn.modify(t, b"by-%d" % i, lambda v: b"%d" % (int(v or b"0") + 1))
                    break
                except vmstore.BusyError:
                    pass

    run_threads(worker, threads)
    assert t[b"hits"] == b"%d" % (threads * rounds)
    for i in range(threads):
        assert t[b"by-%d" % i] == b"%d" % rounds


def test_bad_input_changes_nothing_and_keeps_the_transaction(db_path):
    with vmstore.open(db_path, pool_size="16M", log_size="1M") as db:
        t = db.tree("t")
        t[b"present"] = b"p"
        with vmstore.open(db_path + "-other", pool_size="16M") as other_db:
            foreign = other_db.tree("t")
            txn = db.transaction()
            txn.put(t, b"first", b"1")
            for call in (
                lambda: txn.put(None, b"k", b"v"),
                lambda: txn.put({}, b"k", b"v"),
                lambda: txn.put(t, "text", b"v"),
                lambda: txn.put(t, b"k", "text"),
                lambda: txn.put(t, None, b"v"),
                lambda: txn.put(t, b"k", None),
                lambda: txn.put(t, 5, b"v"),
                lambda: txn.delete("t", b"k"),
                lambda: txn.delete(t, "text"),
                lambda: txn.delete(t, None),
                lambda: txn.get(object(), b"k"),
                lambda: txn.get(t, "text"),
                lambda: txn.modify(42, b"k", lambda v: v),
                lambda: txn.modify(t, "text", lambda v: v),
                lambda: txn.modify(t, b"k", b"not callable"),
                lambda: txn.modify(t, b"present", lambda v: "text"),
                lambda: txn.modify(t, b"present", lambda v: 5),
            ):
                with pytest.raises(TypeError):
                    call()
            for call in (
                lambda: txn.put(foreign, b"k", b"v"),
                lambda: txn.delete(foreign, b"k"),
                lambda: txn.get(foreign, b"k"),
                lambda: txn.modify(foreign, b"k", lambda v: b"x"),
                lambda: txn.put(t, b"", b"v"),
                lambda: txn.delete(t, b""),
                lambda: txn.get(t, b""),
                lambda: txn.modify(t, b"", lambda v: b"x"),
            ):
                with pytest.raises(vmstore.InvalidArgumentError):
                    call()
            for call in (
                lambda: txn.put(t, b"k" * (vmstore.MAX_KEY_SIZE + 1), b"v"),
                lambda: txn.delete(t, b"k" * (vmstore.MAX_KEY_SIZE + 1)),
                lambda: txn.get(t, b"k" * (vmstore.MAX_KEY_SIZE + 1)),
                # A record over a sixteenth of log_size (64K here).
                lambda: txn.put(t, b"big", b"x" * (100 << 10)),
                lambda: txn.modify(t, b"big", lambda v: b"x" * (100 << 10)),
            ):
                with pytest.raises(vmstore.TooBigError):
                    call()
            with pytest.raises(KeyError):
                txn.delete(t, b"absent")
            assert foreign.get(b"k") is None
            assert len(txn) == 1  # still open, with its first write only
            assert dict(t) == {b"present": b"p", b"first": b"1"}
            txn.put(t, b"second", b"2")
            txn.commit()
            assert dict(t) == {b"present": b"p", b"first": b"1", b"second": b"2"}
            t[b"big"] = b"x" * (100 << 10)  # a plain put takes it
            assert len(t[b"big"]) == 100 << 10


def test_a_failing_modify_function_changes_nothing(db):
    t = db.tree("t")
    t[b"k"] = b"v"

    class Mine(Exception):
        pass

    def fail(value):
        raise Mine(value)

    txn = db.transaction()
    txn.put(t, b"earlier", b"1")
    with pytest.raises(Mine) as info:
        txn.modify(t, b"k", fail)
    assert info.value.args == (b"v",)
    assert t[b"k"] == b"v"
    assert len(txn) == 1  # open, with its earlier write
    assert txn.modify(t, b"k", lambda v: v + b"!") == b"v!"
    txn.commit()
    assert dict(t) == {b"k": b"v!", b"earlier": b"1"}


@bounded
def test_modify_function_must_not_use_the_database(db):
    t = db.tree("t")
    txn = db.transaction()

    def reenter(v):
        txn.put(t, b"other", b"x")
        return b"never"

    with pytest.raises(RuntimeError):
        txn.modify(t, b"k", reenter)
    with pytest.raises(RuntimeError):
        txn.modify(t, b"k", lambda v: t.get(b"k"))
    assert b"k" not in t and b"other" not in t
    txn.abort()


@bounded
def test_closed_database(db_path):
    db = vmstore.open(db_path, pool_size="16M")
    t = db.tree("t")
    t[b"k"] = b"before"
    idle = db.transaction()
    open_txn = db.transaction()
    open_txn.put(t, b"k", b"during")
    db.close()  # aborts the open transaction
    with pytest.raises(vmstore.ClosedError):
        db.transaction()
    with pytest.raises(vmstore.ClosedError, match="aborted"):
        open_txn.commit()
    for txn in (idle, open_txn):
        with pytest.raises(vmstore.ClosedError):
            txn.put(t, b"k", b"v")
        with pytest.raises(vmstore.ClosedError):
            txn.delete(t, b"k")
        with pytest.raises(vmstore.ClosedError):
            txn.get(t, b"k")
        with pytest.raises(vmstore.ClosedError):
            txn.modify(t, b"k", lambda v: v)
        with pytest.raises(vmstore.ClosedError):
            txn.commit()
        with pytest.raises(vmstore.ClosedError):
            txn.commit_nowait()
        txn.abort()  # harmless
        assert len(txn) == 0
    with vmstore.open(db_path, pool_size="16M") as db:
        assert db.tree("t")[b"k"] == b"before"


@bounded
def test_abort_after_close_does_not_raise(db):
    t = db.tree("t")
    with pytest.raises(ZeroDivisionError):
        with db.transaction() as txn:
            txn.put(t, b"k", b"v")
            db.close()
            1 / 0
    assert db.closed


def test_dropped_tree(db):
    t = db.tree("t")
    t[b"k"] = b"v"
    txn = db.transaction()
    db.drop_tree("t")
    for call in (
        lambda: txn.put(t, b"k", b"v"),
        lambda: txn.delete(t, b"k"),
        lambda: txn.get(t, b"k"),
        lambda: txn.modify(t, b"k", lambda v: v),
    ):
        with pytest.raises(vmstore.ClosedError):
            call()
    fresh = db.tree("t")
    assert fresh is not t and len(fresh) == 0
    txn.put(fresh, b"k", b"new")
    txn.commit()
    assert dict(fresh) == {b"k": b"new"}


@bounded
def test_drop_tree_waits_for_open_transactions(db):
    t, doomed = db.tree("t"), db.tree("doomed")
    doomed[b"x"] = b"1"
    txn = db.transaction()
    txn.put(t, b"k", b"v")
    dropper = started(db.drop_tree, "doomed")
    time.sleep(0.3)
    assert dropper.is_alive()  # waits for the transaction
    assert db.tree("t") is t  # an opened tree: no wait
    txn.put(db.tree("t"), b"k2", b"v2")
    txn.commit()
    assert finished(dropper)
    assert "doomed" not in db.trees()
    assert dict(t) == {b"k": b"v", b"k2": b"v2"}
    with pytest.raises(vmstore.ClosedError):
        doomed[b"x"]


@bounded
def test_opening_a_tree_in_a_transaction_while_a_drop_waits(db_path):
    with vmstore.open(db_path, pool_size="16M") as db:
        db.tree("t")
        db.tree("unopened")[b"x"] = b"1"
        db.tree("doomed")
    with vmstore.open(db_path, pool_size="16M") as db:  # "unopened" not opened yet
        t = db.tree("t")
        txn = db.transaction()
        txn.put(t, b"k", b"v")
        dropper = started(db.drop_tree, "doomed")
        time.sleep(0.3)
        assert dropper.is_alive()
        unopened = db.tree("unopened")  # no wait for the drop, which waits for us
        with pytest.raises(RuntimeError):
            db.tree("new")  # creating a tree is a plain write
        txn.abort()
        assert finished(dropper)
        assert unopened[b"x"] == b"1"
        assert "new" not in db.trees()


def test_commit_nowait_and_wait_durable(db_path):
    with vmstore.open(db_path, pool_size="16M", durability="sync") as db:
        t = db.tree("t")
        txn = db.transaction()
        assert txn.commit_nowait() == 0  # nothing begun
        txn.put(t, b"k", b"v")
        point = txn.commit_nowait()
        assert isinstance(point, int) and point > 0
        assert t[b"k"] == b"v"
        db.wait_durable(point)
        txn.put(t, b"k2", b"v2")
        second = txn.commit_nowait()
        assert second > point
        db.wait_durable(second)
    with vmstore.open(db_path, pool_size="16M") as db:
        assert dict(db.tree("t")) == {b"k": b"v", b"k2": b"v2"}


@bounded
def test_reopen_shows_committed_data_only(db_path):
    with vmstore.open(db_path, pool_size="16M", durability="sync") as db:
        t, u = db.tree("t"), db.tree("u")
        t[b"deleted"] = b"x"
        with db.transaction() as txn:
            txn.put(t, b"a", b"1")
            txn.put(u, b"b", b"2")
            txn.delete(t, b"deleted")
            txn.modify(u, b"c", lambda v: b"3")
        txn.put(t, b"uncommitted", b"!")  # open when the database closes: aborted
    with vmstore.open(db_path, pool_size="16M") as db:
        assert dict(db.tree("t")) == {b"a": b"1"}
        assert dict(db.tree("u")) == {b"b": b"2", b"c": b"3"}


# --- threads -------------------------------------------------------------------------


@bounded
def test_an_open_transaction_may_go_on_from_another_thread(db):
    """Between calls, another thread may go on with an open transaction: that thread then
    holds it (its plain writes and sync are refused) and the first thread is free."""
    t = db.tree("t")
    txn = db.transaction()
    txn.put(t, b"k", b"v")
    seen = {}

    def elsewhere():
        txn.put(t, b"j", b"w")
        assert txn.get(t, b"k") == b"v" and len(txn) == 2
        with pytest.raises(RuntimeError):
            t[b"x"] = b"1"  # this thread holds the transaction now
        with pytest.raises(vmstore.BusyError):
            db.sync()
        seen["repr"] = repr(txn)

    run_threads(lambda i: elsewhere(), 1)
    assert "of 2 writes" in seen["repr"]
    t[b"plain"] = b"here"  # this thread no longer holds it (another key than k and j)
    txn.commit()  # any thread may end it
    db.sync()
    assert dict(t) == {b"k": b"v", b"j": b"w", b"plain": b"here"}
    # Ended: any thread may begin the next one.
    run_threads(lambda i: (txn.put(t, b"n", b"x"), txn.commit()), 1)
    assert t[b"n"] == b"x"


@bounded
def test_a_thread_goes_on_with_one_open_transaction_at_most(db):
    t = db.tree("t")
    first = db.transaction()
    handed = threading.Event()
    finished_other = threading.Event()

    def other():
        first.put(t, b"a", b"1")
        handed.set()
        assert finished_other.wait(TIMEOUT)

    thread = started(other)
    assert handed.wait(TIMEOUT)
    mine = db.transaction()
    mine.put(t, b"b", b"2")
    with pytest.raises(RuntimeError):
        first.put(t, b"c", b"3")  # this thread holds one of the database already
    mine.commit()
    first.put(t, b"c", b"3")  # now it may go on with it here
    first.abort()
    finished_other.set()
    assert finished(thread)
    assert dict(t) == {b"b": b"2"}


def test_one_thread_at_a_time(db):
    t = db.tree("t")
    txn = db.transaction()
    inside = threading.Event()
    go_on = threading.Event()
    errors = []

    def slow(v):
        inside.set()
        go_on.wait(TIMEOUT)
        return b"done"

    def other():
        assert inside.wait(TIMEOUT)
        try:
            for call in (lambda: txn.put(t, b"j", b"v"), lambda: txn.commit(), lambda: len(txn)):
                with pytest.raises(RuntimeError):
                    call()
        except BaseException as e:  # noqa: BLE001
            errors.append(e)
        go_on.set()

    thread = started(other)
    assert txn.modify(t, b"k", slow) == b"done"
    assert finished(thread)
    assert not errors
    txn.commit()
    assert t[b"k"] == b"done"


@bounded
def test_what_the_thread_of_an_open_transaction_may_not_do(db):
    t = db.tree("t")
    t[b"k"] = b"v"
    batch = db.batch()
    batch.put(t, b"b", b"1")
    txn = db.transaction()
    txn.put(t, b"k", b"txn")
    # Plain writes could wait for the transaction's own locks: RuntimeError.
    for call in (
        lambda: t.__setitem__(b"x", b"1"),
        lambda: t.__delitem__(b"k"),
        lambda: t.pop(b"k"),
        lambda: t.modify(b"k", lambda v: v),
        lambda: t.clear(),
        lambda: batch.write(),
        lambda: db.tree("not yet created"),
        lambda: db.transaction().put(t, b"y", b"1"),  # a second one here
    ):
        with pytest.raises(RuntimeError):
            call()
    # Calls that wait for every open transaction: BusyError.
    for call in (db.sync, db.check, lambda: db.drop_tree("t")):
        with pytest.raises(vmstore.BusyError):
            call()
    # Reads are fine, and so is another database.
    assert t[b"k"] == b"txn"
    assert list(t.keys()) == [b"k"]
    assert db.tree("t") is t
    with pytest.raises(KeyError):
        db.tree("not yet created", create=False)
    txn.commit()
    # Ended: all of it works again.
    t[b"x"] = b"1"
    batch.write()
    db.sync()
    db.check()
    db.tree("now created")
    assert dict(t) == {b"k": b"txn", b"x": b"1", b"b": b"1"}


@bounded
def test_other_threads_write_while_a_transaction_is_open(db):
    t = db.tree("t")
    txn = db.transaction()
    txn.put(t, b"locked", b"txn")

    def writer(i):
        t[b"free-%d" % i] = b"x"
        db.tree("made-%d" % i)

    run_threads(writer, 2)
    syncer = started(db.sync)  # waits for the transaction
    time.sleep(0.2)
    assert syncer.is_alive()
    txn.commit()
    assert finished(syncer)
    assert t[b"locked"] == b"txn" and t[b"free-1"] == b"x"


def test_close_from_another_thread_aborts_open_transactions(db_path):
    db = vmstore.open(db_path, pool_size="16M")
    t = db.tree("t")
    t[b"k"] = b"before"
    has_key = threading.Event()
    closed = threading.Event()
    seen = []

    def owner():
        txn = db.transaction()
        txn.put(t, b"k", b"during")
        txn.put(t, b"new", b"x")
        has_key.set()
        assert closed.wait(TIMEOUT)
        for call in (lambda: txn.put(t, b"k", b"after"), lambda: txn.commit()):
            try:
                call()
                seen.append("no error")
            except vmstore.ClosedError as e:
                seen.append(str(e))

    thread = started(owner)
    assert has_key.wait(TIMEOUT)
    closer = started(db.close)
    assert finished(closer)  # did not wait for the idle transaction
    assert db.closed
    closed.set()
    assert finished(thread)
    assert len(seen) == 2 and "aborted" in seen[0] and "closed" in seen[1]
    with vmstore.open(db_path, pool_size="16M") as db:
        assert dict(db.tree("t")) == {b"k": b"before"}


def test_close_while_a_transaction_waits_for_a_lock(db_path):
    """One transaction holds a key, another (holding none) waits for it inside a call:
    close aborts the holder, the waiter's call finishes, and close aborts it too."""
    db = vmstore.open(db_path, pool_size="16M")
    t = db.tree("t")
    t[b"k"] = b"before"
    holding = threading.Event()
    closed = threading.Event()
    results = {}

    def holder():
        txn = db.transaction()
        txn.put(t, b"k", b"holder")
        holding.set()
        closed.wait(TIMEOUT)
        try:
            txn.commit()
            results["holder"] = "committed"
        except vmstore.ClosedError:
            results["holder"] = "closed"

    def waiter():
        txn = db.transaction()
        try:
            txn.put(t, b"k", b"waiter")  # waits for the holder
            results["waiter put"] = "ok"
        except vmstore.ClosedError:
            results["waiter put"] = "closed"
        closed.wait(TIMEOUT)
        try:
            txn.commit()
            results["waiter"] = "committed"
        except vmstore.ClosedError:
            results["waiter"] = "closed"

    h = started(holder)
    assert holding.wait(TIMEOUT)
    w = started(waiter)
    time.sleep(0.2)
    closer = started(db.close)
    assert finished(closer)
    closed.set()
    assert finished(h) and finished(w)
    assert results["holder"] == "closed" and results["waiter"] == "closed"
    with vmstore.open(db_path, pool_size="16M") as db:
        assert db.tree("t")[b"k"] == b"before"


@bounded
def test_garbage_collection_aborts(db):
    t = db.tree("t")
    t[b"k"] = b"before"
    txn = db.transaction()
    txn.put(t, b"k", b"during")
    txn.put(t, b"new", b"x")
    del txn
    assert dict(t) == {b"k": b"before"}
    # Its locks are gone: another transaction takes the key at once.
    with db.transaction() as txn:
        txn.put(t, b"j", b"1")  # holds a lock, so a wait would end in BusyError
        txn.put(t, b"k", b"after")
    assert t[b"k"] == b"after"
    t[b"plain"] = b"write"  # this thread has nothing open


@bounded
def test_garbage_collection_on_another_thread(db):
    """Collected on another thread, an open transaction is aborted at once, and the
    thread it was open on is free: it may sync, write and begin another."""
    t = db.tree("t")
    t[b"k"] = b"before"
    handed = []
    dropped = threading.Event()
    after = {}

    def owner():
        txn = db.transaction()
        txn.put(t, b"k", b"during")
        handed.append(txn)
        del txn
        assert dropped.wait(TIMEOUT)
        after["read"] = t.get(b"k")
        db.sync()  # nothing open on this thread any more
        t[b"plain"] = b"ok"
        with db.transaction() as txn:
            txn.put(t, b"k", b"owner again")

    thread = started(owner)
    while not handed:
        time.sleep(0.01)
    handed.clear()  # the last reference: collected here, on another thread
    assert t[b"k"] == b"before"  # aborted at once
    dropped.set()
    assert finished(thread)
    assert after["read"] == b"before"
    assert dict(t) == {b"k": b"owner again", b"plain": b"ok"}


def test_abort_on_another_thread_frees_the_owner_thread(db_path):
    """A transaction aborted on another thread than the one it is open on leaves nothing
    behind there: that thread may sync and close the database."""
    db = vmstore.open(db_path, pool_size="16M")
    t = db.tree("t")
    t[b"k"] = b"before"
    txn = db.transaction()
    has_key = threading.Event()
    aborted = threading.Event()
    errors = []

    def owner():
        try:
            txn.put(t, b"k", b"during")
            has_key.set()
            assert aborted.wait(TIMEOUT)
            db.sync()
            db.close()
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    thread = started(owner)
    assert has_key.wait(TIMEOUT)
    txn.abort()
    aborted.set()
    assert finished(thread)
    assert not errors
    assert db.closed
    with vmstore.open(db_path, pool_size="16M") as db:
        assert db.tree("t")[b"k"] == b"before"


def test_collecting_the_database_after_a_transaction_collected_elsewhere(db_path):
    """A transaction collected on another thread than its own, then its database
    collected without close() while that thread lives: closed cleanly, nothing kept."""
    import gc

    db = vmstore.open(db_path, pool_size="16M")
    t = db.tree("t")
    t[b"k"] = b"before"
    handed = []
    done = threading.Event()

    def owner():
        txn = db.transaction()
        txn.put(t, b"k", b"during")
        handed.append(txn)
        del txn
        done.wait(TIMEOUT)

    thread = started(owner)
    while not handed:
        time.sleep(0.01)
    handed.clear()  # aborted here, while the owner thread stays alive
    del db, t
    gc.collect()  # the Database and its trees refer to each other
    with vmstore.open(db_path, pool_size="16M") as db:  # closed: the directory lock is free
        assert db.tree("t")[b"k"] == b"before"
    done.set()
    assert finished(thread)


def test_a_transaction_of_an_ended_thread_goes_on(db):
    t = db.tree("t")
    handed = []

    def owner():
        txn = db.transaction()
        txn.put(t, b"k", b"from the ended thread")
        handed.append(txn)

    thread = started(owner)
    assert finished(thread)
    txn = handed.pop()
    txn.put(t, b"j", b"from this one")
    txn.commit()
    assert dict(t) == {b"k": b"from the ended thread", b"j": b"from this one"}
    t[b"plain"] = b"ok"  # nothing is left open here
    db.sync()


def test_repr(db):
    t = db.tree("t")
    txn = db.transaction()
    assert repr(txn).startswith("<vmstore.Transaction of 0 writes on ")
    txn.put(t, b"k", b"v")
    assert "of 1 write on" in repr(txn)
    txn.abort()
