"""Replacement policies from Python: the config keys policy and resident_set, data intact
out of memory under each, the replacement counters in stats(), and clear errors."""

import random

import pytest

import vmstore

POLICIES = ["clock", "fifo", "lru", "lru2", "2q", "slru", "arc", "random", "gclock", "lfuda",
            "leanstore", "s3fifo", "sieve"]


@pytest.mark.parametrize("policy", POLICIES)
def test_every_policy_keeps_data_intact_out_of_memory(db_path, policy):
    db = vmstore.open(db_path, pool_size="1M", durability="none", policy=policy)
    tree = db.tree()
    n = 6000  # ~4x the 1 MiB pool
    for i in range(n):
        tree[b"%06d" % i] = bytes([i % 251]) * 200
    order = list(range(n))
    random.Random(1).shuffle(order)
    for i in order:
        assert tree[b"%06d" % i] == bytes([i % 251]) * 200
    stats = db.stats()
    assert stats["resident_pages"] <= stats["pool_pages"]
    assert stats["evictions"] > 0 and stats["victim_ns"] > 0
    db.close()


def test_bitmap_resident_set(db_path):
    db = vmstore.open(db_path, pool_size="1M", durability="none", resident_set="bitmap", policy="sieve")
    tree = db.tree()
    for i in range(5000):
        tree[b"%06d" % i] = b"x" * 200
    assert all(tree[b"%06d" % i] == b"x" * 200 for i in range(0, 5000, 7))
    assert db.stats()["resident_set_bytes"] > 0
    db.close()


def test_unknown_policy_is_a_clear_error(db_path):
    with pytest.raises(vmstore.InvalidArgumentError, match="policy='mru'.*known: clock"):
        vmstore.open(db_path, policy="mru")
    with pytest.raises(vmstore.InvalidArgumentError, match="resident_set"):
        vmstore.open(db_path, resident_set="tree")
