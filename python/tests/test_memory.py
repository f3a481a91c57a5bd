"""Reference counting and memory: long loops of every call do not grow the process, and
no call keeps a reference to (or a buffer export of) its arguments."""

import gc
import mmap
import os
import sys
import tracemalloc

import pytest

import vmstore


def rss_bytes():
    """The process's resident set size."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def exercise(tree, rounds):
    """rounds x (every kind of call, including the ones that raise)."""
    value = b"v" * 100
    for i in range(rounds):
        key = b"%05d" % (i % 1000)
        tree[key] = value
        assert tree[key] == value
        assert tree.get(key) == value
        assert key in tree
        assert tree.get(b"missing") is None
        try:
            tree[b"missing"]
        except KeyError:
            pass
        try:
            tree[key] = None
        except TypeError:
            pass
        try:
            tree[b"k" * 2000] = value
        except vmstore.TooBigError:
            pass
        if i % 50 == 0:
            for _ in tree.items(start=key, stop=key + b"\xff"):
                pass
            tree.first()
            len(tree.keys(start=b"00990"))
        if i % 3 == 0:
            del tree[key]


def test_long_loop_does_not_grow_the_process(tree):
    exercise(tree, 10000)  # warm up: the tree's pages, allocator pools, caches
    gc.collect()
    before = rss_bytes()
    tracemalloc.start()
    exercise(tree, 40000)
    gc.collect()
    traced, _peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    grown = rss_bytes() - before
    assert traced < 256 * 1024, f"Python objects still allocated: {traced} bytes"
    assert grown < 8 * 1024 * 1024, f"resident set grew by {grown} bytes"


def test_arguments_are_not_retained(tree):
    key, value = b"refcount-key" + os.urandom(4), b"refcount-value" + os.urandom(4)
    key_refs, value_refs = sys.getrefcount(key), sys.getrefcount(value)
    for _ in range(1000):
        tree[key] = value
        tree[key]
        tree.get(key, value)
        key in tree
        tree.pop(key)
        tree.get(key, value)
        try:
            tree[key]
        except KeyError:
            pass
    assert sys.getrefcount(key) == key_refs
    assert sys.getrefcount(value) == value_refs
    tree[key] = value
    got = tree[key]
    assert got is not value
    assert sys.getrefcount(got) == 2  # `got` and the call's argument


def test_buffer_exports_are_released(tree):
    key, value = bytearray(b"grow-me"), bytearray(b"value")
    tree[key] = value
    tree[key]
    try:
        tree[key] = 5
    except TypeError:
        pass
    with pytest.raises(vmstore.TooBigError):
        tree[key] = memoryview(mmap.mmap(-1, vmstore.MAX_VALUE_SIZE + 1))  # zero pages, unread
    # A bytearray with a live buffer export cannot be resized: these would raise.
    key.extend(b"!")
    value.extend(b"!")
    view = memoryview(bytearray(b"mv"))
    tree[view] = view
    view.release()
