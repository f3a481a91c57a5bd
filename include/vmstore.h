/* vmstore: an embeddable key-value storage engine (C API).
 *
 * Contract
 * - Every call returns a status: VMS_OK (0), VMS_NOTFOUND (1) or a negative error.
 *   vms_strerror() names a status; vms_last_error() gives the message of the last
 *   failed call on the calling thread, which starts with that name (for example
 *   "invalid argument: unknown config key ...").
 * - Bad input (NULL handles or pointers, oversized keys or values, unknown config keys)
 *   returns an error and changes nothing that is stored.
 * - Every call is safe from many threads on the same handles, except that an iterator
 *   belongs to the one thread that uses it. vms_close waits for the calls in flight on
 *   the database and its handles; a call that starts after vms_close began returns
 *   VMS_EINVAL ("database is closed"). Closed handles stay safe to call (VMS_EINVAL)
 *   until 1,024 more databases have been closed in the process; after that, using
 *   them is undefined.
 * - fork: a child forked without exec holds no lock on its parent's databases and must
 *   not use the parent's handles (they share nothing it may touch). It may open other
 *   databases, but not one its parent has open (VMS_EBUSY).
 * - Keys order as unsigned bytes; a proper prefix orders first.
 * - Limits: keys are 1 .. VMS_MAX_KEY_SIZE bytes (the empty key is not allowed),
 *   values are 0 .. VMS_MAX_VALUE_SIZE bytes. Larger ones get VMS_ETOOBIG.
 * - Durability: every put, delete, batch and tree create or drop is appended to a
 *   write-ahead log (log-0.vms, log-1.vms) before it returns; config durability= says when it returns
 *   (sync, the default: once the record is on stable storage; async: once it is in the
 *   OS page cache; none: no log). vms_sync() and vms_close() are checkpoints, committed
 *   atomically through the page journal (journal-0.vms, journal-1.vms); a background
 *   checkpoint runs when the log passes five eighths of log_size. A checkpoint never stops
 *   writers beyond waiting for the writes in flight at its start. After a crash, a kill or a power
 *   cut, the next open restores the last committed checkpoint and replays the log after
 *   it: every write acknowledged under sync (under async: all but the last
 *   sync_interval ms after a power cut; under none: nothing after the checkpoint). A
 *   batch is wholly present or wholly absent. A checkpoint that returns an error may or
 *   may not have committed; the database is consistent either way.
 * - After a failed fdatasync (log, journal or data file) the database is read-only:
 *   writes and vms_sync return the error until it is reopened (what reached storage is
 *   unknown). While the device refuses write-back or log space (full, I/O errors),
 *   writes return that error (VMS_ENOSPC, VMS_EIO) having changed nothing; reads go on.
 * - Damage is reported as VMS_ECORRUPT: every page carries a CRC-32C checksum and its
 *   own id. Limit: a whole, valid, older copy of a page written back in its place (a
 *   lost or misdirected write of the device) is not detected.
 */
#ifndef VMSTORE_H
#define VMSTORE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct vms_db vms_db;
typedef struct vms_tree vms_tree;
typedef struct vms_iter vms_iter;
typedef struct vms_batch vms_batch;

enum {
  VMS_OK = 0,
  VMS_NOTFOUND = 1,
  VMS_EINVAL = -1,   /* bad argument, unknown config key, malformed value        */
  VMS_EIO = -2,      /* the operating system reported an I/O error               */
  VMS_ECORRUPT = -3, /* stored data is damaged (checksum, format) or unclean     */
  VMS_ENOSPC = -4,   /* the storage reached max_size or the device is full       */
  VMS_ETOOBIG = -5,  /* key or value larger than the documented maximum          */
  VMS_ENOMEM = -6,   /* the buffer pool or the process ran out of memory         */
  VMS_EBUSY = -7     /* the database is open elsewhere (this or another process); a transaction: abort, retry;
                        a call this thread's open transaction would wait for (see vms_txn_*) */
};

#define VMS_MAX_KEY_SIZE 1024
#define VMS_MAX_VALUE_SIZE ((size_t)1 << 30) /* 1 GiB; and the value plus its 40-byte page
                                               header, rounded up to whole 4 KiB pages, may
                                               take at most half of the pool's pages (else
                                               VMS_ENOMEM): in an 8M pool, 4 MiB - 40 bytes */

const char* vms_strerror(int rc);
/* Detail message of the last failed call on this thread ("" if none). VMS_NOTFOUND is
 * not a failure: it leaves the message as it was. */
const char* vms_last_error(void);

/* config: NULL or "key=value,key=value" (each key at most once: VMS_EINVAL). Keys:
 *   pool_size=SIZE   buffer pool memory budget, bytes with optional K/M/G/T suffix
 *                    (default 1G, minimum 1M; more than the memory of the machine or
 *                    of the process's memory cgroup is VMS_ENOMEM)
 *   create=BOOL      create directory and database if missing (default true);
 *                    with false a missing database is VMS_EINVAL, nothing created
 *   max_size=SIZE    largest the data file may grow (default 1T); reserves address
 *                    space only
 *   durability=MODE  sync (default): vms_put, vms_delete and vms_write return once their
 *                    log record is on stable storage (concurrent writers share a flush);
 *                    async: once it is in the OS page cache (survives a crash of the
 *                    process; a power cut loses at most sync_interval ms); none: no log,
 *                    only vms_sync/vms_close are durable, a crash reopens at the last one
 *   sync_interval=MS with async, the log is flushed at least this often (1..60000,
 *                    default 100)
 *   commit_delay=US  with sync in task mode (vms_tasks_*): a flush that committing
 *                    tasks ask for may wait this many microseconds for more commits
 *                    while the worker threads have other tasks to run; a thread with
 *                    nothing else to run ends the wait at once (0..100000, default
 *                    500; 0: flush at once)
 *   log_size=SIZE    bound of the log's two files and ring together: a checkpoint
 *                    starts when the log passes five eighths of it, and a writer that
 *                    finds no room waits for that checkpoint's commit (1M..64G,
 *                    default 1G)
 *   log_zero_fill=BOOL  with sync, a background thread zero-fills and syncs the log
 *                    ahead of the appends, so commits write into initialized blocks
 *                    (default true)
 *   direct_io=BOOL   O_DIRECT for the data file and the log where allowed
 *                    (default true)
 *   io=uring|sync    how a miss inside a task (vms_tasks_*, vms_get_many) is read:
 *                    uring queues it on the thread's io_uring ring and runs other
 *                    tasks meanwhile; sync blocks the thread (default uring)
 *   page_provider=BOOL  a background thread evicts ahead of need once the pool is
 *                    full, so reads rarely evict inline (default true)
 *   huge_pages=BOOL  while the data file fits in the pool, the pool's memory is taken
 *                    in transparent huge pages: faster in-memory lookups, slower first
 *                    touches in some VMs; memory stays within pool_size (default false)
 *   read_ahead=N     scans and iterators that go on from leaf to leaf read up to N
 *                    leaves ahead of them together (0..256 pages, default 32; 0: off)
 *   policy=NAME      the page-replacement policy: clock, fifo, lru, lru2, 2q, slru, arc,
 *                    random, gclock, lfuda, leanstore, s3fifo or sieve (default s3fifo;
 *                    with tiers clock, and any other is VMS_EINVAL); docs/POLICIES.md
 *   resident_set=hash|bitmap  how the pool records which pages are in memory: a hash
 *                    table sized by the pool, or one bit per page of the data file
 *                    (default hash)
 *   trace=FILE       record every page access of this open (after recovery, until
 *                    close) into FILE, created or truncated: the page-reference string
 *                    `vmstore sim` replays (default: none). Costs a call per access and
 *                    about 2 bytes per access on disk; a file that cannot be created
 *                    fails the open, one that cannot be written fails vms_close
 *   tiers=NODE:SIZE+NODE:SIZE...  memory tiers, fastest first (up to 4, each at least
 *                    1M), e.g. tiers=0:4G+1:16G: pages are read in to the first tier,
 *                    move one tier down when it is full and back up when used often,
 *                    and leave memory only from the last; each size is a hard budget
 *                    and the pool is their sum (giving pool_size too is VMS_EINVAL; a
 *                    node without memory here is VMS_EINVAL). Default: none, one pool
 *                    of pool_size
 *   migrate_batch=N  with tiers: pages moved per move_pages call (1..4096, default 64)
 *   migrate=move_pages|mbind  with tiers: move pages in batches of migrate_batch with
 *                    move_pages, or page by page with mbind, the baseline (default
 *                    move_pages)
 * Unknown keys or malformed values: VMS_EINVAL, nothing created.
 * Opening a database that is open elsewhere: VMS_EBUSY. A damaged data file (bad
 * superblock, an existing but empty file): VMS_ECORRUPT. Also VMS_ECORRUPT: a
 * directory that holds a log or journal file but no data.vms (the data file was lost;
 * nothing is created), and a log file of another database in the directory (it is
 * neither replayed nor overwritten). The address space for
 * max_size cannot be reserved: VMS_ENOMEM. Creating a database is atomic: an open that
 * fails or is killed while creating leaves no database behind. */
int vms_open(const char* dir, const char* config, vms_db** db);
/* Checkpoints (as vms_sync), releases the directory lock and the memory of the pool.
 * db and its handles must not be used afterwards (see the thread contract above).
 * An error means the last checkpoint stays the one the next open finds (plus the log
 * after it, unless durability=none). */
int vms_close(vms_db* db);
/* All writes so far are on stable storage when this returns VMS_OK (a checkpoint of the
 * state when it began; writers are not stopped while it writes; it writes nothing when
 * nothing changed since the last one). */
int vms_sync(vms_db* db);

/* name "" is the default tree. With create=0 a missing tree gives VMS_NOTFOUND.
 * The handle stays valid until vms_close (after vms_tree_drop, calls on it give
 * VMS_NOTFOUND). Names are 0 .. 255 bytes. */
int vms_tree_open(vms_db* db, const char* name, int create, vms_tree** tree);
int vms_tree_drop(vms_db* db, const char* name);

int vms_put(vms_tree* t, const void* key, size_t klen, const void* val, size_t vlen);
/* Sets *vlen to the full value length and copies min(cap, *vlen) bytes into buf
 * (buf may be NULL when cap is 0). */
int vms_get(vms_tree* t, const void* key, size_t klen, void* buf, size_t cap, size_t* vlen);
int vms_delete(vms_tree* t, const void* key, size_t klen);

/* Atomic read-modify-write of one key: vms_update calls fn with the key's current value
 * and applies what fn decides before any other write of the key can follow the value
 * fn saw. No update is lost under any concurrency, in every durability mode: puts,
 * deletes, batches and other updates of the key wait while it runs; readers do not.
 *
 * fn(ctx, val, vlen, newval, newlen) gets ctx as given, and in val/vlen the current
 * value (a copy, valid until fn returns; val is NULL when the key is absent, non-NULL
 * with vlen 0 for an empty value). It returns one of:
 *   VMS_UPDATE_KEEP    leave the key as it is (absent stays absent); nothing is logged
 *   VMS_UPDATE_PUT     store the *newlen bytes at *newval (0 .. VMS_MAX_VALUE_SIZE;
 *                      *newval may point into val, or to memory valid until vms_update
 *                      returns; NULL only with *newlen 0)
 *   VMS_UPDATE_DELETE  remove the key (absent: nothing to do, nothing logged)
 *   a negative code    abort: nothing changes and vms_update returns that code as it
 *                      is. vmstore's own codes are -1 .. -99; use VMS_EUSER (-100) and
 *                      below for yours, so callers can tell them apart.
 * vms_update returns VMS_OK after keep, put and delete (also of an absent key), fn's
 * abort code, VMS_ETOOBIG for a new value over VMS_MAX_VALUE_SIZE, VMS_EINVAL for any
 * other return value of fn or a NULL *newval with *newlen > 0 (nothing changed in all
 * these cases), and otherwise what vms_put and vms_delete return.
 *
 * What fn may do: fn runs on the calling thread with no page locked but holding the
 * key's lock (which some other keys share) and the database's writer gate (shared). It
 * must return quickly and must not call vmstore on this database (that may deadlock),
 * nor block its thread (inside a task: nor wait for another task).
 * How often fn is called: never when vms_update fails its argument checks (NULL tree,
 * key or fn: VMS_EINVAL; the empty key: VMS_EINVAL; a key over VMS_MAX_KEY_SIZE:
 * VMS_ETOOBIG) or the database is closed or read-only; otherwise once, except that if
 * the log file is full when fn's change is to be logged, vms_update lets a checkpoint
 * switch log files and calls fn again with the value as it is then. Only the change of
 * the last call is applied, so fn should only compute its result (and set its outputs
 * anew each time).
 * A put of the same size as the current value is written over it in place (values of
 * up to about 1.5 KiB with their key, which live in the B+tree's leaves). The change is
 * logged, and replayed after a crash, as the put or delete it was. */
enum { VMS_UPDATE_KEEP = 0, VMS_UPDATE_PUT = 1, VMS_UPDATE_DELETE = 2 };
#define VMS_EUSER (-100)
typedef int (*vms_update_fn)(void* ctx, const void* val, size_t vlen, const void** newval, size_t* newlen);
int vms_update(vms_tree* t, const void* key, size_t klen, vms_update_fn fn, void* ctx);
/* n lookups together. The keys whose pages are in memory descend the B+tree side by
 * side, a step of each in turn, each step requesting the memory its next step reads, so
 * that their cache misses overlap (in memory, several times the lookups per second of
 * one vms_get after another). The others (pages to read from storage, values on pages of
 * their own) run as tasks of the calling thread (up to 64 at once): a lookup that misses
 * suspends while the others go on, so one thread keeps many reads in flight (config
 * io=uring, the default). Lookup i is
 * vms_get(t, keys[i], klens[i], bufs[i], caps[i], &vlens[i]) with its result in rcs[i]
 * (VMS_OK, VMS_NOTFOUND, or an error such as VMS_EINVAL for a NULL or empty key).
 * bufs and caps may both be NULL (lengths only); bufs[i] may be NULL when caps[i] is 0.
 * Returns VMS_OK when it could run them all; VMS_EINVAL (nothing looked up) when t is
 * NULL or, with n > 0, keys, klens, vlens or rcs is NULL, or only one of bufs and caps.
 * Inside a task (vms_tasks_submit) the lookup tasks run beside it on its thread, and it
 * waits for them. */
int vms_get_many(vms_tree* t, size_t n, const void* const* keys, const size_t* klens, void* const* bufs,
                 const size_t* caps, size_t* vlens, int* rcs);

/* Zero-copy reads: the value in place in the buffer pool, for values of every size.
 * - vms_get_view: on VMS_OK, *value and *vlen are the value's bytes in the pool itself
 *   (a value over one page is one contiguous run of memory), valid until
 *   vms_view_release(*view). While held, the value cannot change or go away: a writer
 *   that replaces or deletes the key waits until the release; a value small enough to
 *   live in its B+tree leaf is held by holding that leaf, so writers of the other keys
 *   of that leaf wait too. The page held is not evicted meanwhile.
 * - So: hold views briefly; never write to the same tree (vms_put, vms_delete,
 *   vms_write, vms_tree_drop) from a thread that holds a view of it, since that write
 *   could wait for the view forever. Reads that copy (vms_get, iterators) are fine;
 *   another view or scan (vms_scan, vms_read) of the same tree is not: while a writer
 *   waits for the first view, new views of that leaf wait for the writer, which waits
 *   for the first view. Writes to other trees are fine, but not vms_sync, vms_tree_drop
 *   or vms_check from the holding thread: they wait for every writer in flight, and one
 *   may be waiting for the view. Never write into *value. vms_close
 *   waits until every view of the database is released. A view may be released from
 *   any thread. VMS_NOTFOUND (nothing held, *view NULL) when the key is absent.
 * - vms_read calls fn(ctx, value, vlen) once with the value in place, held shared for
 *   the call (the rules above apply inside fn); a nonzero return of fn is returned as
 *   is. VMS_NOTFOUND (fn not called) when absent.
 * - vms_read_optimistic calls fn(ctx, value, vlen) with the value in place while
 *   holding nothing (no writer waits for it; no atomic operation on the value's page),
 *   then checks that no write or eviction changed the value meanwhile, and if one did,
 *   calls fn again. Only the last call saw the current value; its return is returned
 *   (nonzero as is). So fn may run more than once, and a call that is repeated may see
 *   bytes that were never the value (torn, or zeros): fn must check every length or
 *   offset it reads from them against vlen, recompute all it keeps on each call, keep
 *   no pointer into value, be short, and not call this database (a value that is not
 *   resident is read in and held shared for one call, as vms_read holds it).
 *   VMS_NOTFOUND (fn not called) when absent.
 * - vms_get_range copies bytes [offset, offset + cap) of the value (fewer at its end)
 *   into buf, sets *copied to how many and *vlen to the value's whole length; only that
 *   range is copied. An offset at or past the end copies nothing. It reads through a
 *   view held for the copy: the rules of views above apply to a caller holding one. */
typedef struct vms_view vms_view;
/* Writes a value of vlen bytes in place, without a second copy (LMDB's MDB_RESERVE):
 * fill(ctx, space, vlen) gets the value's bytes (zeroed) in their final place and
 * writes them; if it returns 0 the value is stored under key as vms_put would, else
 * nothing changes and its return value is returned as is. fill runs with the key's
 * writer lock held: it must not call this database. */
typedef int (*vms_fill_fn)(void* ctx, void* space, size_t vlen);
int vms_put_reserve(vms_tree* t, const void* key, size_t klen, size_t vlen, vms_fill_fn fill, void* ctx);
int vms_get_view(vms_tree* t, const void* key, size_t klen, vms_view** view, const void** value, size_t* vlen);
void vms_view_release(vms_view* view);
typedef int (*vms_read_fn)(void* ctx, const void* value, size_t vlen);
int vms_read(vms_tree* t, const void* key, size_t klen, vms_read_fn fn, void* ctx);
int vms_read_optimistic(vms_tree* t, const void* key, size_t klen, vms_read_fn fn, void* ctx);
int vms_get_range(vms_tree* t, const void* key, size_t klen, size_t offset, void* buf, size_t cap, size_t* copied,
                  size_t* vlen);
/* Zero-copy scan: calls fn(ctx, key, klen, value, vlen) for each entry with key >= start
 * (start NULL / slen 0: from the first key; over VMS_MAX_KEY_SIZE bytes: VMS_ETOOBIG),
 * ascending, until fn returns nonzero or the entries end. key and value are valid during
 * that call only; value is in place in the pool. The leaf of the entry (and a large value's own page) is held shared while fn
 * runs, so the rules of the views above apply inside fn: never write to this tree from
 * it, nor take a view or scan of it; reads that copy (vms_get, iterators) are fine. The
 * entries of one leaf are one consistent state; writes made
 * while the scan moves from leaf to leaf may or may not be seen. Returns VMS_OK at the
 * end; a nonzero return of fn stops the scan and is returned as is (use a value that
 * is not a VMS_ code, e.g. VMS_EUSER or a positive one, to tell it apart). */
typedef int (*vms_scan_fn)(void* ctx, const void* key, size_t klen, const void* value, size_t vlen);
int vms_scan(vms_tree* t, const void* start, size_t slen, vms_scan_fn fn, void* ctx);

/* Positions before the first key >= start (start NULL / slen 0: the first key). start is
 * a bound, not a stored key: any length (unlike vms_scan's, at most VMS_MAX_KEY_SIZE). */
int vms_iter_open(vms_tree* t, const void* start, size_t slen, vms_iter** it);
/* VMS_OK with pointers valid until the next call on this iterator; VMS_NOTFOUND at end. */
int vms_iter_next(vms_iter* it, const void** key, size_t* klen, const void** val, size_t* vlen);
void vms_iter_close(vms_iter* it);

/* Batches: puts and deletes applied together by vms_write, all or nothing.
 * - vms_batch_put/vms_batch_delete check the key and value when adding (VMS_EINVAL for
 *   the empty key or a NULL pointer, VMS_ETOOBIG beyond the limits); nothing is stored
 *   until vms_write. A batch may span trees of one database.
 * - vms_write applies the operations in order; deleting an absent key is not an error.
 *   A tree of another database: VMS_EINVAL, nothing written. A dropped tree:
 *   VMS_NOTFOUND, nothing stays. A storage error part-way: the operations before it are
 *   undone, the error returned (if the undo fails too, the database turns read-only
 *   until reopened, and the reopened database holds none of the batch).
 * - After a crash a batch is wholly present or wholly absent: it is one log record,
 *   and no checkpoint (vms_sync, vms_close) falls inside one.
 * - While vms_write runs, writers of the batch's keys wait (it holds their locks);
 *   writes of other keys, and other batches, go on beside it. Readers are not blocked
 *   and may see some of the batch's changes before others.
 * - A batch belongs to one thread; reuse it after vms_batch_clear, which keeps the
 *   memory of its operations (a batch reused for batches of similar size allocates
 *   nothing); the trees it names must stay open until it is written or cleared. */
int vms_batch_new(vms_batch** b);
int vms_batch_put(vms_batch* b, vms_tree* t, const void* key, size_t klen, const void* val, size_t vlen);
int vms_batch_delete(vms_batch* b, vms_tree* t, const void* key, size_t klen);
int vms_batch_clear(vms_batch* b);
int vms_write(vms_db* db, vms_batch* b);
void vms_batch_free(vms_batch* b);

/* Early lock release: vms_write is vms_write_nowait then vms_wait_durable.
 * - vms_write_nowait applies the batch as vms_write does and returns once readers see it
 *   and its log record is appended, without waiting for the log flush; *commit is its
 *   commit point. An application holding its own locks
 *   around a transaction releases them now, so the next transaction on the same rows
 *   joins the same group commit, then calls vms_wait_durable before acknowledging.
 * - vms_wait_durable returns once that write is as durable as vms_write would have made
 *   it: durability=sync, on stable storage (waiters share one flush; in a task only the
 *   task waits); async and none, at once. It covers every write logged before it too.
 *   A commit point larger than any this database issued since it was opened:
 *   VMS_EINVAL; 0: VMS_OK at once. A failed flush: the error vms_write would return.
 * - Until then, readers and later writes may see the batch; a crash before its flush
 *   (with durability sync, of the process too) loses it and everything logged after it. A batch too large for the log is durable
 *   when vms_write_nowait returns. */
int vms_write_nowait(vms_db* db, vms_batch* b, uint64_t* commit);
int vms_wait_durable(vms_db* db, uint64_t commit);

/* Transactions: writes over the trees of one database, each applied in place when it is
 * made, committed together: after a crash all of them are present or none
 * (vmstore/transaction.hpp has the whole contract).
 * - vms_txn_new makes a transaction handle for db; it begins with its first call and
 *   ends with vms_txn_commit or vms_txn_abort, after which it may be used again.
 *   vms_txn_free aborts an open one. A handle is used by one thread (or task) at a time.
 * - vms_txn_put, vms_txn_delete (VMS_NOTFOUND when absent, nothing changes) and
 *   vms_txn_update (as vms_update) write at once and keep the key's lock until the end;
 *   vms_txn_get (as vms_get) locks the key and reads it as it stands. Transactions that
 *   reach their keys only through these calls are serializable. Other readers (vms_get,
 *   scans, iterators, views) see the writes as they are made, before the commit.
 * - vms_txn_commit writes one log record of every change and returns as durability
 *   makes a write return (sync: on stable storage, sharing a flush with concurrent
 *   committers); vms_txn_commit_nowait is vms_write_nowait's counterpart (then
 *   vms_wait_durable). vms_txn_abort, or a commit that fails, puts every value back.
 * - VMS_EBUSY from a call: a key's lock stayed held elsewhere for 2-6 ms while this
 *   transaction held others (two transactions waiting for each other), or the log file
 *   filled while it was open: abort it and retry. A call that fails changes nothing
 *   itself; the transaction stays open: commit or abort it.
 * - A tree of another database: VMS_EINVAL. Keys and values as for vms_put; a write
 *   whose log record would pass a sixteenth of log_size: VMS_ETOOBIG (use vms_put).
 * - A transaction is open in the thread (or task: vms_tasks_*) of its last call; a
 *   handle may go on from another. There, plain writes to its database (vms_put,
 *   vms_delete, vms_update, vms_write, vms_write_nowait, vms_put_reserve, creating a tree
 *   with vms_tree_open) return VMS_EBUSY and write nothing, since they could wait for
 *   the transaction's own locks forever: write through the transaction, or end it first.
 *   Other threads, and other tasks of that thread, write as usual (on the transaction's
 *   keys they wait for its end). vms_sync, vms_close and vms_tree_drop return VMS_EBUSY
 *   in a thread where any task holds an open transaction of the database. vms_tree_open
 *   of an existing tree works there, even while a vms_tree_drop or a tree creation on
 *   another thread waits for the transaction; vms_close from another thread waits for
 *   open transactions. */
typedef struct vms_txn vms_txn;
int vms_txn_new(vms_db* db, vms_txn** txn);
int vms_txn_put(vms_txn* txn, vms_tree* t, const void* key, size_t klen, const void* val, size_t vlen);
int vms_txn_delete(vms_txn* txn, vms_tree* t, const void* key, size_t klen);
int vms_txn_get(vms_txn* txn, vms_tree* t, const void* key, size_t klen, void* buf, size_t cap, size_t* vlen);
int vms_txn_update(vms_txn* txn, vms_tree* t, const void* key, size_t klen, vms_update_fn fn, void* ctx);
int vms_txn_commit(vms_txn* txn);
int vms_txn_commit_nowait(vms_txn* txn, uint64_t* commit);
int vms_txn_abort(vms_txn* txn);
void vms_txn_free(vms_txn* txn);

/* Task mode, for applications with many independent operations (vmstore/tasks.hpp has
 * the whole contract). A pool of `threads` worker threads, each running up to
 * `inflight` tasks at once (stackful fibers). Every vmstore call made inside a task
 * that misses on a page suspends that task while the read is in flight, and its thread
 * runs the other tasks; with config io=uring (the default) their reads are submitted
 * together through the thread's io_uring ring.
 * - vms_tasks_new: threads 1..1024, inflight 1..4096, else VMS_EINVAL.
 * - vms_tasks_submit: fn(arg) runs once as a task on some worker; any thread may submit,
 *   tasks too. A task must not block its thread on anything but vmstore calls.
 * - vms_tasks_wait: returns once every task submitted before it has finished (VMS_EINVAL
 *   when called from inside one of this pool's tasks).
 * - vms_tasks_free: waits for every submitted task, then stops the workers. */
typedef struct vms_tasks vms_tasks;
int vms_tasks_new(unsigned threads, unsigned inflight, vms_tasks** pool);
int vms_tasks_submit(vms_tasks* pool, void (*fn)(void* arg), void* arg);
int vms_tasks_wait(vms_tasks* pool);
void vms_tasks_free(vms_tasks* pool);

#ifdef __cplusplus
}
#endif

#endif /* VMSTORE_H */
