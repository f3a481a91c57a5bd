"""Tree.get_many: the values of many keys in one call, their page misses in flight together
(issue 7). Checked against get() per key, in memory and with data several times a 1 MiB
pool, with absent keys, a default, bad keys, and a closed database."""

import random

import pytest

import vmstore


def test_get_many_matches_get(tmp_path):
    with vmstore.open(tmp_path / "db", pool_size="1M", durability="none") as db:
        t = db.tree()
        n = 30000  # several times the pool
        for start in range(0, n, 5000):
            with db.batch() as b:
                for i in range(start, start + 5000):
                    b.put(t, b"k%08d" % i, b"v%d" % i * 10)
        db.sync()
        rng = random.Random(5)
        keys = [b"k%08d" % rng.randrange(n + 1000) for _ in range(500)]
        keys.append(bytearray(b"k00000001"))
        keys.append(memoryview(b"k00000002"))
        got = t.get_many(keys)
        assert got == [t.get(bytes(k)) for k in keys]
        assert any(v is None for v in got) and any(v is not None for v in got)
        assert t.get_many(keys[:3], default=b"-") == [t.get(bytes(k), b"-") for k in keys[:3]]
        assert t.get_many([]) == []
        assert t.get_many(iter([b"k00000003"])) == [b"v3" * 10]
        assert db.stats()["misses"] > 0


def test_get_many_bad_input(tmp_path):
    db = vmstore.open(tmp_path / "db")
    t = db.tree()
    t[b"a"] = b"1"
    with pytest.raises(TypeError):
        t.get_many([b"a", "text"])
    with pytest.raises(TypeError):
        t.get_many(5)
    with pytest.raises(ValueError):
        t.get_many([b"a", b""])
    with pytest.raises(vmstore.TooBigError):
        t.get_many([b"x" * (vmstore.MAX_KEY_SIZE + 1)])
    db.close()
    with pytest.raises(vmstore.ClosedError):
        t.get_many([b"a"])
