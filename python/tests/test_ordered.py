"""Ordered access: key order, bounds (start inclusive, stop exclusive), both directions,
first/last, laziness; over trees small enough for one leaf and large enough for many."""

import bisect
import random

import pytest


def expected(keys, start=None, stop=None, reverse=False):
    """The keys in [start, stop) of the sorted list keys, the way a tree should list them."""
    lo = 0 if start is None else bisect.bisect_left(keys, start)
    hi = len(keys) if stop is None else bisect.bisect_left(keys, stop)
    out = keys[lo:max(lo, hi)]
    return out[::-1] if reverse else out


def test_unsigned_byte_order_with_prefix_first(tree):
    keys = [b"\xff", b"\x00", b"\x7f", b"\x80", b"a", b"ab", b"abc", b"b", b"\x00\x00", b"a\x00"]
    for k in keys:
        tree[k] = k
    # bytes compare as unsigned bytes with a proper prefix first: Python's own order.
    assert list(tree) == sorted(keys)
    assert list(tree.keys(reverse=True)) == sorted(keys, reverse=True)
    assert tree.first() == (b"\x00", b"\x00")
    assert tree.last() == (b"\xff", b"\xff")


@pytest.mark.parametrize("count", [5, 8000])
def test_bounds_both_directions(tree, count):
    rng = random.Random(count)
    keys = sorted({b"%06d" % rng.randrange(10 * count) for _ in range(count)})
    for k in keys:
        tree[k] = b"v" + k
    probes = [None, b"", b"0", b"000000", b"5", b"500000", b"999999", b"a", b"%06d" % (5 * count)]
    probes += [rng.choice(keys) for _ in range(4)]
    for start in probes:
        for stop in probes:
            lo = start or None  # b"" bounds nothing from below
            for reverse in (False, True):
                want = expected(keys, lo, stop, reverse)
                assert list(tree.keys(start=start, stop=stop, reverse=reverse)) == want, (start, stop, reverse)
                if count < 100 or (start, stop) == (probes[-1], probes[-2]):
                    got_items = list(tree.items(start=start, stop=stop, reverse=reverse))
                    assert got_items == [(k, b"v" + k) for k in want]
                    assert list(tree.values(start=start, stop=stop, reverse=reverse)) == [b"v" + k for k in want]
            assert len(tree.keys(start=start, stop=stop)) == len(expected(keys, lo, stop))


def test_reversed_view_is_the_other_direction(tree):
    for i in range(100):
        tree[b"%03d" % i] = b"%d" % i
    view = tree.items(start=b"010", stop=b"020", reverse=True)
    assert [k for k, _ in view] == [b"%03d" % i for i in range(19, 9, -1)]
    assert [k for k, _ in reversed(view)] == [b"%03d" % i for i in range(10, 20)]
    assert list(reversed(tree.keys())) == [b"%03d" % i for i in range(99, -1, -1)]
    assert list(reversed(tree.values(stop=b"003"))) == [b"2", b"1", b"0"]


def test_bounded_view_membership_respects_the_bounds(tree):
    for i in range(10):
        tree[b"%d" % i] = b"x"
    keys = tree.keys(start=b"3", stop=b"6")
    assert b"3" in keys and b"5" in keys
    assert b"6" not in keys and b"2" not in keys
    items = tree.items(start=b"3", stop=b"6")
    assert (b"4", b"x") in items and (b"7", b"x") not in items
    assert keys == {b"3", b"4", b"5"}
    assert len(items) == 3


def test_views_are_lazy(tree):
    for i in range(5000):
        tree[b"%05d" % i] = b"v"
    it = iter(tree.items())
    assert next(it) == (b"00000", b"v")
    # Keys added ahead of a running iterator, beyond what it has read, are seen.
    tree[b"99999"] = b"late"
    assert list(it)[-1] == (b"99999", b"late")
    # A view made before a change lists the tree as it is when iterated.
    view = tree.keys(start=b"99")
    tree[b"999999"] = b"later"
    assert list(view) == [b"99999", b"999999"]


def test_first_and_last_with_deletes(tree):
    assert tree.first() is None and tree.last() is None
    for i in range(1000):
        tree[b"%04d" % i] = b"%d" % i
    for i in range(999):
        del tree[b"%04d" % i]
        assert tree.first() == (b"%04d" % (i + 1), b"%d" % (i + 1))
        assert tree.last() == (b"0999", b"999")
    assert len(tree) == 1


def test_bounds_must_be_bytes_like(tree):
    with pytest.raises(TypeError):
        tree.keys(start="a")
    with pytest.raises(TypeError):
        tree.items(stop=5)
    assert list(tree.values(start=bytearray(b"a"), stop=memoryview(b"b"))) == []


def test_large_values_in_scans(tree):
    big = {b"%03d" % i: bytes([i % 256]) * (4000 - i) for i in range(300)}
    tree.update(big)
    assert dict(tree.items()) == big
    assert list(tree.values(reverse=True)) == [big[k] for k in sorted(big, reverse=True)]
