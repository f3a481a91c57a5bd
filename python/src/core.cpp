// vmstore._core: the C++ half of the Python binding, over the public C++ API
// (include/vmstore/). The Pythonic layer (mapping protocol, views, errors) is
// vmstore/__init__.py; this file is the part that must be fast or must hold the GIL rules.
//
// Contract
// - Every engine call runs with the GIL released, so many Python threads can use one
//   database at once. Python objects are only touched with the GIL held: arguments are
//   read (bytes-like objects pinned with a buffer export) before the release, results are
//   built after it.
// - DbCore, TreeCore and Cursor share one Shared (std::shared_ptr): the Database lives
//   until the last of them is gone, so no handle ever points at freed memory. Shared::gate
//   is held shared by every engine call and exclusively by close(): close waits for the
//   calls in flight, and every later call raises ClosedError instead of reaching a Tree or
//   Iterator that the engine's contract says is invalid after close.
// - A dropped tree's TreeCores are marked dropped (by DbCore::dropTree); calls on them
//   raise ClosedError.
// - A BatchCore holds a vmstore::WriteBatch and the TreeStates of its trees; adding an
//   operation checks it (the engine's own checks, plus: the tree belongs to the batch's
//   database and was not dropped) and touches no database state. write() applies it with
//   the GIL released, while add/clear/write from other threads raise RuntimeError instead
//   of changing the operations under it; it never hands the engine a tree of another
//   database, or of a closed one.
// - TreeCore::modify runs the caller's Python function inside Tree::update, with the GIL
//   taken back for the call (the engine holds the key's lock meanwhile, no page lock).
//   While it runs, every call of this binding on the same database from that thread
//   raises RuntimeError instead of deadlocking on that lock (Shared::run checks a
//   thread-local marker); what the function raises propagates with nothing changed.
// - A TxnCore owns a vmstore::Transaction (in a TxnState). Its engine calls run with the
//   GIL released and TxnState::call held, one thread at a time (others raise
//   RuntimeError, as BatchCore's). The engine counts an open transaction as open on the
//   thread of its last call (sync, close, dropTree and check return Busy there), and
//   ending it on any thread clears that. The binding keeps the same owner
//   (TxnState::owner): the thread of its first or last put/delete/get/modify. So an open
//   transaction may go on from another thread once its owner's call has returned; that
//   thread becomes its owner and the former one is free again. commit, abort and len
//   work from any thread and move nothing. A thread owns at most one open transaction
//   per database (a second could wait for the first's key locks forever: RuntimeError,
//   when beginning one or going on with one), and on that thread a plain write (Tree,
//   Batch, creating a tree) raises RuntimeError instead of waiting for the transaction's
//   own locks, and sync/check/drop_tree raise BusyError before reaching the engine.
// - Shared::openTxns lists the open transactions. Garbage collection of an open one
//   aborts it at once, on the collecting thread. DbCore::close aborts every open
//   transaction first, on the closing thread (a call in flight on one is waited for,
//   never while holding what that call could wait for), so the engine's close never
//   waits for one; their next call raises ClosedError. Nothing of an aborted transaction
//   stays behind on any thread.
// - A tree drop waits for every open transaction; the engine's openTree of an existing
//   tree never waits for one, so a thread with an open transaction opens trees while a
//   drop or a creation waits. Every TreeCore of one engine tree handle shares one dropped
//   flag, set by the drop, so the Python Database needs no lock across a drop.
// - Engine statuses become the exception classes that vmstore/__init__.py registers with
//   _set_error_types(); a missing key through [] is KeyError; a non-bytes-like key or value
//   is TypeError. Nothing is written when an argument is rejected.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "vmstore/vmstore.hpp"

namespace nb = nanobind;
using namespace nb::literals;

namespace {

using vmstore::Status;

// ----------------------------------------------------------------------------------------
// Errors

// vmstore.KEEP: what a modify() function returns to leave its key as it is. Created once
// by the module and kept for the life of the process.
struct KeepMarker {};
PyObject* keepMarker = nullptr;

// The exception classes of vmstore/__init__.py, by role. Set once by _set_error_types and
// kept for the life of the process (never released: module teardown order is unknown).
enum ErrorKind { kInvalid, kIO, kCorruption, kNoSpace, kTooBig, kNoMemory, kBusy, kClosed, kKinds };
PyObject* errorTypes[kKinds] = {};

// An instance of the class registered for kind: (errno or None, message), as OSError takes.
nb::object makeError(ErrorKind kind, int errnum, const std::string& message) {
  nb::handle type = errorTypes[kind] != nullptr ? errorTypes[kind] : PyExc_OSError;
  return errnum != 0 ? type(errnum, message) : type(nb::none(), message);
}

[[noreturn]] void raise(nb::handle err) {
  PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(err.ptr())), err.ptr());
  throw nb::python_error();
}

[[noreturn]] void raiseError(ErrorKind kind, int errnum, const std::string& message) {
  raise(makeError(kind, errnum, message));
}

[[noreturn]] void raiseKeyError(nb::handle key) { raise(nb::handle(PyExc_KeyError)(key)); }

ErrorKind kindOf(Status::Code code, int* errnum) {
  *errnum = 0;
  switch (code) {
    case Status::Code::kInvalidArgument: *errnum = EINVAL; return kInvalid;
    case Status::Code::kCorruption: return kCorruption;
    case Status::Code::kNoSpace: *errnum = ENOSPC; return kNoSpace;
    case Status::Code::kTooBig: return kTooBig;
    case Status::Code::kNoMemory: *errnum = ENOMEM; return kNoMemory;
    case Status::Code::kBusy: *errnum = EBUSY; return kBusy;
    case Status::Code::kIOError: *errnum = EIO; return kIO;
    default: return kIO;  // no other code is an error today
  }
}

// The message is the status's own ("page 17: checksum mismatch"); the class names the code.
nb::object statusError(const Status& st) {
  int errnum;
  ErrorKind kind = kindOf(st.code(), &errnum);
  return makeError(kind, errnum, st.message().empty() ? Status::codeName(st.rawCode()) : st.message());
}

[[noreturn]] void raiseStatus(const Status& st) { raise(statusError(st)); }

[[noreturn]] void raiseClosed(const std::string& message) { raiseError(kClosed, 0, message); }

// ----------------------------------------------------------------------------------------
// Arguments

// A read-only view of a bytes-like argument (bytes, bytearray, memoryview, any object with
// the buffer protocol), valid while this object lives. A buffer export pins the memory:
// a bytearray cannot be resized while the GIL is released and its bytes are read.
class BytesArg {
 public:
  BytesArg(nb::handle obj, const char* what) {
    PyObject* o = obj.ptr();
    if (PyBytes_Check(o)) {
      data_ = PyBytes_AS_STRING(o);
      size_ = static_cast<size_t>(PyBytes_GET_SIZE(o));
      return;
    }
    if (PyObject_GetBuffer(o, &view_, PyBUF_SIMPLE) != 0) {
      if (PyErr_ExceptionMatches(PyExc_TypeError)) {
        PyErr_Clear();
        PyErr_Format(PyExc_TypeError, "%s must be bytes, bytearray or memoryview, not %.100s", what,
                     Py_TYPE(o)->tp_name);
      }
      throw nb::python_error();
    }
    held_ = true;
    data_ = static_cast<const char*>(view_.buf);
    size_ = static_cast<size_t>(view_.len);
  }
  ~BytesArg() {
    if (held_) PyBuffer_Release(&view_);
  }
  BytesArg(const BytesArg&) = delete;
  BytesArg& operator=(const BytesArg&) = delete;

  std::string_view view() const { return {data_, size_}; }

 private:
  Py_buffer view_{};
  bool held_ = false;
  const char* data_ = nullptr;
  size_t size_ = 0;
};

// An optional bound of a range (None: unbounded), copied: it outlives the call.
std::optional<std::string> optionalBound(nb::handle obj, const char* what) {
  if (obj.is_none()) return std::nullopt;
  BytesArg b(obj, what);
  return std::string(b.view());
}

nb::bytes toBytes(std::string_view s) { return nb::bytes(s.data(), s.size()); }

// ----------------------------------------------------------------------------------------
// Shared: one open database and the gate that makes close() safe against every handle.

struct Shared;
// The database whose modify() function this thread is running (null: none).
thread_local const Shared* modifying = nullptr;

[[noreturn]] void raiseReentered() {
  throw std::runtime_error("a modify() function must not use its own database (it runs holding the key's lock)");
}

bool interpreterFinalizing() {
#if PY_VERSION_HEX >= 0x030D0000
  return Py_IsFinalizing();
#else
  return _Py_IsFinalizing();
#endif
}

// A thread's identity for transaction owners: a thread-local object that every owner
// naming it keeps allocated, so that no later thread gets its address meanwhile.
using ThreadMark = std::shared_ptr<const int>;

const ThreadMark& thisThread() {
  thread_local const ThreadMark mark = std::make_shared<const int>(0);
  return mark;
}

// One vmstore::Transaction of the binding, shared by its TxnCore and, while it is open,
// by Shared::openTxns.
struct TxnState {
  explicit TxnState(vmstore::Database* db) : txn(db) {}
  vmstore::Transaction txn;
  // Held (GIL released) across every engine call on txn, and by close() or collection
  // ending it. Taken before Shared::gate and Shared::txnMutex.
  std::mutex call;
  // Under Shared::txnMutex: the thread it is open on (see the contract); null while not
  // open. Set and cleared with call held too; moved to a caller with the GIL held.
  ThreadMark owner;
  // Under call: ended by close(); the next call says so (ClosedError) instead of
  // beginning a new transaction as if nothing had happened.
  bool abortedByClose = false;
};

struct Shared {
  std::string path;
  std::unique_ptr<vmstore::Database> db;
  std::shared_mutex gate;
  // Set under gate held exclusively; read under gate, or without it where a stale value
  // only delays the ClosedError to the next call that takes the gate.
  std::atomic<bool> closed{false};
  // Values held by memoryviews from Tree.view(): close() refuses while any is held
  // (it would wait for them, forever if this thread holds one).
  std::atomic<int64_t> views{0};

  // Transactions. txnMutex is held briefly, never while waiting for anything (the GIL
  // included), so it may be taken with the GIL held.
  std::mutex txnMutex;
  std::vector<std::shared_ptr<TxnState>> openTxns;  // under txnMutex
  std::atomic<int> openCount{0};                    // openTxns.size()
  bool closing = false;                             // under txnMutex: no transaction begins

  // One dropped flag per engine tree handle, shared by its TreeStates; set by the drop.
  std::mutex flagsMutex;
  std::unordered_map<const vmstore::Tree*, std::shared_ptr<std::atomic<bool>>> droppedFlags;

  ~Shared() {
    // The GIL is released unless the interpreter is shutting down.
    bool release = PyGILState_Check() && !interpreterFinalizing();
    std::optional<nb::gil_scoped_release> nogil;
    if (release) nogil.emplace();
    // Garbage-collected without close(): close here (errors are lost, as in the C++
    // API). No transaction is open: each TxnCore keeps this Shared alive, and aborts its
    // transaction when collected.
    if (!closed && db) db->close();
  }

  // Runs fn with the GIL released and the gate held shared; ClosedError after close().
  template <class Fn>
  void run(Fn&& fn) {
    if (modifying == this) raiseReentered();
    bool wasClosed;
    {
      nb::gil_scoped_release nogil;
      std::shared_lock lock(gate);
      wasClosed = closed;
      if (!wasClosed) fn();
    }
    if (wasClosed) raiseClosed("database '" + path + "' is closed");
  }

  // --- transactions -----------------------------------------------------------------

  // True when this thread has an open transaction of this database (txnMutex held).
  bool openHereLocked(const TxnState* except = nullptr) const {
    const int* me = thisThread().get();
    return std::any_of(openTxns.begin(), openTxns.end(),
                       [&](const auto& t) { return t.get() != except && t->owner.get() == me; });
  }

  // The same; GIL held (txnMutex is never held long).
  bool openHere() {
    if (openCount.load(std::memory_order_acquire) == 0) return false;
    std::lock_guard lock(txnMutex);
    return openHereLocked();
  }

  // A plain write on a thread with an open transaction of this database could wait for
  // that transaction's own key locks, or for a checkpoint that waits for it: refused.
  void refuseWriteInTxn(const char* what) {
    if (modifying == this) raiseReentered();
    if (!openHere()) return;
    throw std::runtime_error(std::string(what) + ": this thread has an open transaction of database '" + path +
                             "'; write through the transaction, or commit or abort it first (a plain write could "
                             "wait for the transaction's own locks forever)");
  }

  // sync, check and drop_tree wait for every open transaction: the engine returns Busy
  // on a thread that holds one; said here before the engine is reached.
  void refuseInTxn(const char* what) {
    if (modifying == this) raiseReentered();
    if (!openHere()) return;
    raiseError(kBusy, EBUSY,
               std::string(what) + ": this thread has an open transaction of database '" + path + "'; commit or abort it first (" +
                   what + " waits for every open transaction to end)");
  }

  enum class Begun { kOk, kClosing, kSecondHere };

  // Records t as open on this thread (t->call and gate held).
  Begun begin(const std::shared_ptr<TxnState>& t) {
    std::lock_guard lock(txnMutex);
    if (t->owner) return Begun::kOk;
    if (closing) return Begun::kClosing;
    if (openHereLocked()) return Begun::kSecondHere;
    t->owner = thisThread();
    openTxns.push_back(t);
    openCount.fetch_add(1, std::memory_order_release);
    return Begun::kOk;
  }

  // t's engine transaction has ended (t->call held): no longer open.
  void forget(const std::shared_ptr<TxnState>& t) {
    std::lock_guard lock(txnMutex);
    if (!t->owner) return;
    t->owner = nullptr;
    auto it = std::find(openTxns.begin(), openTxns.end(), t);
    if (it != openTxns.end()) openTxns.erase(it);
    openCount.fetch_sub(1, std::memory_order_release);
  }

  bool isOpen(const TxnState& t) {
    std::lock_guard lock(txnMutex);
    return t.owner != nullptr;
  }

  // Aborts t if it is still open (t->call held, GIL released).
  void abortLocked(const std::shared_ptr<TxnState>& t, bool byClose) {
    if (!isOpen(*t)) return;
    (void)t->txn.abort();  // an undo that fails makes the database read-only: reported by its next write
    forget(t);
    if (byClose) t->abortedByClose = true;
  }

  void abortTxn(const std::shared_ptr<TxnState>& t, bool byClose) {
    std::lock_guard call(t->call);
    abortLocked(t, byClose);
  }

  // close(): no transaction begins any more, and every open one is aborted here. A call
  // in flight on one is waited for by trying its lock again (it may wait for another
  // transaction's key, which ending that one frees). GIL released.
  void abortAllForClose() {
    {
      std::lock_guard lock(txnMutex);
      closing = true;
    }
    for (;;) {
      std::vector<std::shared_ptr<TxnState>> open;
      {
        std::lock_guard lock(txnMutex);
        open = openTxns;
      }
      if (open.empty()) return;
      bool progress = false;
      for (const auto& t : open) {
        std::unique_lock call(t->call, std::try_to_lock);
        if (!call.owns_lock()) continue;
        abortLocked(t, true);
        progress = true;
      }
      if (!progress) std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  }

  // --- trees ------------------------------------------------------------------------

  std::shared_ptr<std::atomic<bool>> droppedFlag(const vmstore::Tree* tree) {
    std::lock_guard lock(flagsMutex);
    auto& flag = droppedFlags[tree];
    if (!flag) flag = std::make_shared<std::atomic<bool>>(false);
    return flag;
  }

  // The engine dropped tree: every TreeCore of it raises ClosedError from now on.
  void markDropped(const vmstore::Tree* tree) {
    std::lock_guard lock(flagsMutex);
    auto it = droppedFlags.find(tree);
    if (it == droppedFlags.end()) return;
    it->second->store(true, std::memory_order_release);
    droppedFlags.erase(it);  // the engine never hands out this handle again
  }
};

// What a TreeCore and its cursors share.
struct TreeState {
  std::shared_ptr<Shared> shared;
  vmstore::Tree* tree;
  std::string name;
  std::shared_ptr<std::atomic<bool>> dropped;  // shared by every TreeState of tree

  bool isDropped() const { return dropped->load(std::memory_order_acquire); }
  void checkUsable() const {
    if (isDropped()) raiseClosed("tree '" + name + "' was dropped");
  }
};

// ----------------------------------------------------------------------------------------
// Cursor: one pass over a key range of a tree, forward or backward, handed out in batches.

enum class Mode : int { kKeys = 0, kValues = 1, kItems = 2 };

// Positions it on the first entry of [start, stop) in the direction of travel.
void position(vmstore::Iterator& it, const std::optional<std::string>& start,
              const std::optional<std::string>& stop, bool reverse) {
  if (!reverse) {
    if (start) {
      it.seek(*start);
    } else {
      it.seekToFirst();
    }
    return;
  }
  if (stop) {
    it.seekForPrev(*stop);
    if (it.valid() && it.key() == *stop) it.prev();  // stop is exclusive
  } else {
    it.seekToLast();
  }
}

// True while the iterator's key lies inside the range (checked on the side it travels to).
bool inRange(const vmstore::Iterator& it, const std::optional<std::string>& start,
             const std::optional<std::string>& stop, bool reverse) {
  if (!it.valid()) return false;
  if (reverse) return !start || it.key() >= std::string_view(*start);
  return !stop || it.key() < std::string_view(*stop);
}

class Cursor {
 public:
  Cursor(std::shared_ptr<TreeState> tree, std::optional<std::string> start, std::optional<std::string> stop,
         bool reverse, Mode mode)
      : tree_(std::move(tree)), start_(std::move(start)), stop_(std::move(stop)), reverse_(reverse), mode_(mode) {}

  // Up to n more entries (keys, values or (key, value) tuples); fewer only at the end.
  nb::list next(size_t n) {
    nb::list out;
    if (done_ || n == 0) return out;
    tree_->checkUsable();
    arena_.clear();
    sizes_.clear();
    Status st;
    tree_->shared->run([&] {
      std::lock_guard lock(*mutex_);  // one Python generator drives a cursor; be safe anyway
      if (!it_) {
        it_.emplace(tree_->tree->newIterator());
        position(*it_, start_, stop_, reverse_);
      }
      size_t count = 0;
      for (; count < n && inRange(*it_, start_, stop_, reverse_); count++) {
        if (mode_ != Mode::kValues) append(it_->key());
        if (mode_ != Mode::kKeys) append(it_->value());
        if (reverse_) {
          it_->prev();
        } else {
          it_->next();
        }
      }
      if (count < n) {
        done_ = true;
        st = it_->status();
      }
    });
    size_t off = 0;
    size_t per = mode_ == Mode::kItems ? 2 : 1;
    for (size_t i = 0; i < sizes_.size(); i += per) {
      nb::bytes first = toBytes(std::string_view(arena_).substr(off, sizes_[i]));
      off += sizes_[i];
      if (per == 1) {
        out.append(first);
      } else {
        nb::bytes second = toBytes(std::string_view(arena_).substr(off, sizes_[i + 1]));
        off += sizes_[i + 1];
        out.append(nb::make_tuple(first, second));
      }
    }
    arena_.clear();
    if (arena_.capacity() > (1u << 20)) arena_.shrink_to_fit();  // a batch of large values
    if (!st.ok()) raiseStatus(st);
    return out;
  }

 private:
  void append(std::string_view s) {
    arena_.append(s);
    sizes_.push_back(s.size());
  }

  std::shared_ptr<TreeState> tree_;
  std::optional<std::string> start_, stop_;
  bool reverse_;
  Mode mode_;
  std::unique_ptr<std::mutex> mutex_ = std::make_unique<std::mutex>();
  std::optional<vmstore::Iterator> it_;  // destroyed before tree_ (declared after it)
  bool done_ = false;
  std::string arena_;          // the batch's bytes, copied out with the GIL released
  std::vector<size_t> sizes_;  // the length of each piece in arena_
};

// ----------------------------------------------------------------------------------------
// PyModify: a Python modify() function as the engine's update function (Tree::update,
// Transaction::update). fn(value or None) returns bytes-like (stored), None (deleted) or
// KEEP (left). The engine calls it with the GIL released and the key's lock held: it
// takes the GIL, marks this thread as running a modify() of the database (so that its
// calls back into the database raise instead of deadlocking), and keeps what fn raised
// for result(), which runs after the engine call with the GIL held.
class PyModify {
 public:
  PyModify(nb::handle fn, const Shared* db) : fn_(fn), db_(db) {}

  vmstore::Change operator()(std::optional<std::string_view> current) {
    nb::gil_scoped_acquire gil;
    stored_.reset();
    returned_.reset();
    raised_.reset();
    const Shared* outer = modifying;
    modifying = db_;
    struct Restore {
      const Shared* outer;
      ~Restore() { modifying = outer; }
    } restore{outer};
    try {
      seen_ = current ? nb::object(toBytes(*current)) : nb::none();
      returned_ = fn_(*seen_);
      if (returned_->is(keepMarker)) return vmstore::Change::keep();
      if (returned_->is_none()) return vmstore::Change::del();
      stored_.emplace(*returned_, "the value a modify() function returns");
      return vmstore::Change::put(stored_->view());
    } catch (nb::python_error& e) {
      raised_.emplace(std::move(e));
      return vmstore::Change::abort(Status::InvalidArgument("the function raised"));
    }
  }

  // The engine call's status st (of tree `tree`) as Python sees it: what fn raised, a
  // dropped tree's ClosedError, the status's exception, or the value after the call
  // (bytes or None).
  nb::object result(const Status& st, const std::string& tree) {
    if (raised_) throw std::move(*raised_);
    if (st.isNotFound()) raiseClosed("tree '" + tree + "' was dropped");
    if (!st.ok()) raiseStatus(st);
    if (!returned_ || returned_->is(keepMarker)) return seen_ ? *seen_ : nb::none();
    if (returned_->is_none()) return nb::none();
    if (PyBytes_CheckExact(returned_->ptr())) return *returned_;
    return toBytes(stored_->view());
  }

 private:
  nb::handle fn_;
  const Shared* db_;
  // What the last call of fn saw and returned: released with the GIL held, after the
  // engine call.
  std::optional<nb::object> seen_, returned_;
  std::optional<BytesArg> stored_;  // returned's bytes, pinned until the engine copied them
  std::optional<nb::python_error> raised_;
};

// ----------------------------------------------------------------------------------------
// TreeCore

class TreeCore {
 public:
  explicit TreeCore(std::shared_ptr<TreeState> state) : s_(std::move(state)) {}

  // The value, or nullopt when the key is absent.
  std::optional<nb::bytes> lookup(nb::handle key) {
    s_->checkUsable();
    BytesArg k(key, "key");
    // A value of up to a page: one copy into the stack, one into the bytes; a larger one
    // is read again into a string.
    char buf[vmstore::kPageSize];
    size_t vlen = 0;
    Status st;
    std::string big;
    s_->shared->run([&] {
      st = s_->tree->get(k.view(), std::as_writable_bytes(std::span(buf)), &vlen);
      if (st.ok() && vlen > sizeof buf) st = s_->tree->get(k.view(), &big);
    });
    if (st.isNotFound()) return std::nullopt;
    if (!st.ok()) raiseStatus(st);
    if (vlen > sizeof buf) return toBytes(big);
    return toBytes(std::string_view(buf, vlen));
  }

  // The value of each key (dflt where absent), looked up together (Tree::getMany: cache
  // misses overlapping, page misses in flight together), without the GIL.
  nb::list getMany(nb::handle keys, nb::handle dflt) {
    s_->checkUsable();
    PyObject* seq = PySequence_Fast(keys.ptr(), "keys must be an iterable of bytes");
    if (seq == nullptr) throw nb::python_error();
    nb::object owner = nb::steal(seq);
    size_t n = static_cast<size_t>(PySequence_Fast_GET_SIZE(seq));
    std::vector<std::unique_ptr<BytesArg>> args;
    std::vector<std::string_view> views;
    args.reserve(n);
    views.reserve(n);
    for (size_t i = 0; i < n; i++) {
      args.push_back(std::make_unique<BytesArg>(nb::handle(PySequence_Fast_GET_ITEM(seq, i)), "key"));
      views.push_back(args.back()->view());
    }
    std::vector<std::string> values;
    std::vector<Status> statuses;
    Status st;
    s_->shared->run([&] { st = s_->tree->getMany(views, &values, &statuses); });
    if (st.isNotFound()) raiseClosed("tree '" + s_->name + "' was dropped");
    if (!st.ok()) raiseStatus(st);
    nb::list out;
    for (size_t i = 0; i < n; i++) {
      if (statuses[i].isNotFound()) {
        out.append(dflt);
      } else if (!statuses[i].ok()) {
        raiseStatus(statuses[i]);
      } else {
        out.append(toBytes(values[i]));
      }
    }
    return out;
  }

  nb::bytes getitem(nb::handle key) {
    std::optional<nb::bytes> v = lookup(key);
    if (!v) raiseKeyError(key);
    return *v;
  }

  nb::object get(nb::handle key, nb::handle dflt) {
    std::optional<nb::bytes> v = lookup(key);
    if (!v) return nb::borrow(dflt);
    return *v;
  }

  // The value in place as a read-only memoryview (zero-copy), or None when absent. The
  // memoryview's owner holds the vmstore::ValueView: the value is released when the
  // memoryview (and every view derived from it) is released or collected.
  nb::object view(nb::handle key) {
    s_->checkUsable();
    BytesArg k(key, "key");
    // The owner keeps the database alive while the value is held.
    struct Held {
      std::shared_ptr<Shared> shared;
      vmstore::ValueView view;
      ~Held() {
        view.release();
        if (shared) shared->views.fetch_sub(1);  // unset when the call never ran (closed)
      }
    };
    auto held = std::make_unique<Held>();
    Status st;
    s_->shared->run([&] {
      s_->shared->views.fetch_add(1);  // under the gate: close() cannot miss it
      held->shared = s_->shared;
      st = s_->tree->getView(k.view(), &held->view);
    });
    if (!st.ok()) {
      held.reset();
      if (st.isNotFound()) return nb::none();
      raiseStatus(st);
    }
    const auto* data = reinterpret_cast<const uint8_t*>(held->view.data());
    size_t shape[1] = {held->view.size()};
    nb::capsule owner(held.release(), [](void* p) noexcept { delete static_cast<Held*>(p); });
    return nb::cast(nb::ndarray<nb::memview, const uint8_t, nb::ndim<1>>(data, 1, shape, owner));
  }

  bool contains(nb::handle key) {
    s_->checkUsable();
    BytesArg k(key, "key");
    size_t vlen = 0;
    Status st;
    s_->shared->run([&] { st = s_->tree->get(k.view(), std::span<std::byte>(), &vlen); });
    if (st.isNotFound()) return false;
    if (!st.ok()) raiseStatus(st);
    return true;
  }

  void setitem(nb::handle key, nb::handle value) {
    s_->checkUsable();
    s_->shared->refuseWriteInTxn("tree[key] = value");
    BytesArg k(key, "key");
    BytesArg v(value, "value");
    Status st;
    s_->shared->run([&] { st = s_->tree->put(k.view(), v.view()); });
    if (st.isNotFound()) raiseClosed("tree '" + s_->name + "' was dropped");
    if (!st.ok()) raiseStatus(st);
  }

  // True when the key was there.
  bool remove(nb::handle key) {
    s_->checkUsable();
    s_->shared->refuseWriteInTxn("deleting a key of a tree");
    BytesArg k(key, "key");
    Status st;
    s_->shared->run([&] { st = s_->tree->del(k.view()); });
    if (st.isNotFound()) return false;
    if (!st.ok()) raiseStatus(st);
    return true;
  }

  void delitem(nb::handle key) {
    if (!remove(key)) raiseKeyError(key);
  }

  Cursor cursor(nb::handle start, nb::handle stop, bool reverse, int mode) {
    s_->checkUsable();
    if (mode < 0 || mode > 2) throw nb::value_error("mode must be 0 (keys), 1 (values) or 2 (items)");
    return Cursor(s_, optionalBound(start, "start"), optionalBound(stop, "stop"), reverse, static_cast<Mode>(mode));
  }

  // The number of keys in [start, stop), counted without building Python objects.
  size_t count(nb::handle start, nb::handle stop) {
    s_->checkUsable();
    std::optional<std::string> lo = optionalBound(start, "start"), hi = optionalBound(stop, "stop");
    size_t n = 0;
    Status st;
    s_->shared->run([&] {
      vmstore::Iterator it = s_->tree->newIterator();
      for (position(it, lo, hi, false); inRange(it, lo, hi, false); it.next()) n++;
      st = it.status();
    });
    if (!st.ok()) raiseStatus(st);
    return n;
  }

  // The first (or last) (key, value) pair, or None for an empty tree.
  nb::object edge(bool last) {
    s_->checkUsable();
    std::string key, value;
    bool found = false;
    Status st;
    s_->shared->run([&] {
      vmstore::Iterator it = s_->tree->newIterator();
      if (last) {
        it.seekToLast();
      } else {
        it.seekToFirst();
      }
      found = it.valid();
      if (found) {
        key = it.key();
        value = it.value();
      }
      st = it.status();
    });
    if (!st.ok()) raiseStatus(st);
    if (!found) return nb::none();
    return nb::make_tuple(toBytes(key), toBytes(value));
  }

  // Deletes every key, a chunk at a time, without the GIL.
  void clear() {
    s_->checkUsable();
    s_->shared->refuseWriteInTxn("Tree.clear");
    Status st;
    s_->shared->run([&] {
      std::vector<std::string> keys;
      for (;;) {
        keys.clear();
        vmstore::Iterator it = s_->tree->newIterator();
        for (it.seekToFirst(); it.valid() && keys.size() < 512; it.next()) keys.emplace_back(it.key());
        st = it.status();
        if (!st.ok() || keys.empty()) return;
        for (const std::string& k : keys) {
          st = s_->tree->del(k);
          if (!st.ok() && !st.isNotFound()) return;  // another thread may delete it first
        }
        st = Status::OK();
      }
    });
    if (!st.ok()) raiseStatus(st);
  }

  // Tree::update with a Python function: fn(value or None) returns bytes-like (stored),
  // None (deleted) or KEEP (left). Returns the value after the call (bytes or None).
  nb::object modify(nb::handle key, nb::handle fn) {
    s_->checkUsable();
    s_->shared->refuseWriteInTxn("Tree.modify");
    BytesArg k(key, "key");
    if (!PyCallable_Check(fn.ptr())) throw nb::type_error("modify() needs a callable");
    PyModify m(fn, s_->shared.get());
    Status st;
    s_->shared->run([&] { st = s_->tree->update(k.view(), [&](std::optional<std::string_view> cur) { return m(cur); }); });
    return m.result(st, s_->name);
  }

  bool dropped() const { return s_->isDropped(); }
  nb::bytes name() const { return toBytes(s_->name); }
  const std::shared_ptr<TreeState>& state() const { return s_; }

 private:
  std::shared_ptr<TreeState> s_;
};

// ----------------------------------------------------------------------------------------
// BatchCore: the operations of one atomic batch, held here until write().

class BatchCore {
 public:
  explicit BatchCore(std::shared_ptr<Shared> shared) : s_(std::move(shared)) {}

  void put(TreeCore& tree, nb::handle key, nb::handle value) {
    const std::shared_ptr<TreeState>& state = admit(tree);
    BytesArg k(key, "key");
    BytesArg v(value, "value");
    Status st = batch_.put(state->tree, k.view(), v.view());
    if (!st.ok()) raiseStatus(st);
    remember(state);
  }

  void del(TreeCore& tree, nb::handle key) {
    const std::shared_ptr<TreeState>& state = admit(tree);
    BytesArg k(key, "key");
    Status st = batch_.del(state->tree, k.view());
    if (!st.ok()) raiseStatus(st);
    remember(state);
  }

  void clear() {
    checkIdle();
    batch_.clear();
    trees_.clear();
    seen_.clear();
  }

  size_t count() const { return batch_.count(); }

  // Applies every operation, all or nothing, then empties the batch; on an error the
  // batch keeps its operations and nothing of it is stored. wait=false: returns the
  // commit point without waiting for durability (Database::writeNoWait); else 0.
  uint64_t write(bool wait) {
    checkIdle();
    s_->refuseWriteInTxn("Batch.write");
    for (const auto& t : trees_) {
      if (t->isDropped()) {
        raiseClosed("tree '" + t->name + "' of the batch was dropped; nothing was written");
      }
    }
    Status st;
    uint64_t commit = 0;
    writing_ = true;  // only read and written with the GIL held
    try {
      s_->run([&] {
        if (batch_.count() == 0) return;
        st = wait ? s_->db->write(batch_) : s_->db->writeNoWait(batch_, &commit);
      });
    } catch (...) {
      writing_ = false;
      throw;
    }
    writing_ = false;
    // NotFound: a tree was dropped after the check above; the engine undid the batch.
    if (st.isNotFound()) raiseClosed("a tree of the batch was dropped; nothing was written");
    if (!st.ok()) raiseStatus(st);
    clear();
    return commit;
  }

 private:
  // The tree's state when an operation on it may be added; raises otherwise.
  const std::shared_ptr<TreeState>& admit(TreeCore& tree) {
    checkIdle();
    const std::shared_ptr<TreeState>& state = tree.state();
    if (state->shared != s_) {
      raiseError(kInvalid, EINVAL,
                 "tree '" + state->name + "' belongs to another database than the batch's ('" + s_->path + "')");
    }
    if (s_->closed.load(std::memory_order_acquire)) raiseClosed("database '" + s_->path + "' is closed");
    state->checkUsable();
    return state;
  }

  // Keeps the tree's state while the batch refers to it (once per tree).
  void remember(const std::shared_ptr<TreeState>& state) {
    if (!trees_.empty() && trees_.back() == state) return;
    if (seen_.insert(state.get()).second) trees_.push_back(state);
  }

  void checkIdle() const {
    if (writing_) throw std::runtime_error("the batch is being written by another thread");
  }

  std::shared_ptr<Shared> s_;
  vmstore::WriteBatch batch_;
  std::vector<std::shared_ptr<TreeState>> trees_;  // the distinct trees of batch_
  std::unordered_set<const TreeState*> seen_;
  bool writing_ = false;
};

// ----------------------------------------------------------------------------------------
// TxnCore: a vmstore::Transaction (see the contract at the top of this file).

class TxnCore {
 public:
  explicit TxnCore(std::shared_ptr<Shared> shared)
      : s_(std::move(shared)), t_(std::make_shared<TxnState>(s_->db.get())) {}
  TxnCore(TxnCore&&) noexcept = default;
  TxnCore(const TxnCore&) = delete;
  TxnCore& operator=(const TxnCore&) = delete;
  ~TxnCore() { release(); }

  void put(TreeCore& tree, nb::handle key, nb::handle value) {
    const TreeState& ts = admit(tree);
    BytesArg k(key, "key");
    BytesArg v(value, "value");
    Status st;
    call(Kind::kWrite, [&] { st = t_->txn.put(ts.tree, k.view(), v.view()); });
    if (st.isNotFound()) raiseClosed("tree '" + ts.name + "' was dropped");
    if (!st.ok()) raiseStatus(st);
  }

  void del(TreeCore& tree, nb::handle key) {
    const TreeState& ts = admit(tree);
    BytesArg k(key, "key");
    Status st;
    call(Kind::kWrite, [&] { st = t_->txn.del(ts.tree, k.view()); });
    if (st.isNotFound()) {
      ts.checkUsable();  // a dropped tree answers NotFound too
      raiseKeyError(key);
    }
    if (!st.ok()) raiseStatus(st);
  }

  nb::object get(TreeCore& tree, nb::handle key, nb::handle dflt) {
    const TreeState& ts = admit(tree);
    BytesArg k(key, "key");
    // As TreeCore::lookup: up to a page through the stack, a larger value again into a string.
    char buf[vmstore::kPageSize];
    size_t vlen = 0;
    Status st;
    std::string big;
    call(Kind::kWrite, [&] {
      st = t_->txn.get(ts.tree, k.view(), std::as_writable_bytes(std::span(buf)), &vlen);
      if (st.ok() && vlen > sizeof buf) st = t_->txn.get(ts.tree, k.view(), &big);
    });
    if (st.isNotFound()) {
      ts.checkUsable();
      return nb::borrow(dflt);
    }
    if (!st.ok()) raiseStatus(st);
    if (vlen > sizeof buf) return toBytes(big);
    return toBytes(std::string_view(buf, vlen));
  }

  // Transaction::update with a Python function, as TreeCore::modify.
  nb::object modify(TreeCore& tree, nb::handle key, nb::handle fn) {
    const TreeState& ts = admit(tree);
    BytesArg k(key, "key");
    if (!PyCallable_Check(fn.ptr())) throw nb::type_error("modify() needs a callable");
    PyModify m(fn, s_.get());
    Status st;
    call(Kind::kWrite, [&] { st = t_->txn.update(ts.tree, k.view(), [&](std::optional<std::string_view> cur) { return m(cur); }); });
    return m.result(st, ts.name);
  }

  // Commits and ends the transaction (a failed commit ends it too, undone). wait=false:
  // the commit point for Database::waitDurable (0 when nothing was logged); else 0.
  uint64_t commit(bool wait) {
    Status st;
    uint64_t point = 0;
    call(Kind::kCommit, [&] { st = wait ? t_->txn.commit() : t_->txn.commitNoWait(&point); });
    if (!st.ok()) raiseStatus(st);
    return point;
  }

  void abort() {
    Status st;
    call(Kind::kAbort, [&] { st = t_->txn.abort(); });
    if (!st.ok()) raiseStatus(st);
  }

  size_t count() {
    size_t n = 0;
    call(Kind::kCount, [&] { n = t_->txn.count(); });
    return n;
  }

 private:
  enum class Kind { kWrite, kCommit, kAbort, kCount };  // kWrite: put, delete, get, modify
  enum class Refusal { kNone, kClosed, kAbortedByClose, kSecondHere };

  // The tree's state when this transaction may use it; raises otherwise.
  const TreeState& admit(TreeCore& tree) {
    const std::shared_ptr<TreeState>& state = tree.state();
    if (state->shared != s_) {
      raiseError(kInvalid, EINVAL,
                 "tree '" + state->name + "' belongs to another database than the transaction's ('" + s_->path + "')");
    }
    state->checkUsable();  // a closed database is call()'s to report (it may have aborted this)
    return *state;
  }

  // Runs fn (an engine call on t_->txn) with the GIL released and t_->call held, after
  // the checks of the contract: one thread at a time, at most one open transaction per
  // thread (a write call moves the owner here), not inside a modify() function of this
  // database, not after close.
  template <class Fn>
  void call(Kind kind, Fn&& fn) {
    if (modifying == s_.get()) raiseReentered();
    if (busy_) throw std::runtime_error("the transaction is in use by another thread (one thread at a time)");
    if (kind == Kind::kWrite) claim();
    busy_ = true;  // only read and written with the GIL held
    Refusal refused;
    try {
      nb::gil_scoped_release nogil;
      refused = callUnlocked(kind, fn);
    } catch (...) {
      busy_ = false;
      throw;
    }
    busy_ = false;
    switch (refused) {
      case Refusal::kNone: return;
      case Refusal::kClosed: raiseClosed("database '" + s_->path + "' is closed");
      case Refusal::kAbortedByClose:
        raiseClosed("database '" + s_->path + "' was closed, which aborted this transaction");
      case Refusal::kSecondHere: throw std::runtime_error(secondHere());
    }
  }

  template <class Fn>
  Refusal callUnlocked(Kind kind, Fn& fn) {
    std::lock_guard lock(t_->call);
    if (t_->abortedByClose) {
      if (kind == Kind::kCount) return Refusal::kNone;  // nothing written; the flag stays
      t_->abortedByClose = false;
      return kind == Kind::kAbort ? Refusal::kNone : Refusal::kAbortedByClose;
    }
    const bool open = s_->isOpen(*t_);
    if (kind == Kind::kAbort || kind == Kind::kCount) {
      if (!open) return Refusal::kNone;  // an ended transaction: nothing to undo or count
      fn();
      if (kind == Kind::kAbort) s_->forget(t_);
      return Refusal::kNone;
    }
    std::shared_lock gate(s_->gate);
    if (s_->closed) return Refusal::kClosed;
    if (kind == Kind::kCommit) {
      if (!open) return Refusal::kNone;  // nothing begun: commit point 0
      fn();
      s_->forget(t_);  // ended, committed or (when the commit failed) undone
      return Refusal::kNone;
    }
    if (!open) {
      switch (s_->begin(t_)) {  // it begins with this call
        case Shared::Begun::kOk: break;
        case Shared::Begun::kClosing: return Refusal::kClosed;
        case Shared::Begun::kSecondHere: return Refusal::kSecondHere;
      }
    }
    fn();
    return Refusal::kNone;
  }

  // A write call on an open transaction makes the calling thread its owner (the engine
  // moves its record of it here too), unless this thread owns another one of the
  // database. GIL held; no call on it is in flight (busy_ is false).
  void claim() {
    std::lock_guard lock(s_->txnMutex);
    const ThreadMark& me = thisThread();
    if (!t_->owner || t_->owner == me) return;
    if (s_->openHereLocked(t_.get())) throw std::runtime_error(secondHere());
    t_->owner = me;
  }

  std::string secondHere() const {
    return "this thread already has an open transaction of database '" + s_->path +
           "': commit or abort it first (a second one could wait for the first one's keys forever)";
  }

  // Collected: an open transaction is aborted here, on whatever thread collects it.
  // GIL held (as nanobind destroys objects); released for the abort when it can be.
  void release() {
    if (!t_ || !s_->isOpen(*t_)) return;  // moved from, or not open
    if (PyGILState_Check() && !interpreterFinalizing()) {
      nb::gil_scoped_release nogil;
      s_->abortTxn(t_, false);
    } else {
      s_->abortTxn(t_, false);
    }
  }

  std::shared_ptr<Shared> s_;   // declared first: outlives t_
  std::shared_ptr<TxnState> t_;
  bool busy_ = false;
};

// ----------------------------------------------------------------------------------------
// DbCore

class DbCore {
 public:
  static DbCore open(nb::bytes path, const std::string& config) {
    auto shared = std::make_shared<Shared>();
    shared->path = std::string(path.c_str(), path.size());
    Status st;
    {
      nb::gil_scoped_release nogil;
      st = vmstore::Database::open(shared->path, std::string_view(config), &shared->db);
    }
    if (!st.ok()) raiseStatus(st);
    return DbCore(std::move(shared));
  }

  // Aborts every open transaction of the database (see the contract), then closes it.
  void close() {
    if (modifying == s_.get()) raiseReentered();
    Status st;
    {
      nb::gil_scoped_release nogil;
      auto viewsHeld = [&] {
        int64_t held = s_->views.load();
        return held == 0 ? Status::OK()
                         : Status::Busy("close: " + std::to_string(held) +
                                        " value(s) from Tree.view() are still held; release the memoryviews first");
      };
      if (s_->closed) return;
      st = viewsHeld();  // before aborting anything, when it is known already
      if (st.ok()) s_->abortAllForClose();
      if (st.ok()) {
        std::unique_lock lock(s_->gate);  // waits for the calls in flight
        if (s_->closed) return;
        st = viewsHeld();
        if (st.ok()) {
          s_->closed = true;
          st = s_->db->close();
        }
      }
      if (!s_->closed) {
        std::lock_guard lock(s_->txnMutex);
        s_->closing = false;  // still open: transactions may begin again
      }
    }
    if (!st.ok()) raiseStatus(st);
  }

  bool closed() {
    if (modifying == s_.get()) return false;  // its gate is held by the modify() running
    nb::gil_scoped_release nogil;
    std::shared_lock lock(s_->gate);
    return s_->closed;
  }

  void sync() {
    s_->refuseInTxn("sync");
    Status st;
    s_->run([&] { st = s_->db->sync(); });
    if (!st.ok()) raiseStatus(st);
  }

  void waitDurable(uint64_t commit) {
    Status st;
    s_->run([&] { st = s_->db->waitDurable(commit); });
    if (!st.ok()) raiseStatus(st);
  }

  // A new TreeCore for the tree (the Python Database keeps one per name), or None when
  // the tree is missing and create is false.
  // On a thread with an open transaction: an existing tree only (creating one is a
  // plain write: RuntimeError, the binding's documented error for those).
  std::optional<TreeCore> tree(nb::bytes name, bool create) {
    std::string n(name.c_str(), name.size());
    const bool inTxn = s_->openHere();
    vmstore::Tree* tree = nullptr;
    Status st;
    s_->run([&] { st = s_->db->openTree(n, create && !inTxn, &tree); });
    if (st.isNotFound()) {
      if (inTxn && create) {
        throw std::runtime_error("creating tree '" + n + "': this thread has an open transaction of database '" +
                                 s_->path + "'; create the tree before the transaction begins");
      }
      return std::nullopt;
    }
    if (!st.ok()) raiseStatus(st);
    auto state = std::make_shared<TreeState>();
    state->shared = s_;
    state->tree = tree;
    state->name = std::move(n);
    state->dropped = s_->droppedFlag(tree);
    return TreeCore(std::move(state));
  }

  // A new transaction of this database (begun by its first call); ClosedError after close().
  TxnCore transaction() {
    if (s_->closed.load(std::memory_order_acquire)) raiseClosed("database '" + s_->path + "' is closed");
    return TxnCore(s_);
  }

  // An empty batch of this database; ClosedError after close().
  BatchCore batch() {
    if (s_->closed.load(std::memory_order_acquire)) raiseClosed("database '" + s_->path + "' is closed");
    return BatchCore(s_);
  }

  // False when there is no such tree.
  // Every TreeCore of the dropped tree raises ClosedError afterwards.
  bool dropTree(nb::bytes name) {
    s_->refuseInTxn("drop_tree");
    std::string n(name.c_str(), name.size());
    Status st;
    s_->run([&] {
      vmstore::Tree* handle = nullptr;
      st = s_->db->openTree(n, false, &handle);  // the handle the drop retires
      if (!st.ok()) return;
      st = s_->db->dropTree(n);
      if (st.ok()) s_->markDropped(handle);
    });
    if (st.isNotFound()) return false;
    if (!st.ok()) raiseStatus(st);
    return true;
  }

  nb::list trees() {
    std::vector<std::string> names;
    Status st;
    s_->run([&] { st = s_->db->listTrees(&names); });
    if (!st.ok()) raiseStatus(st);
    nb::list out;
    for (const std::string& n : names) out.append(toBytes(n));
    return out;
  }

  nb::dict stats() {
    vmstore::Stats s;
    s_->run([&] { s = s_->db->stats(); });
    nb::dict d;
    d["hits"] = s.hits;
    d["misses"] = s.misses;
    d["evictions"] = s.evictions;
    d["pages_written"] = s.pages_written;
    d["restarts"] = s.restarts;
    d["release_calls"] = s.release_calls;
    d["read_ahead_pages"] = s.read_ahead_pages;
    d["huge_page_bytes"] = s.huge_page_bytes;
    d["huge_pages_in_memory"] = s.huge_pages_in_memory;
    d["victim_ns"] = s.victim_ns;
    d["victims_kept"] = s.victims_kept;
    d["policy_bytes"] = s.policy_bytes;
    d["resident_set_bytes"] = s.resident_set_bytes;
    d["tlb_shootdowns"] = s.tlb_shootdowns;
    nb::list tiers;
    for (uint64_t t = 0; t < s.tier_count; t++) {
      nb::dict tier;
      tier["node"] = s.tier_node[t];
      tier["budget_pages"] = s.tier_budget_pages[t];
      tier["pages"] = s.tier_pages[t];
      tiers.append(tier);
    }
    d["tiers"] = tiers;
    d["demoted_pages"] = s.demoted_pages;
    d["promoted_pages"] = s.promoted_pages;
    d["migrate_failures"] = s.migrate_failures;
    d["migrate_calls"] = s.migrate_calls;
    d["migrate_ns"] = s.migrate_ns;
    d["migrate_tlb_shootdowns"] = s.migrate_tlb_shootdowns;
    d["pool_pages"] = s.pool_pages;
    d["resident_pages"] = s.resident_pages;
    d["page_count"] = s.page_count;
    d["free_pages"] = s.free_pages;
    d["file_bytes"] = s.file_bytes;
    d["trees"] = s.trees;
    d["log_bytes"] = s.log_bytes;
    d["log_appended_bytes"] = s.log_appended_bytes;
    d["log_file_bytes"] = s.log_file_bytes;
    d["log_flushes"] = s.log_flushes;
    d["checkpoints"] = s.checkpoints;
    d["checkpoint_cuts"] = s.checkpoint_cuts;
    d["checkpoint_cut_wait_us"] = s.checkpoint_cut_wait_us;
    d["checkpoint_cut_wait_max_us"] = s.checkpoint_cut_wait_max_us;
    d["log_full_waits"] = s.log_full_waits;
    d["recovered_records"] = s.recovered_records;
    d["recovered_operations"] = s.recovered_operations;
    d["recovered_bytes"] = s.recovered_bytes;
    d["recovered_checkpoint"] = s.recovered_checkpoint;
    d["recovery_us"] = s.recovery_us;
    return d;
  }

  // Raises CorruptionError (with .problems, one line per problem) when damage is found.
  void check() {
    s_->refuseInTxn("check");
    std::vector<std::string> problems;
    Status st;
    s_->run([&] { st = s_->db->check(&problems); });
    if (st.ok()) return;
    if (st.code() != Status::Code::kCorruption) raiseStatus(st);
    nb::list lines;
    for (const std::string& p : problems) lines.append(nb::str(p.c_str(), p.size()));
    nb::object err = statusError(st);
    err.attr("problems") = nb::tuple(lines);
    raise(err);
  }

  const std::string& path() const { return s_->path; }

 private:
  explicit DbCore(std::shared_ptr<Shared> shared) : s_(std::move(shared)) {}
  std::shared_ptr<Shared> s_;
};

void setErrorTypes(nb::handle invalid, nb::handle io, nb::handle corruption, nb::handle nospace, nb::handle toobig,
                   nb::handle nomem, nb::handle busy, nb::handle closed) {
  nb::handle all[kKinds] = {invalid, io, corruption, nospace, toobig, nomem, busy, closed};
  for (int i = 0; i < kKinds; i++) {
    if (!PyType_Check(all[i].ptr()) || !PyType_IsSubtype(reinterpret_cast<PyTypeObject*>(all[i].ptr()),
                                                        reinterpret_cast<PyTypeObject*>(PyExc_OSError))) {
      throw nb::type_error("error types must be subclasses of OSError");
    }
    Py_XDECREF(errorTypes[i]);
    errorTypes[i] = all[i].inc_ref().ptr();
  }
}

}  // namespace

NB_MODULE(_core, m) {
  m.doc() = "vmstore's C++ core: use the vmstore package, not this module.";
  // Handles still referenced at interpreter exit are normal for a database binding (the
  // Python layer closes open databases at exit); nanobind's leak report would be noise.
  nb::set_leak_warnings(false);

  m.attr("MAX_KEY_SIZE") = vmstore::kMaxKeySize;
  m.attr("MAX_VALUE_SIZE") = vmstore::kMaxValueSize;
  m.attr("MAX_TREE_NAME_SIZE") = vmstore::kMaxTreeNameSize;
  nb::class_<KeepMarker>(m, "_Keep", "The type of vmstore.KEEP.")
      .def("__repr__", [](const KeepMarker&) { return "vmstore.KEEP"; })
      .def("__reduce__", [](const KeepMarker&) { return "KEEP"; });
  keepMarker = nb::cast(KeepMarker{}).release().ptr();
  m.attr("KEEP") = nb::handle(keepMarker);

  m.def("_set_error_types", &setErrorTypes, "invalid"_a, "io"_a, "corruption"_a, "nospace"_a, "toobig"_a,
        "nomem"_a, "busy"_a, "closed"_a, "Registers the exception classes raised for each kind of error.");
  m.def("open", &DbCore::open, "path"_a, "config"_a,
        "Opens the database in directory path (bytes) with a C API config string.");

  nb::class_<Cursor>(m, "Cursor", "One pass over a key range of a tree.")
      .def("next", &Cursor::next, "n"_a, "Up to n more entries; fewer only at the end.");

  nb::class_<TreeCore>(m, "TreeCore", "A tree handle; see vmstore.Tree.")
      .def("getitem", &TreeCore::getitem, "key"_a, "The value; KeyError when absent.")
      .def("get", &TreeCore::get, "key"_a, "default"_a.none() = nb::none(), "The value, or default when absent.")
      .def("contains", &TreeCore::contains, "key"_a, "True when the key is present.")
      .def("view", &TreeCore::view, "key"_a, "The value in place as a read-only memoryview, or None.")
      .def("get_many", &TreeCore::getMany, "keys"_a, "default"_a.none() = nb::none(),
           "The value of each key (default where absent), looked up together: their cache misses overlap, and their reads from storage are in flight together.")
      .def("setitem", &TreeCore::setitem, "key"_a, "value"_a, "Inserts or replaces.")
      .def("remove", &TreeCore::remove, "key"_a, "Deletes; False when the key was absent.")
      .def("delitem", &TreeCore::delitem, "key"_a, "Deletes; KeyError when absent.")
      .def("modify", &TreeCore::modify, "key"_a, "fn"_a,
           "Atomic read-modify-write: fn(value or None) -> bytes, None (delete) or KEEP.")
      .def("cursor", &TreeCore::cursor, "start"_a.none(), "stop"_a.none(), "reverse"_a, "mode"_a,
           "A cursor over [start, stop); mode 0 keys, 1 values, 2 items.")
      .def("count", &TreeCore::count, "start"_a.none(), "stop"_a.none(), "The number of keys in [start, stop).")
      .def("edge", &TreeCore::edge, "last"_a, "The first or last (key, value), or None.")
      .def("clear", &TreeCore::clear, "Deletes every key.")
      .def_prop_ro("dropped", &TreeCore::dropped, "True once the tree was dropped.")
      .def_prop_ro("name", &TreeCore::name, "The tree's name (bytes).");

  nb::class_<BatchCore>(m, "BatchCore", "The operations of an atomic batch; see vmstore.Batch.")
      // None reaches BytesArg, which names the argument in its TypeError.
      .def("put", &BatchCore::put, "tree"_a, "key"_a.none(), "value"_a.none(),
           "Adds an insert-or-replace, checked now.")
      .def("delete", &BatchCore::del, "tree"_a, "key"_a.none(),
           "Adds a delete (an absent key is fine), checked now.")
      .def("clear", &BatchCore::clear, "Drops every operation.")
      .def("__len__", &BatchCore::count, "The number of operations.")
      .def("write", &BatchCore::write, "wait"_a = true,
           "Applies the operations all or nothing, then empties the batch; wait=False returns "
           "the commit point without waiting for durability.");

  nb::class_<TxnCore>(m, "TxnCore", "A transaction; see vmstore.Transaction.")
      .def("put", &TxnCore::put, "tree"_a, "key"_a.none(), "value"_a.none(), "Inserts or replaces, at once.")
      .def("delete", &TxnCore::del, "tree"_a, "key"_a.none(), "Deletes, at once; KeyError when absent.")
      .def("get", &TxnCore::get, "tree"_a, "key"_a.none(), "default"_a.none() = nb::none(),
           "The value (the key locked), or default when absent.")
      .def("modify", &TxnCore::modify, "tree"_a, "key"_a.none(), "fn"_a,
           "Read-modify-write under the transaction: fn(value or None) -> bytes, None (delete) or KEEP.")
      .def("commit", &TxnCore::commit, "wait"_a = true,
           "Commits and ends the transaction; wait=False returns the commit point without waiting.")
      .def("abort", &TxnCore::abort, "Undoes every write and ends the transaction.")
      .def("__len__", &TxnCore::count, "The writes made since it began.");

  nb::class_<DbCore>(m, "DbCore", "An open database; see vmstore.Database.")
      .def("close", &DbCore::close, "Writes everything and closes; harmless when closed.")
      .def_prop_ro("closed", &DbCore::closed, "True after close().")
      .def("sync", &DbCore::sync, "Puts every write so far on stable storage.")
      .def("wait_durable", &DbCore::waitDurable, "commit"_a,
           "Returns once the write of this commit point is as durable as write() makes it.")
      .def("tree", &DbCore::tree, "name"_a, "create"_a, "A new TreeCore, or None when missing.")
      .def("batch", &DbCore::batch, "An empty BatchCore of this database.")
      .def("transaction", &DbCore::transaction, "A new TxnCore of this database.")
      .def("drop_tree", &DbCore::dropTree, "name"_a, "Drops a tree; False when there is none.")
      .def("trees", &DbCore::trees, "The tree names (bytes).")
      .def("stats", &DbCore::stats, "The engine's counters.")
      .def("check", &DbCore::check, "Verifies the database; CorruptionError with .problems on damage.")
      .def_prop_ro("path", &DbCore::path, "The directory (as given to open).");
}
