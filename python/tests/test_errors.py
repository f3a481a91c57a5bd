"""Every exception the binding raises, and that bad input changes nothing stored."""

import errno
import mmap
import os

import pytest

import vmstore


def test_hierarchy():
    for cls in (
        vmstore.InvalidArgumentError,
        vmstore.ClosedError,
        vmstore.TooBigError,
        vmstore.StorageIOError,
        vmstore.CorruptionError,
        vmstore.NoSpaceError,
        vmstore.NoMemoryError,
        vmstore.BusyError,
    ):
        assert issubclass(cls, vmstore.Error)
    assert issubclass(vmstore.Error, OSError)
    assert issubclass(vmstore.TooBigError, ValueError)
    assert issubclass(vmstore.InvalidArgumentError, ValueError)
    assert issubclass(vmstore.ClosedError, vmstore.InvalidArgumentError)
    assert vmstore.CorruptionError.problems == ()
    assert vmstore.Error("plain").args == ("plain",)
    assert str(vmstore.Error("plain")) == "plain"


@pytest.mark.parametrize("bad", ["str", 5, None, 1.5, [b"a"], (b"a",), object()])
def test_type_error_for_non_bytes(tree, bad):
    tree[b"keep"] = b"value"
    with pytest.raises(TypeError, match="bytes"):
        tree[bad] = b"v"
    with pytest.raises(TypeError, match="bytes"):
        tree[b"k"] = bad
    with pytest.raises(TypeError):
        tree[bad]
    with pytest.raises(TypeError):
        del tree[bad]
    with pytest.raises(TypeError):
        tree.get(bad)
    with pytest.raises(TypeError):
        bad in tree
    assert dict(tree) == {b"keep": b"value"}


def test_limits(tree):
    assert vmstore.MAX_VALUE_SIZE == 1 << 30
    big = b"v" * ((8 << 20) - 40)  # the largest value a 16 MiB pool holds (half of it)
    tree[b"k" * vmstore.MAX_KEY_SIZE] = big
    assert tree[b"k" * vmstore.MAX_KEY_SIZE] == big
    with pytest.raises(ValueError) as info:
        tree[b"k" * (vmstore.MAX_KEY_SIZE + 1)] = b"v"
    assert isinstance(info.value, vmstore.TooBigError)
    assert "1025" in str(info.value)
    assert info.value.code == -5
    with pytest.raises(vmstore.TooBigError):
        tree[b"small"] = memoryview(mmap.mmap(-1, vmstore.MAX_VALUE_SIZE + 1))  # zero pages, unread
    with pytest.raises(vmstore.NoMemoryError) as info:
        tree[b"small"] = big + b"v"  # over half the pool
    assert "pool_size" in str(info.value)
    with pytest.raises(vmstore.TooBigError):
        tree[b"k" * (vmstore.MAX_KEY_SIZE + 1)]
    with pytest.raises(vmstore.TooBigError):
        tree.get(b"k" * 5000)
    assert list(tree) == [b"k" * vmstore.MAX_KEY_SIZE]


def test_empty_key(tree):
    with pytest.raises(vmstore.InvalidArgumentError) as info:
        tree[b""] = b"v"
    assert isinstance(info.value, ValueError)
    assert info.value.errno == errno.EINVAL
    assert "empty" in str(info.value)
    with pytest.raises(vmstore.InvalidArgumentError):
        tree[b""]
    assert len(tree) == 0


def test_key_error_carries_the_key(tree):
    with pytest.raises(KeyError) as info:
        tree[b"missing"]
    assert info.value.args == (b"missing",)
    with pytest.raises(KeyError):
        del tree[b"missing"]


def test_busy(db, db_path):
    with pytest.raises(vmstore.BusyError) as info:
        vmstore.open(db_path)
    assert info.value.errno == errno.EBUSY
    assert info.value.code == -7
    assert db_path in str(info.value)


def test_open_errors(tmp_path):
    missing = str(tmp_path / "missing")
    with pytest.raises(vmstore.InvalidArgumentError, match="does not exist"):
        vmstore.open(missing, create=False)
    assert not os.path.exists(missing)
    with pytest.raises(vmstore.InvalidArgumentError, match="bogus"):
        vmstore.open(missing, bogus=1)
    with pytest.raises(vmstore.InvalidArgumentError, match="pool_size"):
        vmstore.open(missing, pool_size="lots")
    with pytest.raises(vmstore.InvalidArgumentError):
        vmstore.open(missing, pool_size=1000)  # below the 1M minimum
    with pytest.raises(ValueError, match="may not contain"):
        vmstore.open(missing, pool_size="16M,create=false")
    with pytest.raises(TypeError):
        vmstore.open(missing, pool_size=1.5)
    with pytest.raises(TypeError):
        vmstore.open(missing, "16M")  # options are keyword-only
    assert not os.path.exists(missing)
    with vmstore.open(missing, pool_size=16 << 20, max_size="64M") as db:
        assert db.tree() is not None


def test_tree_name_errors(db):
    with pytest.raises(TypeError):
        db.tree(b"bytes name")
    with pytest.raises(vmstore.InvalidArgumentError):
        db.tree("n" * (vmstore.MAX_TREE_NAME_SIZE + 1))
    with pytest.raises(KeyError):
        db.tree("absent", create=False)
    with pytest.raises(KeyError):
        db.drop_tree("absent")
    assert db.trees() == []


def test_closed_database_raises_and_never_crashes(db_path):
    db = vmstore.open(db_path, pool_size="16M")
    tree = db.tree("t")
    tree.update({b"%04d" % i: b"v" for i in range(2000)})
    it = iter(tree.items())
    assert next(it) == (b"0000", b"v")
    keys = tree.keys()
    db.close()
    assert db.closed
    db.close()  # twice is harmless
    for call in (
        lambda: tree[b"0001"],
        lambda: tree.__setitem__(b"k", b"v"),
        lambda: tree.__delitem__(b"0001"),
        lambda: b"0001" in tree,
        lambda: len(tree),
        lambda: list(keys),
        lambda: list(it),
        lambda: tree.first(),
        lambda: tree.clear(),
        lambda: db.tree("t"),
        lambda: db.tree("new"),
        lambda: db.trees(),
        lambda: db.drop_tree("t"),
        lambda: db.sync(),
        lambda: db.stats(),
        lambda: db.check(),
    ):
        with pytest.raises(vmstore.ClosedError, match="closed"):
            call()
    assert "closed" in repr(db)
    with vmstore.open(db_path) as again:
        assert len(again.tree("t")) == 2000


def test_dropped_tree_raises(db):
    tree = db.tree("gone")
    tree[b"a"] = b"1"
    it = iter(tree)
    db.drop_tree("gone")
    assert "gone" not in db.trees()
    with pytest.raises(vmstore.ClosedError, match="dropped"):
        tree[b"a"]
    with pytest.raises(vmstore.ClosedError, match="dropped"):
        tree[b"b"] = b"2"
    with pytest.raises(vmstore.ClosedError, match="dropped"):
        next(it)
    fresh = db.tree("gone")
    assert fresh is not tree
    assert len(fresh) == 0
    fresh[b"b"] = b"2"
    assert dict(fresh) == {b"b": b"2"}


def test_no_space(tmp_path):
    with vmstore.open(str(tmp_path / "small"), pool_size="4M", max_size="1M") as db:
        tree = db.tree()
        written = {}
        with pytest.raises(vmstore.NoSpaceError) as info:
            for i in range(100000):
                key = b"%08d" % i
                tree[key] = b"v" * 500
                written[key] = True
        assert info.value.errno == errno.ENOSPC
        assert info.value.code == -4
        assert len(written) > 100
        # What was written before the error is still there.
        assert all(k in tree for k in list(written)[:: max(1, len(written) // 50)])


def test_corruption_is_an_error_not_a_crash(db_path):
    with vmstore.open(db_path, pool_size="16M") as db:
        db.tree().update({b"%05d" % i: b"value" * 10 for i in range(5000)})
    data = os.path.join(db_path, "data.vms")
    with open(data, "r+b") as f:
        size = f.seek(0, os.SEEK_END)
        for page in range(1, size // 4096):  # every page but the superblock
            f.seek(page * 4096 + 100)
            f.write(b"\xde\xad\xbe\xef" * 8)
    with pytest.raises(vmstore.CorruptionError) as info:
        with vmstore.open(db_path, pool_size="16M") as db:
            tree = db.tree()
            tree[b"00001"]
    assert info.value.code == -3
    assert str(info.value)


def test_check_reports_problems(db_path):
    with vmstore.open(db_path, pool_size="16M") as db:
        db.tree().update({b"%05d" % i: b"value" * 10 for i in range(5000)})
        db.check()  # sound: returns None
        db.tree("second")[b"x"] = b"y"
        assert db.check() is None
        pages = db.stats()["page_count"]  # the file may be allocated beyond them
    data = os.path.join(db_path, "data.vms")
    with open(data, "r+b") as f:
        f.seek((pages - 2) * 4096 + 200)  # a page near the end of those in use
        f.write(b"\x55" * 64)
    try:
        db = vmstore.open(db_path, pool_size="16M")
    except vmstore.CorruptionError:
        return  # found at open: also an error, not a crash
    try:
        with pytest.raises(vmstore.CorruptionError) as info:
            db.check()
        assert info.value.problems
        assert all(isinstance(p, str) for p in info.value.problems)
    finally:
        try:
            db.close()
        except vmstore.Error:
            pass


def test_error_attributes(db, db_path):
    try:
        vmstore.open(db_path)
    except vmstore.Error as e:
        assert isinstance(e, OSError)
        assert e.strerror == str(e)
        assert e.args[0] == errno.EBUSY
        assert e.code == vmstore.BusyError.code
    else:
        pytest.fail("no BusyError")
