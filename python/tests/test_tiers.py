"""Memory tiers from Python: tiers=[(node, size), ...] (or the config string), data intact
beyond the pool, each tier within its budget in stats(), and clear errors."""

import os

import pytest

import vmstore


def first_node():
    nodes = sorted(int(n[4:]) for n in os.listdir("/sys/devices/system/node")
                   if n.startswith("node") and n[4:].isdigit()) if os.path.isdir("/sys/devices/system/node") else []
    return nodes[0] if nodes else 0


def test_two_tiers_keep_data_and_budgets(db_path):
    node = first_node()
    db = vmstore.open(db_path, durability="none", tiers=[(node, "1M"), (node, "2M")], migrate_batch=16)
    tree = db.tree()
    n = 15000  # ~4x the 3 MiB pool
    for i in range(n):
        tree[b"%06d" % i] = bytes([i % 251]) * 150
    assert all(tree[b"%06d" % i] == bytes([i % 251]) * 150 for i in range(0, n, 3))
    stats = db.stats()
    assert [t["budget_pages"] for t in stats["tiers"]] == [256, 512]
    assert all(t["pages"] <= t["budget_pages"] for t in stats["tiers"])
    assert stats["demoted_pages"] > 0 and stats["evictions"] > 0
    assert stats["migrate_failures"] == 0
    db.check()  # raises CorruptionError if a tier count or budget is off
    db.close()
    # The config string works too, and nothing about tiers is stored.
    db = vmstore.open(db_path, create=False, tiers=f"{node}:2M+{node}:2M")
    assert db.tree()[b"000003"] == bytes([3]) * 150
    assert len(db.stats()["tiers"]) == 2
    db.close()
    db = vmstore.open(db_path, create=False, pool_size="2M")
    assert db.stats()["tiers"] == []
    db.close()


def test_tier_errors_are_clear(db_path):
    with pytest.raises(vmstore.InvalidArgumentError, match="pool_size and tiers"):
        vmstore.open(db_path, pool_size="4M", tiers="0:1M+0:2M")
    with pytest.raises(vmstore.InvalidArgumentError, match="node 999 has no memory"):
        vmstore.open(db_path, tiers=[(0, "1M"), (999, "1M")])
    with pytest.raises(vmstore.InvalidArgumentError, match="policy=clock"):
        vmstore.open(db_path, tiers=[(first_node(), "1M")], policy="lru")
    with pytest.raises(ValueError, match="each tier is"):
        vmstore.open(db_path, tiers=[(0, "1M", "x")])
