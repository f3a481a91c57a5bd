"""vmstore.dbm: the contract of Python's dbm modules (dbm.gnu / dbm.dumb), and shelve."""

import os
import shelve
import stat

import pytest

import vmstore
import vmstore.dbm

ITEMS = {b"a": b"b", b"12345678910": b"019237410982340912840198242", b"\xff\x00": b"", b"empty-value": b""}


@pytest.fixture
def path(tmp_path):
    return str(tmp_path / "dbm")


def test_create_write_read(path):
    with vmstore.dbm.open(path, "c") as db:
        for k, v in ITEMS.items():
            db[k] = v
        assert len(db) == len(ITEMS)
    with vmstore.dbm.open(path, "r") as db:
        assert sorted(db.keys()) == sorted(ITEMS)
        assert isinstance(db.keys(), list)
        for k, v in ITEMS.items():
            assert k in db
            assert db[k] == v
            assert db.get(k) == v
        assert db.get(b"absent") is None
        assert db.get(b"absent", b"x") == b"x"
        with pytest.raises(KeyError):
            db[b"absent"]


def test_str_is_utf8(path):
    with vmstore.dbm.open(path, "c") as db:
        db["\u00fcber"] = "gr\u00fc\u00dfe"
        assert db["\u00fcber".encode()] == "gr\u00fc\u00dfe".encode()
        assert db[b"\xc3\xbcber"] == b"gr\xc3\xbc\xc3\x9fe"
        assert "\u00fcber" in db
        del db["\u00fcber"]
        assert len(db) == 0
        with pytest.raises(TypeError):
            db[5] = b"x"
        with pytest.raises(TypeError):
            db[b"x"] = 5


def test_flags(path):
    with pytest.raises(vmstore.dbm.error):
        vmstore.dbm.open(path, "r")  # missing
    with pytest.raises(vmstore.dbm.error):
        vmstore.dbm.open(path, "w")  # missing
    assert not os.path.exists(path)
    with vmstore.dbm.open(path, "c") as db:
        db[b"k"] = b"v"
    with vmstore.dbm.open(path, "w") as db:
        assert db[b"k"] == b"v"
        db[b"k2"] = b"v2"
    with vmstore.dbm.open(path, "r") as db:
        assert len(db) == 2
        with pytest.raises(vmstore.dbm.error, match="read-only"):
            db[b"k3"] = b"v"
        with pytest.raises(vmstore.dbm.error):
            del db[b"k"]
        with pytest.raises(vmstore.dbm.error):
            db.setdefault(b"new", b"v")
        assert len(db) == 2
    with vmstore.dbm.open(path, "n") as db:
        assert len(db) == 0
        db[b"fresh"] = b"1"
    with vmstore.dbm.open(path) as db:  # 'r' by default
        assert db.keys() == [b"fresh"]
    for flag in ("cf", "cs", "cu", "wsu"):
        with vmstore.dbm.open(path, flag) as db:
            db[flag] = flag
    for bad in ("x", "", "rw", "c+", 5):
        with pytest.raises(vmstore.dbm.error):
            vmstore.dbm.open(path, bad)


def test_new_drops_every_tree(path):
    with vmstore.open(path) as db:
        db.tree("side")[b"x"] = b"y"
        db.tree()[b"a"] = b"b"
    with vmstore.dbm.open(path, "n") as db:
        assert len(db) == 0
    with vmstore.open(path) as db:
        assert db.trees() == [""]


def test_sync_flag_syncs_every_write(path):
    with vmstore.dbm.open(path, "cs") as db:
        db[b"k"] = b"v"
        assert db._db.stats()["pages_written"] > 0


def test_mode_sets_directory_permissions(path, tmp_path):
    vmstore.dbm.open(path, "c", 0o640).close()
    umask = os.umask(0)
    os.umask(umask)

    def directory_mode(mode):
        masked = mode & ~umask
        return masked | (masked & 0o444) >> 2

    assert stat.S_IMODE(os.stat(path).st_mode) == directory_mode(0o640)
    other = str(tmp_path / "default")
    vmstore.dbm.open(other, "c").close()
    assert stat.S_IMODE(os.stat(other).st_mode) == directory_mode(0o666)


def test_setdefault_get_and_gnu_extras(path):
    with vmstore.dbm.open(path, "c") as db:
        assert db.setdefault(b"k") == b""
        assert db.setdefault(b"k", b"other") == b""
        assert db.setdefault("s", "text") == b"text"
        assert db[b"s"] == b"text"
        db.update({b"b": b"1", b"c": b"2"})
        assert db.firstkey() == b"b"
        keys = []
        key = db.firstkey()
        while key is not None:
            keys.append(key)
            key = db.nextkey(key)
        assert keys == sorted(db.keys()) == [b"b", b"c", b"k", b"s"]
        db.reorganize()
        db.sync()
        db.clear()
        assert db.firstkey() is None
        assert list(db) == []


def test_close_is_final(path):
    db = vmstore.dbm.open(path, "c")
    db[b"k"] = b"v"
    db.close()
    db.close()
    for call in (lambda: db[b"k"], lambda: db.keys(), lambda: len(db), lambda: b"k" in db, db.sync):
        with pytest.raises(vmstore.dbm.error):
            call()
    assert "closed" in repr(db)


def test_error_is_vmstore_error(path):
    assert vmstore.dbm.error is vmstore.Error
    with vmstore.dbm.open(path, "c"):
        with pytest.raises(vmstore.dbm.error):
            vmstore.dbm.open(path, "c")  # busy


def test_shelve_round_trip(path):
    value = {"list": [1, 2.5, "three"], "nested": {"t": (1, 2)}, "none": None}
    with shelve.Shelf(vmstore.dbm.open(path, "c")) as shelf:
        shelf["obj"] = value
        shelf["n"] = 42
        assert "obj" in shelf
        assert sorted(shelf.keys()) == ["n", "obj"]
    with shelve.Shelf(vmstore.dbm.open(path, "r")) as shelf:
        assert shelf["obj"] == value
        assert shelf["n"] == 42
        assert len(shelf) == 2
        assert dict(shelf.items()) == {"obj": value, "n": 42}
    with shelve.Shelf(vmstore.dbm.open(path, "w"), writeback=True) as shelf:
        shelf["obj"]["list"].append(4)
        del shelf["n"]
    with shelve.Shelf(vmstore.dbm.open(path, "r")) as shelf:
        assert shelf["obj"]["list"] == [1, 2.5, "three", 4]
        assert "n" not in shelf
