"""vmstore: an embeddable key-value storage engine for data far larger than memory.

Open a database (a directory) with :func:`open`; it holds named trees, each an ordered
mapping from ``bytes`` to ``bytes`` (:class:`Tree`, a
:class:`collections.abc.MutableMapping`)::

    import vmstore

    with vmstore.open("/tmp/mydb", pool_size="256M") as db:
        users = db.tree("users")
        users[b"alice"] = b"admin"
        for key, value in users.items(start=b"a", stop=b"b"):
            print(key, value)

Several changes, to one tree or many, are applied together, all or nothing, with a
:class:`Batch`::

    with db.batch() as b:          # written when the block ends, discarded if it raises
        b.put(users, b"alice", b"admin")
        b.delete(users, b"bob")
        b.put(db.tree("log"), b"0001", b"alice promoted")

Changes that depend on what they read go in a :class:`Transaction`, which writes in place
as it goes and commits them together (abort, or an exception, undoes them)::

    with db.transaction() as txn:  # committed when the block ends, aborted if it raises
        balance = int(txn.get(accounts, b"alice", b"0"))
        txn.put(accounts, b"alice", b"%d" % (balance - 10))
        txn.put(accounts, b"bob", b"%d" % (int(txn.get(accounts, b"bob", b"0")) + 10))

Every engine call releases the GIL, so many threads may share one :class:`Database` and
its trees. Errors are exceptions: :class:`Error` (an :class:`OSError`) and its subclasses,
:class:`KeyError` for a missing key, :class:`TypeError` for a key or value that is not
bytes-like.
"""

from __future__ import annotations

import atexit
import os
import sys
import threading
import weakref
from collections.abc import ItemsView, Iterable, Iterator, KeysView, Mapping, MutableMapping, ValuesView
from typing import Any, Callable, List, Optional, Tuple, Union

from . import _core

__all__ = [
    "open",
    "Database",
    "Tree",
    "Batch",
    "Transaction",
    "TreeKeysView",
    "TreeValuesView",
    "TreeItemsView",
    "Error",
    "InvalidArgumentError",
    "ClosedError",
    "TooBigError",
    "StorageIOError",
    "CorruptionError",
    "NoSpaceError",
    "NoMemoryError",
    "BusyError",
    "MAX_KEY_SIZE",
    "MAX_VALUE_SIZE",
    "MAX_TREE_NAME_SIZE",
    "KEEP",
]

__version__ = "0.1.0"

#: Largest key in bytes; keys are 1 .. MAX_KEY_SIZE bytes.
MAX_KEY_SIZE: int = _core.MAX_KEY_SIZE
#: Largest value in bytes; values are 0 .. MAX_VALUE_SIZE bytes.
MAX_VALUE_SIZE: int = _core.MAX_VALUE_SIZE
#: Largest tree name in bytes (UTF-8).
MAX_TREE_NAME_SIZE: int = _core.MAX_TREE_NAME_SIZE
#: What a :meth:`Tree.modify` function returns to leave its key as it is.
KEEP: Any = _core.KEEP

BytesLike = Union[bytes, bytearray, memoryview]

# ---------------------------------------------------------------------------------------
# Errors


class Error(OSError):
    """Base class of every error the engine reports.

    An :class:`OSError`: ``errno`` is set where one fits (``EIO``, ``ENOSPC``, ``ENOMEM``,
    ``EBUSY``, ``EINVAL``), else None; ``strerror`` and ``str()`` give the engine's message.
    ``code`` is the engine's status code (the C API's ``VMS_E*`` constants).
    """

    code: Optional[int] = None

    def __str__(self) -> str:
        """The engine's message alone (OSError would prefix ``[Errno N]``)."""
        if len(self.args) == 2 and self.strerror is not None:
            return str(self.strerror)
        return super().__str__()


class InvalidArgumentError(Error, ValueError):
    """A bad argument: an empty key, a malformed or unknown config key, a tree name over
    the limit, or opening a missing database with ``create=False``. Also a ValueError."""

    code = -1


class ClosedError(InvalidArgumentError):
    """The database was closed, or the tree was dropped, before this call."""


class TooBigError(Error, ValueError):
    """A key or value larger than :data:`MAX_KEY_SIZE` / :data:`MAX_VALUE_SIZE`; nothing
    was written. Also a ValueError."""

    code = -5


class StorageIOError(Error):
    """The operating system reported an I/O error."""

    code = -2


class CorruptionError(Error):
    """Stored data is damaged (checksum, format) or the database was not closed cleanly.

    ``problems`` lists what :meth:`Database.check` found, one line per problem (empty
    for corruption found elsewhere).
    """

    code = -3
    problems: Tuple[str, ...] = ()


class NoSpaceError(Error):
    """The database reached ``max_size`` or the device is full."""

    code = -4


class NoMemoryError(Error):
    """The buffer pool or the process ran out of memory."""

    code = -6


class BusyError(Error):
    """The database is open elsewhere (in this process or another); or, from a
    :class:`Transaction`, a key's lock stayed held by another transaction (two waiting
    for each other) or the log filled: abort the transaction and retry it; or a call
    that waits for every open transaction (:meth:`Database.sync`, :meth:`Database.check`,
    :meth:`Database.drop_tree`) made on a thread that has one open."""

    code = -7


_core._set_error_types(
    InvalidArgumentError,
    StorageIOError,
    CorruptionError,
    NoSpaceError,
    TooBigError,
    NoMemoryError,
    BusyError,
    ClosedError,
)

# ---------------------------------------------------------------------------------------
# Opening

# Open databases, closed at interpreter exit so that everything written reaches storage.
_open_databases: "weakref.WeakSet[Database]" = weakref.WeakSet()


@atexit.register
def _close_all() -> None:
    for db in list(_open_databases):
        try:
            db.close()
        except Error as e:
            # Nobody is left to raise to; say so, as the data may not all be on storage.
            sys.stderr.write(f"vmstore: closing {db.path!r} at exit failed: {e}\n")


def _config_value(key: str, value: Any) -> str:
    if key == "tiers" and isinstance(value, (list, tuple)):
        # [(node, size), ...], fastest first: the config's NODE:SIZE+NODE:SIZE.
        items = []
        for tier in value:
            if not isinstance(tier, (list, tuple)) or len(tier) != 2:
                raise ValueError(f"tiers: each tier is (node, size), not {tier!r}")
            node, size = tier
            items.append(f"{_config_value('tiers', node)}:{_config_value('tiers', size)}")
        return "+".join(items)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        if "," in value or "=" in value:
            raise ValueError(f"config value of {key!r} may not contain ',' or '=': {value!r}")
        return value
    raise TypeError(f"config value of {key!r} must be str, int or bool, not {type(value).__name__}")


def open(  # noqa: A001 (the module's entry point, like dbm.open and lmdb.open)
    path: Union[str, bytes, "os.PathLike[str]", "os.PathLike[bytes]"],
    *,
    pool_size: Union[str, int, None] = None,
    create: bool = True,
    **config: Any,
) -> "Database":
    """Opens (by default creates) the database in directory ``path``.

    ``pool_size`` is the buffer pool's memory budget: bytes as an int, or a string with a
    K/M/G/T suffix (``"256M"``; at least 1M; default ``"1G"``). ``tiers`` splits the pool
    over memory tiers instead, fastest first: ``[(0, "4G"), (1, "16G")]`` (NUMA node,
    size), or the config string ``"0:4G+1:16G"``. With ``create=False`` a missing database is
    an :class:`InvalidArgumentError`. Other keyword arguments are the C API's config keys
    (today ``max_size``, the largest the data file may grow, default ``"1T"``); an unknown
    key raises :class:`InvalidArgumentError` naming it.

    Raises :class:`BusyError` when the database is open elsewhere and
    :class:`CorruptionError` when its file is damaged or was not closed cleanly. The
    returned :class:`Database` is a context manager that closes it on exit.
    """
    settings = {"create": create, **config}
    if pool_size is not None:
        settings["pool_size"] = pool_size
    cfg = ",".join(f"{key}={_config_value(key, value)}" for key, value in settings.items())
    core = _core.open(os.fsencode(path), cfg)
    db = Database(core, os.fsdecode(path))
    _open_databases.add(db)
    return db


def _tree_name(name: str) -> bytes:
    if not isinstance(name, str):
        raise TypeError(f"tree name must be str, not {type(name).__name__}")
    return name.encode("utf-8", "surrogateescape")


class Database:
    """An open database: a directory holding named trees. Made by :func:`open`.

    A context manager: ``with vmstore.open(path) as db:`` closes it on exit. Safe to
    share between threads. After :meth:`close`, every call on it, its trees and their
    iterators raises :class:`ClosedError`.
    """

    __slots__ = ("_core", "_path", "_trees", "_lock", "__weakref__")

    def __init__(self, core: Any, path: str) -> None:
        """Wraps an open core handle; use :func:`vmstore.open` instead."""
        self._core = core
        self._path = path
        self._trees: dict = {}
        self._lock = threading.Lock()

    @property
    def path(self) -> str:
        """The database directory, as given to :func:`open`."""
        return self._path

    @property
    def closed(self) -> bool:
        """True after :meth:`close`."""
        return bool(self._core.closed)

    def tree(self, name: str = "", create: bool = True) -> "Tree":
        """The tree called ``name`` (``""`` is the default tree), created when missing
        unless ``create`` is false; then a missing tree raises :class:`KeyError`. The same
        name gives the same :class:`Tree` object until the tree is dropped.

        On a thread with an open :class:`Transaction` of this database a missing tree is
        not created (:class:`RuntimeError`: create trees before the transaction); existing
        ones open there even while another thread's :meth:`drop_tree` or tree creation
        waits for the open transactions."""
        encoded = _tree_name(name)
        # No lock is held across an engine call: a drop_tree on another thread may wait
        # for a transaction of the calling thread, which must be able to go on.
        tree = self._trees.get(name)
        if tree is not None and not tree._core.dropped:
            if self._core.closed:
                raise ClosedError(None, f"database '{self._path}' is closed")
            return tree
        while True:
            core = self._core.tree(encoded, bool(create))
            if core is None:
                raise KeyError(name)
            with self._lock:
                tree = self._trees.get(name)
                if tree is not None and not tree._core.dropped:
                    return tree  # another thread opened it meanwhile
                if core.dropped:
                    continue  # dropped since it was opened: open the name again
                tree = Tree(core, self, name)
                self._trees[name] = tree
                return tree

    def trees(self) -> list:
        """The names of the trees in the database, in byte order of their UTF-8 form."""
        return [n.decode("utf-8", "surrogateescape") for n in self._core.trees()]

    def drop_tree(self, name: str) -> None:
        """Removes the tree and frees its pages; :class:`KeyError` when there is none.
        Its :class:`Tree` object (and iterators over it) raise :class:`ClosedError` from
        then on; ``tree(name)`` afterwards creates a new, empty tree. Waits for every
        open :class:`Transaction` of the database to end; on a thread that has one open
        it raises :class:`BusyError` instead."""
        if not self._core.drop_tree(_tree_name(name)):
            raise KeyError(name)
        with self._lock:
            tree = self._trees.get(name)
            if tree is not None and tree._core.dropped:
                del self._trees[name]

    def batch(self) -> "Batch":
        """A new, empty :class:`Batch` of this database: changes to its trees applied
        together, all or nothing. Use it as ``with db.batch() as b:`` (written when the
        block ends, discarded if it raises) or call :meth:`Batch.write` yourself.
        :class:`ClosedError` when the database is closed."""
        return Batch(self._core.batch(), self)

    def transaction(self) -> "Transaction":
        """A new :class:`Transaction` of this database: writes to its trees applied in
        place as they are made and committed together, or undone together. Use it as
        ``with db.transaction() as txn:`` (committed when the block ends, aborted if it
        raises) or call :meth:`Transaction.commit` yourself. It begins with its first
        call. :class:`ClosedError` when the database is closed."""
        return Transaction(self._core.transaction(), self)

    def sync(self) -> None:
        """Puts every write so far on stable storage. Waits for every open
        :class:`Transaction` to end (a checkpoint never falls inside one); on a thread
        that has one open it raises :class:`BusyError` instead."""
        self._core.sync()

    def wait_durable(self, commit: int) -> None:
        """Returns once the batch written with :meth:`Batch.write_nowait` (or the
        transaction committed with :meth:`Transaction.commit_nowait`) that returned
        ``commit`` is as durable as :meth:`Batch.write` makes a batch: with
        ``durability="sync"`` on stable storage (waiters share one flush), at once
        otherwise. It covers every write logged before it too. A commit point this
        database did not return since it was opened raises :class:`InvalidArgumentError`;
        a failed flush raises what ``write`` would have."""
        self._core.wait_durable(commit)

    def close(self) -> None:
        """Writes everything, syncs and releases the directory lock. Waits for calls in
        flight on other threads; harmless when already closed. Every open
        :class:`Transaction` of the database, on any thread, is aborted first (its writes
        undone; its next call raises :class:`ClosedError`)."""
        try:
            self._core.close()
        finally:
            _open_databases.discard(self)

    def stats(self) -> dict:
        """The engine's counters as a dict of ints: ``hits``, ``misses``, ``evictions``,
        ``pages_written``, ``restarts``, ``release_calls``, ``read_ahead_pages`` (of the
        misses, pages scans read ahead), ``huge_page_bytes`` (bytes of large values'
        pages backed by huge pages as they were filled), ``huge_pages_in_memory`` (1 while
        config ``huge_pages=True`` is in effect), ``checkpoint_cuts``,
        ``checkpoint_cut_wait_us`` and ``checkpoint_cut_wait_max_us`` (checkpoint cuts
        since open and their waits for the writes in flight), ``log_full_waits`` (writes
        that found the log full and waited for a checkpoint), ``victim_ns`` and ``victims_kept`` (time spent
        choosing eviction candidates; candidates in use that stayed), ``tlb_shootdowns``
        (the machine's, since open; events since open), ``policy_bytes`` and
        ``resident_set_bytes`` (what the replacement policy's and the resident set's
        structures take now), with memory tiers ``demoted_pages``, ``promoted_pages``,
        ``migrate_failures``, ``migrate_calls``, ``migrate_ns`` and
        ``migrate_tlb_shootdowns`` (0 without), ``tiers`` (a list with a dict per tier,
        fastest first: ``node``, ``budget_pages``, ``pages``; empty without tiers), and
        ``pool_pages``, ``resident_pages``, ``page_count``, ``free_pages``,
        ``file_bytes``, ``trees`` (state now)."""
        return self._core.stats()

    def check(self) -> None:
        """Verifies every tree and the free-space list (checksums, key order, fences,
        each page used once or free). Returns None when sound; raises
        :class:`CorruptionError` whose ``problems`` lists the damage otherwise. Waits for
        every open :class:`Transaction` to end; on a thread that has one open it raises
        :class:`BusyError` instead."""
        self._core.check()

    def __enter__(self) -> "Database":
        """Returns the database itself."""
        return self

    def __exit__(self, *exc_info: Any) -> None:
        """Closes the database."""
        self.close()

    def __repr__(self) -> str:
        """``<vmstore.Database '/path' open>``."""
        state = "closed" if self.closed else "open"
        return f"<vmstore.Database {self._path!r} {state}>"


# ---------------------------------------------------------------------------------------
# Batches


def _tree_core(tree: Any, user: str) -> Any:
    """The core handle of ``tree`` for a batch or transaction (``user``): TypeError for
    anything but a :class:`Tree`."""
    if not isinstance(tree, Tree):
        raise TypeError(f"{user} tree must be a vmstore.Tree, not {type(tree).__name__}")
    return tree._core


class Batch:
    """Puts and deletes on trees of one database, applied together by :meth:`write`, all
    or nothing. Made by :meth:`Database.batch`.

    A context manager: ``with db.batch() as b:`` writes the batch when the block ends
    normally and discards it when the block raises. Each operation is checked when it is
    added, exactly as :class:`Tree` checks it (:class:`TypeError` for a key or value that
    is not bytes-like, :class:`TooBigError` for one over the limit,
    :class:`InvalidArgumentError` for the empty key; also :class:`TypeError` when
    ``tree`` is not a :class:`Tree`, :class:`InvalidArgumentError` (a ValueError) for a
    tree of another database, :class:`ClosedError` for a dropped tree or a closed
    database); a rejected operation leaves the batch as it was. Nothing reaches the
    database before :meth:`write`: the batch holds copies of its keys and values, so a
    ``bytearray`` may change after it was added.

    ``write`` applies the operations in the order they were added (a later put or delete
    of the same key wins) with the GIL released; while it runs, other writers of the
    database wait and readers may see part of the batch; once it returns, all of it is
    visible, and a failed write stored none of it. No checkpoint (:meth:`Database.sync`,
    :meth:`Database.close`) falls inside a batch, so after a crash a batch is wholly
    present or wholly absent.

    One thread at a time: adding to, clearing or writing a batch while another thread
    writes it raises :class:`RuntimeError`; so does :meth:`write` on a thread with an open
    :class:`Transaction` of the database.
    """

    __slots__ = ("_core", "_db")

    def __init__(self, core: Any, db: Database) -> None:
        """Wraps a core batch handle; use :meth:`Database.batch` instead."""
        self._core = core
        self._db = db

    @property
    def database(self) -> Database:
        """The database the batch writes to."""
        return self._db

    def _tree_core(self, tree: Any) -> Any:
        return _tree_core(tree, "batch")

    def put(self, tree: Tree, key: BytesLike, value: BytesLike) -> None:
        """Adds ``tree[key] = value`` to the batch (inserts or replaces when written)."""
        self._core.put(self._tree_core(tree), key, value)

    def delete(self, tree: Tree, key: BytesLike) -> None:
        """Adds the deletion of ``key`` from ``tree`` to the batch; a key that is absent
        when the batch is written is not an error."""
        self._core.delete(self._tree_core(tree), key)

    def clear(self) -> None:
        """Discards every operation; the batch may be used again."""
        self._core.clear()

    def write(self) -> None:
        """Applies every operation, all or nothing, then empties the batch (it may be
        filled and written again). On an error nothing of the batch is stored and it
        keeps its operations: :class:`ClosedError` when the database was closed or one of
        the trees dropped, :class:`StorageIOError` and the like from storage. An empty
        batch writes nothing."""
        self._core.write(True)

    def write_nowait(self) -> int:
        """Applies the batch as :meth:`write` does, without waiting for its log flush,
        and returns its commit point for :meth:`Database.wait_durable` (early lock
        release: an application holding its own locks releases them in between, so the
        next transaction joins the same group commit). Readers see the batch at once;
        until the wait, a crash (with ``durability="sync"``, of the process too) may lose
        it. 0 when nothing was logged (an empty batch, ``durability="none"``)."""
        return self._core.write(False)

    def __len__(self) -> int:
        """The number of operations added since the batch was made, cleared or written."""
        return len(self._core)

    def __enter__(self) -> "Batch":
        """Returns the batch itself."""
        return self

    def __exit__(self, exc_type: Any, exc_value: Any, traceback: Any) -> None:
        """Writes the batch, or discards it when the block raised (the exception goes on)."""
        if exc_type is None:
            self.write()
        else:
            self.clear()

    def __repr__(self) -> str:
        """``<vmstore.Batch of 3 operations on '/path'>``."""
        n = len(self)
        return f"<vmstore.Batch of {n} operation{'' if n == 1 else 's'} on {self._db.path!r}>"


# ---------------------------------------------------------------------------------------
# Transactions


class Transaction:
    """Reads and writes on trees of one database, each applied in place when it is made,
    committed together by :meth:`commit` or undone together by :meth:`abort`. Made by
    :meth:`Database.transaction`; it begins with its first call, and after
    :meth:`commit` or :meth:`abort` the same object begins a new one with its next call.

    A context manager: ``with db.transaction() as txn:`` commits when the block ends
    normally and aborts when it raises (the exception goes on). After a crash a
    committed transaction is wholly present and any other wholly absent.

    Isolation: each key a transaction reads (:meth:`get`) or writes stays locked until it
    ends, so transactions that reach their keys through their own calls are serializable.
    Readers outside transactions (``tree[key]``, iteration) see its writes as they are
    made, before the commit. A lock held by another transaction is waited for; once this
    one holds a lock, a wait of more than a few milliseconds raises :class:`BusyError`
    (two transactions waiting for each other): abort and retry the whole transaction::

        while True:
            try:
                with db.transaction() as txn:
                    txn.put(accounts, b"alice", b"90")
                    txn.put(accounts, b"bob", b"110")
                break
            except vmstore.BusyError:
                continue  # the block aborted it; run it again

    Bad input raises as the same call on a :class:`Tree` would (:class:`TypeError`,
    :class:`TooBigError`, :class:`InvalidArgumentError` for the empty key; also
    :class:`TypeError` for a ``tree`` that is not a :class:`Tree`,
    :class:`InvalidArgumentError` for a tree of another database, :class:`ClosedError`
    for a dropped tree or a closed database). A call that raises changes nothing and
    leaves the transaction open with its earlier writes: commit or abort it. A write
    whose log record would pass a sixteenth of the log size raises :class:`TooBigError`
    (write such a value with ``tree[key] = value``). Keep transactions short: a
    checkpoint, :meth:`Database.sync` and :meth:`Database.drop_tree` wait for every open
    one.

    Threads: every engine call releases the GIL; one thread at a time uses a
    transaction (:class:`RuntimeError` otherwise). An open transaction is open on the
    thread of its last ``put``, ``delete``, ``get`` or ``modify``: it may go on from
    another thread between calls (that thread then holds it, and the former one is free
    again), and any thread may commit or abort it. A thread holds at most one open
    transaction per database (:class:`RuntimeError` when beginning or going on with a
    second). While it holds one, that thread must not write to the database except
    through it: ``tree[key] = value``, ``del``, :meth:`Tree.modify`,
    :meth:`Tree.clear`, :meth:`Batch.write` and creating a tree raise
    :class:`RuntimeError` (they could wait for the transaction's own locks forever), and
    :meth:`Database.sync`, :meth:`Database.check` and :meth:`Database.drop_tree` raise
    :class:`BusyError`. Reads are fine, but do not write through the transaction to a
    key of a leaf whose value this thread holds with :meth:`Tree.view`.

    Ending: garbage collection of an open transaction aborts it at once, on whatever
    thread collects it. :meth:`Database.close` aborts every open transaction of the
    database, whichever thread holds it; the next call of each raises
    :class:`ClosedError`.
    """

    __slots__ = ("_core", "_db", "__weakref__")

    def __init__(self, core: Any, db: Database) -> None:
        """Wraps a core transaction handle; use :meth:`Database.transaction` instead."""
        self._core = core
        self._db = db

    @property
    def database(self) -> Database:
        """The database the transaction reads and writes."""
        return self._db

    def _tree_core(self, tree: Any) -> Any:
        return _tree_core(tree, "transaction")

    def put(self, tree: "Tree", key: BytesLike, value: BytesLike) -> None:
        """``tree[key] = value`` under the transaction: applied now, visible to
        readers at once, undone by :meth:`abort`; the key stays locked until the end."""
        self._core.put(self._tree_core(tree), key, value)

    def delete(self, tree: "Tree", key: BytesLike) -> None:
        """``del tree[key]`` under the transaction: :class:`KeyError` when the key is
        absent (nothing changes; the key stays locked, so it stays absent until the
        end)."""
        self._core.delete(self._tree_core(tree), key)

    def get(self, tree: "Tree", key: BytesLike, default: Any = None) -> Any:
        """The value of ``key`` as it stands (this transaction's writes included), or
        ``default`` when absent. Locks the key until the transaction ends, so no other
        writer (transaction or plain write) changes it meanwhile."""
        return self._core.get(self._tree_core(tree), key, default)

    def modify(self, tree: "Tree", key: BytesLike, fn: Callable[[Optional[bytes]], Any]) -> Optional[bytes]:
        """:meth:`Tree.modify` under the transaction: calls ``fn(value)`` once with the
        key's current value (``bytes``, or ``None`` when absent) and applies what it
        returns (bytes-like: stored; ``None``: deleted; :data:`KEEP`: left as it is).
        Returns the value after the call. If ``fn`` raises, this call changes nothing,
        the exception propagates and the transaction stays open. ``fn`` runs holding
        the key's lock: do not use this database inside it (:class:`RuntimeError`)."""
        return self._core.modify(self._tree_core(tree), key, fn)

    def commit(self) -> None:
        """Makes every write of the transaction durable together (one log record) and
        ends it, returning as a write returns under the database's ``durability``. A
        commit that fails ends it too, every write undone. Nothing to do when nothing
        was begun. :class:`ClosedError` when the database was closed (which aborted the
        transaction)."""
        self._core.commit(True)

    def commit_nowait(self) -> int:
        """Commits as :meth:`commit` does without waiting for the log flush, and returns
        the commit point for :meth:`Database.wait_durable` (0 when nothing was logged):
        release your own locks in between, then wait."""
        return self._core.commit(False)

    def abort(self) -> None:
        """Puts back every value the transaction changed and ends it. Harmless when
        nothing is open (also after :meth:`Database.close` aborted it)."""
        self._core.abort()

    def __len__(self) -> int:
        """The writes made since the transaction began (puts, deletes, and modifies
        that changed something); 0 when none is open."""
        return len(self._core)

    def __enter__(self) -> "Transaction":
        """Returns the transaction itself."""
        return self

    def __exit__(self, exc_type: Any, exc_value: Any, traceback: Any) -> None:
        """Commits, or aborts when the block raised (the exception goes on)."""
        if exc_type is None:
            self.commit()
        else:
            self.abort()

    def __repr__(self) -> str:
        """``<vmstore.Transaction of 3 writes on '/path'>``."""
        try:
            n = len(self)
        except (RuntimeError, Error):
            return f"<vmstore.Transaction on {self._db.path!r}>"
        return f"<vmstore.Transaction of {n} write{'' if n == 1 else 's'} on {self._db.path!r}>"


# ---------------------------------------------------------------------------------------
# Trees and their views

_KEYS, _VALUES, _ITEMS = 0, 1, 2


def _bound(value: Optional[BytesLike], what: str) -> Optional[bytes]:
    if value is None or isinstance(value, bytes):
        return value
    try:
        return bytes(memoryview(value))
    except TypeError:
        raise TypeError(f"{what} must be bytes, bytearray or memoryview, not {type(value).__name__}") from None


def _scan(core: Any, start: Optional[bytes], stop: Optional[bytes], reverse: bool, mode: int) -> Iterator[Any]:
    # Batches grow from 16 to 1024 entries: a loop that stops early reads little, a long
    # scan pays the GIL release once per 1024 entries.
    cursor = core.cursor(start, stop, reverse, mode)
    n = 16
    while True:
        batch = cursor.next(n)
        yield from batch
        if len(batch) < n:
            return
        if n < 1024:
            n *= 4


class Tree(MutableMapping):
    """A named tree: an ordered mapping from ``bytes`` to ``bytes``. Made by
    :meth:`Database.tree`.

    A :class:`collections.abc.MutableMapping`: ``t[k]``, ``t[k] = v``, ``del t[k]``,
    ``k in t``, ``len(t)``, ``get``, ``pop``, ``popitem``, ``setdefault``, ``update``,
    ``clear``, ``==``. Keys and values may be ``bytes``, ``bytearray`` or ``memoryview``
    (any contiguous buffer); they come back as ``bytes``. Iteration is in key order
    (unsigned bytes; a proper prefix first). Keys are 1 .. :data:`MAX_KEY_SIZE` bytes,
    values 0 .. :data:`MAX_VALUE_SIZE` bytes.

    ``len(t)`` counts the keys (a scan, without the GIL). Iterating while the tree
    changes is allowed: an iterator reads one leaf at a time and never returns a key
    twice or out of order, but may or may not see changes made after it started.
    """

    __slots__ = ("_core", "_db", "_name", "__weakref__")

    def __init__(self, core: Any, db: Database, name: str) -> None:
        """Wraps a core tree handle; use :meth:`Database.tree` instead."""
        self._core = core
        self._db = db
        self._name = name

    @property
    def name(self) -> str:
        """The tree's name (``""`` for the default tree)."""
        return self._name

    @property
    def database(self) -> Database:
        """The database that holds this tree."""
        return self._db

    # The mapping protocol ------------------------------------------------------------

    def __getitem__(self, key: BytesLike) -> bytes:
        """The value of ``key``; :class:`KeyError` when absent."""
        return self._core.getitem(key)

    def __setitem__(self, key: BytesLike, value: BytesLike) -> None:
        """Inserts or replaces. :class:`TooBigError` (a ValueError) for a key or value
        over the limit, :class:`InvalidArgumentError` for the empty key."""
        self._core.setitem(key, value)

    def __delitem__(self, key: BytesLike) -> None:
        """Deletes ``key``; :class:`KeyError` when absent."""
        self._core.delitem(key)

    def __contains__(self, key: object) -> bool:
        """True when ``key`` is present (the value is not copied)."""
        return self._core.contains(key)

    def __iter__(self) -> Iterator[bytes]:
        """The keys in ascending order."""
        return _scan(self._core, None, None, False, _KEYS)

    def __reversed__(self) -> Iterator[bytes]:
        """The keys in descending order."""
        return _scan(self._core, None, None, True, _KEYS)

    def __len__(self) -> int:
        """The number of keys (counted by a scan, without the GIL)."""
        return self._core.count(None, None)

    def __bool__(self) -> bool:
        """True when the tree holds a key (reads one entry, not the whole tree)."""
        return self._core.edge(False) is not None

    def get(self, key: BytesLike, default: Any = None) -> Any:
        """The value of ``key``, or ``default`` when absent."""
        return self._core.get(key, default)

    def view(self, key: BytesLike) -> Optional[memoryview]:
        """The value of ``key`` in place, without a copy, as a read-only ``memoryview``
        over the buffer pool (``None`` when absent): for large values, up to 1 GiB,
        what ``get`` would copy. While the memoryview (or one made from it) is alive
        and not released, the value is held: a write to that key, or to a key stored
        in the same B+tree leaf, waits for it, and ``close`` waits for it. So release
        it soon, best with ``with tree.view(key) as mv: ...`` (a memoryview releases
        on leaving the block), and never write to this tree from the thread that holds
        one (that write would wait forever). """
        return self._core.view(key)

    def get_many(self, keys: Iterable[BytesLike], default: Any = None) -> List[Any]:
        """The value of each of ``keys``, in order (``default`` where absent): one call
        that looks them up together: their page misses in flight at once (up to 64),
        and in memory their cache misses overlapping, so it is faster than ``get`` per
        key, much faster when the data exceeds the buffer pool. Bad keys raise as
        ``get`` does (``TypeError``, ``ValueError``, ...)."""
        return self._core.get_many(keys, default)

    def modify(self, key: BytesLike, fn: Callable[[Optional[bytes]], Any]) -> Optional[bytes]:
        """Atomic read-modify-write of ``key``: calls ``fn(value)`` with the key's
        current value (``bytes``, or ``None`` when absent) and applies what it returns
        before any other write of the key can come between, so concurrent ``modify``
        calls (and puts and deletes) of one key lose nothing::

            counters.modify(b"hits", lambda v: str(int(v or b"0") + 1).encode())

        ``fn`` returns a bytes-like value to store (written in place when its size is
        the value's), ``None`` to delete the key (an absent key stays absent), or
        :data:`KEEP` to leave it as it is (nothing is written). If ``fn`` raises, nothing
        changes and the exception propagates. Returns the key's value after the call
        (``bytes``, or ``None`` when absent). A value over :data:`MAX_VALUE_SIZE` raises
        :class:`TooBigError`, nothing changed.

        ``fn`` runs holding the key's lock (the engine's, not the GIL's: other threads
        run): keep it short, and do not use this database inside it (any call on it
        raises ``RuntimeError``). It runs once, or, in the rare case that the log file
        was full when its result was to be logged, again on the value as it is then (only
        the last result counts)."""
        return self._core.modify(key, fn)

    def popitem(self) -> Tuple[bytes, bytes]:
        """Removes and returns the (key, value) with the largest key (the end of the
        iteration order, like ``dict.popitem``); :class:`KeyError` when empty."""
        while True:
            item = self._core.edge(True)
            if item is None:
                raise KeyError("popitem(): tree is empty")
            if self._core.remove(item[0]):
                return item
            # Another thread deleted it first: take the next one.

    def clear(self) -> None:
        """Deletes every key (in chunks, without the GIL)."""
        self._core.clear()

    # Ordered access ------------------------------------------------------------------

    def keys(
        self, *, start: Optional[BytesLike] = None, stop: Optional[BytesLike] = None, reverse: bool = False
    ) -> "TreeKeysView":
        """A view of the keys in ``[start, stop)``, ascending (descending with
        ``reverse=True``); lazy. Without arguments it behaves as ``dict.keys()``: len,
        ``in``, iteration, ``reversed``, set operations."""
        return TreeKeysView(self, start, stop, reverse)

    def values(
        self, *, start: Optional[BytesLike] = None, stop: Optional[BytesLike] = None, reverse: bool = False
    ) -> "TreeValuesView":
        """A view of the values of the keys in ``[start, stop)``, in key order
        (descending with ``reverse=True``); lazy, like ``dict.values()``."""
        return TreeValuesView(self, start, stop, reverse)

    def items(
        self, *, start: Optional[BytesLike] = None, stop: Optional[BytesLike] = None, reverse: bool = False
    ) -> "TreeItemsView":
        """A view of the (key, value) pairs with keys in ``[start, stop)``, in key order
        (descending with ``reverse=True``); lazy. Without arguments it behaves as
        ``dict.items()``: len, ``in``, iteration, ``reversed``, set operations."""
        return TreeItemsView(self, start, stop, reverse)

    def first(self) -> Optional[Tuple[bytes, bytes]]:
        """The (key, value) with the smallest key, or None when the tree is empty."""
        return self._core.edge(False)

    def last(self) -> Optional[Tuple[bytes, bytes]]:
        """The (key, value) with the largest key, or None when the tree is empty."""
        return self._core.edge(True)

    def __repr__(self) -> str:
        """``<vmstore.Tree 'name' in '/path'>`` (the contents are not read)."""
        return f"<vmstore.Tree {self._name!r} in {self._db.path!r}>"

    # A tree is a live view of storage, not a value: no hashing (Mapping sets __hash__
    # to None through __eq__), no pickling.
    def __reduce__(self) -> Any:
        """Trees cannot be pickled: they are handles to an open database."""
        raise TypeError("cannot pickle a vmstore.Tree; pickle dict(tree) instead")


class _RangeView:
    """What the three views share: the tree, the bounds and the direction."""

    _mapping: Tree
    _start: Optional[bytes]
    _stop: Optional[bytes]
    _reverse: bool

    def _setup(self, tree: Tree, start: Optional[BytesLike], stop: Optional[BytesLike], reverse: bool) -> None:
        self._mapping = tree
        self._start = _bound(start, "start")
        self._stop = _bound(stop, "stop")
        self._reverse = bool(reverse)

    def _iter(self, mode: int, reverse: bool) -> Iterator[Any]:
        return _scan(self._mapping._core, self._start, self._stop, reverse, mode)

    def _in_range(self, key: bytes) -> bool:
        return (self._start is None or key >= self._start) and (self._stop is None or key < self._stop)

    def _key_in_range(self, key: Any) -> Optional[bytes]:
        """key as bytes when it lies in the range (TypeError when not bytes-like)."""
        k = _bound(key, "key")
        if k is None or not self._in_range(k):
            return None
        return k

    def __len__(self) -> int:
        """The number of entries in the range (a scan, without the GIL)."""
        return self._mapping._core.count(self._start, self._stop)

    def _describe(self) -> str:
        parts = [repr(self._mapping)]
        if self._start is not None:
            parts.append(f"start={self._start!r}")
        if self._stop is not None:
            parts.append(f"stop={self._stop!r}")
        if self._reverse:
            parts.append("reverse=True")
        return f"{type(self).__name__}({', '.join(parts)})"


class TreeKeysView(_RangeView, KeysView):
    """The keys of a :class:`Tree` in a range: see :meth:`Tree.keys`. A
    :class:`collections.abc.KeysView` (set operations return ``set``)."""

    def __init__(
        self, tree: Tree, start: Optional[BytesLike] = None, stop: Optional[BytesLike] = None, reverse: bool = False
    ) -> None:
        """The keys of ``tree`` in ``[start, stop)``; use :meth:`Tree.keys`."""
        self._setup(tree, start, stop, reverse)

    def __iter__(self) -> Iterator[bytes]:
        """The keys in the view's order."""
        return self._iter(_KEYS, self._reverse)

    def __reversed__(self) -> Iterator[bytes]:
        """The keys in the opposite order."""
        return self._iter(_KEYS, not self._reverse)

    def __contains__(self, key: object) -> bool:
        """True when ``key`` lies in the range and is present."""
        k = self._key_in_range(key)
        return k is not None and self._mapping._core.contains(k)

    def __repr__(self) -> str:
        """The view's tree and bounds (the contents are not read)."""
        return self._describe()


class TreeValuesView(_RangeView, ValuesView):
    """The values of a :class:`Tree` in a key range: see :meth:`Tree.values`."""

    def __init__(
        self, tree: Tree, start: Optional[BytesLike] = None, stop: Optional[BytesLike] = None, reverse: bool = False
    ) -> None:
        """The values of ``tree`` for keys in ``[start, stop)``; use :meth:`Tree.values`."""
        self._setup(tree, start, stop, reverse)

    def __iter__(self) -> Iterator[bytes]:
        """The values in the view's key order."""
        return self._iter(_VALUES, self._reverse)

    def __reversed__(self) -> Iterator[bytes]:
        """The values in the opposite order."""
        return self._iter(_VALUES, not self._reverse)

    def __contains__(self, value: object) -> bool:
        """True when some key in the range has this value (a scan)."""
        return any(v == value for v in self)

    def __repr__(self) -> str:
        """The view's tree and bounds (the contents are not read)."""
        return self._describe()


class TreeItemsView(_RangeView, ItemsView):
    """The (key, value) pairs of a :class:`Tree` in a key range: see :meth:`Tree.items`.
    A :class:`collections.abc.ItemsView` (set operations return ``set``)."""

    def __init__(
        self, tree: Tree, start: Optional[BytesLike] = None, stop: Optional[BytesLike] = None, reverse: bool = False
    ) -> None:
        """The pairs of ``tree`` with keys in ``[start, stop)``; use :meth:`Tree.items`."""
        self._setup(tree, start, stop, reverse)

    def __iter__(self) -> Iterator[Tuple[bytes, bytes]]:
        """The (key, value) pairs in the view's order."""
        return self._iter(_ITEMS, self._reverse)

    def __reversed__(self) -> Iterator[Tuple[bytes, bytes]]:
        """The pairs in the opposite order."""
        return self._iter(_ITEMS, not self._reverse)

    def __contains__(self, item: object) -> bool:
        """True when ``item`` is a (key, value) pair of the range."""
        if not isinstance(item, tuple) or len(item) != 2:
            return False
        key, value = item
        k = self._key_in_range(key)
        if k is None:
            return False
        stored = self._mapping._core.get(k, None)
        return stored is not None and stored == value

    def __repr__(self) -> str:
        """The view's tree and bounds (the contents are not read)."""
        return self._describe()


from . import dbm  # noqa: E402  (vmstore.dbm uses the names above)
