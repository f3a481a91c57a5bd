"""vmstore.dbm: the interface of Python's dbm modules over a vmstore database.

Code written for :mod:`dbm.gnu` (or :mod:`dbm.dumb`) runs unchanged::

    import vmstore.dbm, shelve

    with vmstore.dbm.open("/tmp/cache", "c") as db:
        db["greeting"] = "hello"          # str is stored as UTF-8, like dbm.dumb
        assert db[b"greeting"] == b"hello"

    with shelve.Shelf(vmstore.dbm.open("/tmp/shelf", "c")) as shelf:
        shelf["config"] = {"retries": 3}

The database is a directory (a vmstore database) and the mapping is its default tree.
Keys and values are ``bytes`` or ``str`` (encoded as UTF-8); they come back as ``bytes``.
Every failure is an :data:`error` (which is :class:`vmstore.Error`); a missing key is a
:class:`KeyError`.
"""

from __future__ import annotations

import builtins
import os
from collections.abc import Iterator, MutableMapping
from typing import Any, Optional, Union

import vmstore

__all__ = ["open", "error", "Database"]

#: The exception raised for every failure (the same class as :class:`vmstore.Error`).
error = vmstore.Error

_Key = Union[str, bytes, bytearray, memoryview]


def _umask() -> int:
    # /proc tells without changing it; os.umask() must set it to read it, which races
    # with other threads creating files.
    try:
        with builtins.open("/proc/self/status") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _encode(data: Any, what: str) -> Any:
    if isinstance(data, str):
        return data.encode("utf-8")
    if isinstance(data, (bytes, bytearray, memoryview)):
        return data
    raise TypeError(f"{what} must be bytes or str, not {type(data).__name__}")


class Database(MutableMapping):
    """A dbm-style database: a mapping from ``bytes`` keys to ``bytes`` values (``str``
    accepted, encoded as UTF-8). Made by :func:`open`; a context manager that closes it."""

    __slots__ = ("_db", "_tree", "_writable", "_sync_writes", "__weakref__")

    def __init__(self, db: "vmstore.Database", writable: bool, sync_writes: bool) -> None:
        """Wraps an open :class:`vmstore.Database`; use :func:`open` instead."""
        self._db: Optional[vmstore.Database] = db
        self._tree: Optional[vmstore.Tree] = db.tree("")
        self._writable = writable
        self._sync_writes = sync_writes

    def _reader(self) -> "vmstore.Tree":
        if self._tree is None:
            raise error("DBM object has already been closed")
        return self._tree

    def _writer(self) -> "vmstore.Tree":
        tree = self._reader()
        if not self._writable:
            raise error("the database was opened read-only (flag 'r')")
        return tree

    def _written(self) -> None:
        if self._sync_writes:
            self.sync()

    def __getitem__(self, key: _Key) -> bytes:
        """The value of ``key``; :class:`KeyError` when absent."""
        return self._reader()[_encode(key, "key")]

    def __setitem__(self, key: _Key, value: _Key) -> None:
        """Stores ``value`` under ``key``."""
        self._writer()[_encode(key, "key")] = _encode(value, "value")
        self._written()

    def __delitem__(self, key: _Key) -> None:
        """Deletes ``key``; :class:`KeyError` when absent."""
        del self._writer()[_encode(key, "key")]
        self._written()

    def __contains__(self, key: object) -> bool:
        """True when ``key`` is present."""
        return _encode(key, "key") in self._reader()

    def __iter__(self) -> Iterator[bytes]:
        """The keys, in byte order."""
        return iter(self._reader())

    def __len__(self) -> int:
        """The number of keys."""
        return len(self._reader())

    def keys(self) -> list:  # type: ignore[override]  # dbm returns a list
        """A list of every key, in byte order (as the dbm modules return it)."""
        return list(self._reader())

    def get(self, key: _Key, default: Any = None) -> Any:
        """The value of ``key``, or ``default`` when absent."""
        return self._reader().get(_encode(key, "key"), default)

    def setdefault(self, key: _Key, default: _Key = b"") -> bytes:  # type: ignore[override]
        """The value of ``key``; when absent, stores ``default`` (``b""`` as in
        :mod:`dbm.gnu`) and returns it as bytes."""
        k = _encode(key, "key")
        value = self._reader().get(k)
        if value is not None:
            return value
        encoded = bytes(_encode(default, "value"))
        self[k] = encoded
        return encoded

    def clear(self) -> None:
        """Deletes every key."""
        self._writer().clear()
        self._written()

    def firstkey(self) -> Optional[bytes]:
        """The first key in byte order, or None when empty (:mod:`dbm.gnu`)."""
        item = self._reader().first()
        return None if item is None else item[0]

    def nextkey(self, key: _Key) -> Optional[bytes]:
        """The key after ``key`` in byte order, or None at the end (:mod:`dbm.gnu`)."""
        k = bytes(_encode(key, "key"))
        for following in self._reader().keys(start=k + b"\0"):
            return following
        return None

    def reorganize(self) -> None:
        """Nothing to do: vmstore reuses freed pages itself (:mod:`dbm.gnu`)."""
        self._reader()

    def sync(self) -> None:
        """Puts every write so far on stable storage."""
        self._reader()
        assert self._db is not None
        self._db.sync()

    def close(self) -> None:
        """Writes everything and closes the database; harmless when closed."""
        if self._db is not None:
            db, self._db, self._tree = self._db, None, None
            db.close()

    def __enter__(self) -> "Database":
        """Returns the database itself."""
        return self

    def __exit__(self, *exc_info: Any) -> None:
        """Closes the database."""
        self.close()

    def __repr__(self) -> str:
        """``<vmstore.dbm.Database '/path'>``."""
        if self._db is None:
            return "<vmstore.dbm.Database (closed)>"
        return f"<vmstore.dbm.Database {self._db.path!r}>"


def open(  # noqa: A001 (the dbm modules' entry point)
    file: Union[str, bytes, "os.PathLike[str]", "os.PathLike[bytes]"],
    flag: str = "r",
    mode: int = 0o666,
) -> Database:
    """Opens the database in directory ``file``, as :func:`dbm.gnu.open` does.

    ``flag``: ``'r'`` an existing database, read-only (the default); ``'w'`` an existing
    one, read-write; ``'c'`` read-write, created when missing; ``'n'`` a new, empty
    database (every tree of an existing one is dropped). Modifiers as in :mod:`dbm.gnu`:
    ``'s'`` syncs after every write; ``'f'`` and ``'u'`` are accepted and change nothing
    (writes are always batched until sync or close; the directory is always locked, so
    even a read-only open is exclusive).

    ``mode`` sets the permissions of the directory when it is created (masked by the
    umask; an x bit is added beside each r bit so the directory can be entered).
    """
    if not isinstance(flag, str) or not flag or flag[0] not in "rwcn" or any(c not in "fsu" for c in flag[1:]):
        raise error(f"flag must be 'r', 'w', 'c' or 'n', optionally followed by 'f', 's' or 'u', not {flag!r}")
    kind = flag[0]
    path = os.fspath(file)
    created = kind in "cn" and not os.path.exists(path)
    db = vmstore.open(path, create=kind in "cn")
    try:
        if kind == "n":
            for name in db.trees():
                db.drop_tree(name)
        if created:
            dir_mode = mode & ~_umask()
            dir_mode |= (dir_mode & 0o444) >> 2  # r -> x, so the directory can be entered
            os.chmod(path, dir_mode)
        return Database(db, writable=kind != "r", sync_writes="s" in flag)
    except BaseException:
        db.close()
        raise
