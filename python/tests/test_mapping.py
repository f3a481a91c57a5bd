"""The mapping protocol, checked against a dict holding the same items.

In the spirit of CPython's own mapping-protocol tests (Lib/test/mapping_tests.py): every
read-only observation of a Tree (len, bool, in, [], get, the three views, equality, set
operations on the views) must match what a dict with the same items answers, after each
kind of write (setitem, update, pop, popitem, setdefault, del, clear), and after random
operations across reopen. Where a Tree differs from a dict on purpose (iteration order is
key order, not insertion order; keys must be bytes-like), the test says so.
"""

import random
from collections.abc import ItemsView, KeysView, Mapping, MutableMapping, ValuesView

import pytest

import vmstore

REFERENCE = {b"key1": b"value1", b"key2": b"value2", b"key3": b"value3"}
OTHER = {b"other1": b"x", b"other2": b"y"}


def check_same(tree, model):
    """Asserts that every read-only observation of tree matches the dict model."""
    expected = dict(sorted(model.items()))  # a tree iterates in key order
    assert len(tree) == len(model)
    assert bool(tree) == bool(model)
    assert list(tree) == list(expected)
    assert list(reversed(tree)) == list(reversed(expected))
    assert list(tree.keys()) == list(expected.keys())
    assert list(tree.values()) == list(expected.values())
    assert list(tree.items()) == list(expected.items())
    assert len(tree.keys()) == len(tree.values()) == len(tree.items()) == len(model)
    assert tree == model and model == tree
    assert not (tree != model)
    assert tree.keys() == model.keys()
    assert tree.items() == model.items()
    for key, value in model.items():
        assert key in tree
        assert key in tree.keys()
        assert (key, value) in tree.items()
        assert value in tree.values()
        assert tree[key] == value
        assert tree.get(key) == value
        assert tree.get(key, b"default") == value
    for key in OTHER:
        if key not in model:
            assert key not in tree
            assert key not in tree.keys()
            with pytest.raises(KeyError):
                tree[key]
            assert tree.get(key) is None
            assert tree.get(key, 3) == 3
    if model:
        assert tree.first() == min(model.items())
        assert tree.last() == max(model.items())
    else:
        assert tree.first() is None and tree.last() is None


def test_is_a_mutable_mapping(tree):
    assert isinstance(tree, MutableMapping)
    assert isinstance(tree, Mapping)
    assert isinstance(tree.keys(), KeysView)
    assert isinstance(tree.values(), ValuesView)
    assert isinstance(tree.items(), ItemsView)


def test_read_empty_and_full(tree):
    check_same(tree, {})
    tree.update(REFERENCE)
    check_same(tree, REFERENCE)


def test_write_each_kind(tree):
    model = {}
    for key, value in REFERENCE.items():
        tree[key] = value
        model[key] = value
        check_same(tree, model)
    for key in list(REFERENCE):
        tree[key] = b"replaced"
        model[key] = b"replaced"
        check_same(tree, model)
    for key in list(REFERENCE):
        del tree[key]
        del model[key]
        check_same(tree, model)
        with pytest.raises(KeyError):
            del tree[key]


def test_update_forms(tree):
    model = {}
    tree.update(REFERENCE)
    model.update(REFERENCE)
    check_same(tree, model)
    pairs = [(b"p1", b"1"), (b"p2", b"2")]
    tree.update(pairs)
    model.update(pairs)
    check_same(tree, model)

    class KeysOnly:
        """An object with keys() and [], the other form update() accepts."""

        def keys(self):
            return [b"k"]

        def __getitem__(self, key):
            return b"v"

    tree.update(KeysOnly())
    model.update(KeysOnly())
    check_same(tree, model)
    tree.update()  # nothing
    check_same(tree, model)
    with pytest.raises(TypeError):
        tree.update(a=b"1")  # keyword names are str, and keys must be bytes
    with pytest.raises((TypeError, ValueError)):
        tree.update([b"not a pair"])
    check_same(tree, model)


def test_pop(tree):
    tree.update(REFERENCE)
    model = dict(REFERENCE)
    assert tree.pop(b"key1") == model.pop(b"key1")
    check_same(tree, model)
    with pytest.raises(KeyError):
        tree.pop(b"key1")
    assert tree.pop(b"key1", b"dflt") == model.pop(b"key1", b"dflt") == b"dflt"
    assert tree.pop(b"missing", None) is None
    check_same(tree, model)


def test_popitem_takes_the_last_key(tree):
    tree.update(REFERENCE)
    model = dict(REFERENCE)
    while model:
        key, value = tree.popitem()
        # dict.popitem removes the end of its (insertion) order; a tree's order is by key.
        assert key == max(model)
        assert model.pop(key) == value
        check_same(tree, model)
    with pytest.raises(KeyError):
        tree.popitem()


def test_setdefault(tree):
    model = {}
    assert tree.setdefault(b"a", b"1") == model.setdefault(b"a", b"1")
    assert tree.setdefault(b"a", b"2") == model.setdefault(b"a", b"2") == b"1"
    check_same(tree, model)
    # dict stores None; a tree only stores bytes, so the default None is refused
    # and nothing changes.
    with pytest.raises(TypeError):
        tree.setdefault(b"b")
    check_same(tree, model)


def test_clear(tree):
    tree.update({bytes([i, j]): b"v" for i in range(1, 40) for j in range(40)})
    assert len(tree) == 39 * 40
    tree.clear()
    check_same(tree, {})
    tree.clear()
    check_same(tree, {})


def test_equality(tree, db):
    tree.update(REFERENCE)
    assert tree == REFERENCE
    assert tree != OTHER
    assert tree != {**REFERENCE, b"key1": b"changed"}
    assert tree != [1, 2, 3]
    other = db.tree("other")
    assert tree != other
    other.update(REFERENCE)
    assert tree == other
    with pytest.raises(TypeError):
        hash(tree)


def test_keys_view_set_operations(tree):
    tree.update(REFERENCE)
    model = dict(REFERENCE)
    probe = {b"key1", b"key3", b"zzz"}
    assert tree.keys() & probe == model.keys() & probe
    assert tree.keys() | probe == model.keys() | probe
    assert tree.keys() - probe == model.keys() - probe
    assert tree.keys() ^ probe == model.keys() ^ probe
    assert tree.keys().isdisjoint({b"nope"}) == model.keys().isdisjoint({b"nope"})
    assert tree.keys().isdisjoint(probe) == model.keys().isdisjoint(probe)
    assert (tree.keys() <= set(model)) and (tree.keys() >= set(model))
    assert tree.keys() < set(model) | {b"more"}
    assert isinstance(tree.keys() & probe, set)


def test_items_view_set_operations(tree):
    tree.update(REFERENCE)
    model = dict(REFERENCE)
    probe = {(b"key1", b"value1"), (b"key2", b"wrong"), (b"zzz", b"z")}
    assert tree.items() & probe == model.items() & probe
    assert tree.items() | probe == model.items() | probe
    assert tree.items() - probe == model.items() - probe
    assert tree.items() ^ probe == model.items() ^ probe
    assert (b"key2", b"wrong") not in tree.items()
    assert 5 not in tree.items()  # not a pair, as for dict_items
    assert (b"key1",) not in tree.items()


def test_views_are_live(tree):
    keys, values, items = tree.keys(), tree.values(), tree.items()
    assert len(keys) == 0
    tree.update(REFERENCE)
    assert list(keys) == sorted(REFERENCE)
    assert list(values) == [REFERENCE[k] for k in sorted(REFERENCE)]
    assert len(items) == 3
    del tree[b"key2"]
    assert b"key2" not in keys
    assert len(values) == 2


def test_iteration_while_changing_is_allowed(tree):
    # Unlike a dict, a tree may change while it is iterated: deleting every key it
    # yields empties it.
    tree.update({b"%05d" % i: b"v" for i in range(3000)})
    seen = []
    for key in tree:
        seen.append(key)
        del tree[key]
    assert seen == [b"%05d" % i for i in range(3000)]
    assert len(tree) == 0


def test_bytes_like_keys_and_values(tree):
    tree[bytearray(b"ba")] = bytearray(b"bytearray")
    tree[memoryview(b"mv")] = memoryview(b"memoryview")
    tree[memoryview(b"xxslicexx")[2:7]] = memoryview(b"..value..")[2:7]
    assert tree[b"ba"] == b"bytearray"
    assert tree[bytearray(b"mv")] == b"memoryview"
    assert tree[b"slice"] == b"value"
    assert type(tree[b"ba"]) is bytes
    assert all(type(k) is bytes for k in tree)
    assert memoryview(b"ba") in tree
    assert tree.get(bytearray(b"mv")) == b"memoryview"
    del tree[bytearray(b"ba")]
    assert b"ba" not in tree


def test_empty_value_is_a_value(tree):
    tree[b"k"] = b""
    assert tree[b"k"] == b""
    assert b"k" in tree
    assert tree.get(b"k", b"default") == b""


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_operations_against_dict_across_reopen(db_path, seed):
    rng = random.Random(seed)
    model = {}
    keys = [bytes(rng.randrange(256) for _ in range(rng.randint(1, 12))) for _ in range(300)]
    for _round in range(4):
        with vmstore.open(db_path, pool_size="8M") as db:
            tree = db.tree("random")
            check_same(tree, model)
            for _ in range(1500):
                key = rng.choice(keys)
                op = rng.random()
                if op < 0.45:
                    value = bytes(rng.randrange(256) for _ in range(rng.choice([0, 1, 8, 100, 900, 4000])))
                    tree[key] = value
                    model[key] = value
                elif op < 0.6:
                    if key in model:
                        del tree[key]
                        del model[key]
                    else:
                        with pytest.raises(KeyError):
                            del tree[key]
                elif op < 0.7:
                    assert tree.pop(key, None) == model.pop(key, None)
                elif op < 0.75:
                    dflt = b"d%d" % rng.randrange(10)
                    assert tree.setdefault(key, dflt) == model.setdefault(key, dflt)
                elif op < 0.8:
                    batch = {rng.choice(keys): b"u" * rng.randrange(5) for _ in range(5)}
                    tree.update(batch)
                    model.update(batch)
                elif op < 0.82 and model:
                    key, value = tree.popitem()
                    assert model.pop(key) == value
                else:
                    assert tree.get(key) == model.get(key)
                    assert (key in tree) == (key in model)
            check_same(tree, model)
