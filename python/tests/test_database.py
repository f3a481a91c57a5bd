"""The Database: open and reopen, the context manager, trees, sync, stats, check, and
closing at exit or on garbage collection."""

import gc
import os
import pathlib
import subprocess
import sys

import pytest

import vmstore


def test_context_manager_closes(db_path):
    with vmstore.open(db_path, pool_size="16M") as db:
        assert not db.closed
        db.tree()[b"k"] = b"v"
    assert db.closed
    with pytest.raises(ZeroDivisionError):
        with vmstore.open(db_path) as db:
            db.tree()[b"k2"] = b"v2"
            1 / 0
    assert db.closed
    with vmstore.open(db_path, create=False) as db:
        # Written before the exception: closing on the way out kept it.
        assert dict(db.tree()) == {b"k": b"v", b"k2": b"v2"}


def test_reopen_keeps_every_tree(db_path):
    content = {name: {b"%s-%d" % (name.encode(), i): b"%d" % i for i in range(500)} for name in ("", "a", "b\u00e9")}
    with vmstore.open(db_path, pool_size="16M") as db:
        for name, items in content.items():
            db.tree(name).update(items)
        assert db.trees() == sorted(content, key=lambda n: n.encode())
    with vmstore.open(db_path, pool_size="16M", create=False) as db:
        assert db.trees() == sorted(content, key=lambda n: n.encode())
        for name, items in content.items():
            assert db.tree(name, create=False) == items


def test_path_forms(tmp_path):
    with vmstore.open(tmp_path / "pathlib", pool_size="8M") as db:
        assert db.path == str(tmp_path / "pathlib")
    with vmstore.open(os.fsencode(tmp_path / "bytes"), pool_size="8M") as db:
        assert db.path == str(tmp_path / "bytes")
    assert (pathlib.Path(tmp_path) / "pathlib" / "data.vms").exists()


def test_trees_and_drop(db):
    assert db.trees() == []
    first = db.tree("first")
    assert db.tree("first") is first
    assert first.name == "first" and first.database is db
    first[b"k"] = b"v"
    db.tree()
    assert db.trees() == ["", "first"]
    db.drop_tree("first")
    assert db.trees() == [""]
    assert db.stats()["trees"] == 1
    assert len(db.tree("first")) == 0
    db.check()


def test_sync_and_stats(db):
    tree = db.tree()
    tree.update({b"%05d" % i: b"v" * 100 for i in range(3000)})
    db.sync()
    stats = db.stats()
    assert set(stats) == {
        "hits",
        "misses",
        "evictions",
        "pages_written",
        "restarts",
        "release_calls",
        "read_ahead_pages",
        "huge_page_bytes",
        "huge_pages_in_memory",
        "victim_ns",
        "victims_kept",
        "policy_bytes",
        "resident_set_bytes",
        "tlb_shootdowns",
        "tiers",
        "demoted_pages",
        "promoted_pages",
        "migrate_failures",
        "migrate_calls",
        "migrate_ns",
        "migrate_tlb_shootdowns",
        "pool_pages",
        "resident_pages",
        "page_count",
        "free_pages",
        "file_bytes",
        "trees",
        "log_bytes",
        "log_appended_bytes",
        "log_file_bytes",
        "log_flushes",
        "checkpoints",
        "checkpoint_cuts",
        "checkpoint_cut_wait_us",
        "checkpoint_cut_wait_max_us",
        "log_full_waits",
        "recovered_records",
        "recovered_operations",
        "recovered_bytes",
        "recovered_checkpoint",
        "recovery_us",
    }
    assert all(isinstance(v, int) for k, v in stats.items() if k != "tiers")
    assert stats["tiers"] == []  # no memory tiers configured
    assert stats["pool_pages"] == (16 << 20) // 4096
    assert 0 < stats["resident_pages"] <= stats["pool_pages"]
    assert stats["pages_written"] > 0 and stats["file_bytes"] > 0
    assert stats["trees"] == 1
    assert stats["checkpoints"] >= 1 and stats["log_bytes"] == 0  # the sync recycled the log


@pytest.mark.parametrize("mode", ["sync", "async", "none"])
def test_durability_modes(db_path, mode):
    with vmstore.open(db_path, pool_size="4M", durability=mode) as db:
        db.tree()[b"k"] = b"v"
        assert (db.stats()["log_bytes"] > 0) == (mode != "none")
    with vmstore.open(db_path, pool_size="4M") as db:
        assert db.tree()[b"k"] == b"v"


def test_bad_durability_raises(db_path):
    with pytest.raises(ValueError, match="durability"):
        vmstore.open(db_path, durability="sometimes")


def test_data_larger_than_the_pool(db_path):
    # 1 MiB pool, about 8 MiB of data: pages are evicted and read back.
    with vmstore.open(db_path, pool_size="1M") as db:
        tree = db.tree()
        for i in range(8000):
            tree[b"%06d" % i] = bytes([i % 251]) * 1000
        assert db.stats()["evictions"] > 0
        assert db.stats()["resident_pages"] <= 256
        for i in range(0, 8000, 7):
            assert tree[b"%06d" % i] == bytes([i % 251]) * 1000
        assert db.stats()["misses"] > 0
        db.check()


def test_repr(db, tree):
    assert repr(db) == f"<vmstore.Database {db.path!r} open>"
    assert repr(tree) == f"<vmstore.Tree '' in {db.path!r}>"
    assert repr(tree.keys(start=b"a", reverse=True)) == f"TreeKeysView({tree!r}, start=b'a', reverse=True)"
    assert repr(tree.values()) == f"TreeValuesView({tree!r})"
    assert repr(tree.items(stop=b"z")) == f"TreeItemsView({tree!r}, stop=b'z')"


def test_tree_cannot_be_pickled(tree):
    import pickle

    with pytest.raises(TypeError):
        pickle.dumps(tree)


def run_python(code):
    """Runs code in a fresh interpreter; returns its stdout."""
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_open_database_is_closed_at_exit(db_path):
    # No close(): the interpreter's exit closes it, so everything is on storage and the
    # directory lock is released.
    run_python(
        f"import vmstore\n"
        f"db = vmstore.open({db_path!r}, pool_size='8M')\n"
        f"db.tree('t').update({{b'%04d' % i: b'v' for i in range(3000)}})\n"
    )
    with vmstore.open(db_path, create=False) as db:
        assert len(db.tree("t", create=False)) == 3000
        db.check()


def test_collected_database_is_closed(db_path):
    db = vmstore.open(db_path, pool_size="8M")
    db.tree()[b"k"] = b"v"
    tree = db.tree()
    del db
    gc.collect()
    # The tree still holds the database open (a handle keeps its database alive).
    assert tree[b"k"] == b"v"
    with pytest.raises(vmstore.BusyError):
        vmstore.open(db_path)
    del tree
    gc.collect()
    with vmstore.open(db_path, create=False) as again:
        assert again.tree()[b"k"] == b"v"
