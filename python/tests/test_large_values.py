"""Values larger than a page (up to half the pool here) and zero-copy reads: Tree.view()
gives a read-only memoryview over the value in the buffer pool; a writer of that key
waits until it is released; close() refuses while one is held."""

import threading
import time

import pytest

import vmstore

POOL = 16 << 20
LARGEST = (POOL // 2) - 40  # one value may take half the pool (40 bytes of header)


def value_of(seed: int, n: int) -> bytes:
    block = bytes((seed * 31 + i) % 251 for i in range(4096))
    return (block * (n // 4096 + 1))[:n]


@pytest.mark.parametrize("n", [0, 10, 3000, 4057, 100_000, 3 << 20, LARGEST])
def test_values_of_every_size_round_trip_and_reopen(db_path, n):
    db = vmstore.open(db_path, pool_size="16M")
    tree = db.tree()
    tree[b"k"] = value_of(n, n)
    assert tree[b"k"] == value_of(n, n)
    db.close()
    db = vmstore.open(db_path, pool_size="16M")
    assert db.tree()[b"k"] == value_of(n, n)
    with db.tree().view(b"k") as mv:
        assert mv.readonly
        assert len(mv) == n
        assert mv == value_of(n, n)
    db.close()


def test_a_value_over_half_the_pool_is_no_memory(tree):
    tree[b"k"] = b"old"
    with pytest.raises(vmstore.NoMemoryError) as info:
        tree[b"k"] = bytes(LARGEST + 1)
    assert "pool_size" in str(info.value)
    assert tree[b"k"] == b"old"


def test_view_is_the_value_in_place_and_none_when_absent(tree):
    big = value_of(1, 1 << 20)
    tree[b"big"] = big
    assert tree.view(b"absent") is None
    mv = tree.view(b"big")
    assert isinstance(mv, memoryview)
    assert mv.readonly
    assert mv.tobytes() == big
    assert bytes(mv[1000:1010]) == big[1000:1010]
    with pytest.raises(TypeError):
        mv[0] = 1  # read-only
    mv.release()
    with pytest.raises(TypeError):
        tree.view("str key")
    with pytest.raises(vmstore.TooBigError):
        tree.view(b"k" * (vmstore.MAX_KEY_SIZE + 1))


def test_a_writer_of_the_viewed_key_waits_for_the_release(tree):
    tree[b"k"] = b"o" * 50_000
    mv = tree.view(b"k")
    done = threading.Event()

    def writer():
        tree[b"k"] = b"n" * 50_000
        done.set()

    t = threading.Thread(target=writer)
    t.start()
    time.sleep(0.1)
    assert not done.is_set(), "the put went on while the value was held"
    assert mv == b"o" * 50_000
    mv.release()
    t.join(10)
    assert done.is_set()
    assert tree[b"k"] == b"n" * 50_000


def test_close_refuses_while_a_view_is_held(db_path):
    db = vmstore.open(db_path, pool_size="16M")
    tree = db.tree()
    tree[b"k"] = b"v" * 10_000
    mv = tree.view(b"k")
    with pytest.raises(vmstore.BusyError) as info:
        db.close()
    assert "view" in str(info.value)
    assert not db.closed
    assert tree[b"k"] == b"v" * 10_000
    mv.release()
    db.close()
    assert db.closed


def test_view_after_close_is_closed_error(db_path):
    db = vmstore.open(db_path, pool_size="16M")
    tree = db.tree()
    tree[b"k"] = b"v"
    db.close()
    with pytest.raises(vmstore.ClosedError):
        tree.view(b"k")
