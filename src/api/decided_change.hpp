// decideChange: what an update's Change (vmstore/database.hpp) asks of the key's current
// value, for the two updates that apply one (Tree::update, Transaction::update); and
// callUpdateFn, how both call the caller's function.
//
// Contract
// - callUpdateFn(fn, ctx, current, &cur, &thrown): *cur = the value current points to
//   (nullopt for null), then fn(ctx, *cur). An exception fn throws is kept in *thrown
//   (rethrown by the caller once it holds nothing) and the change is a keep.
// - kNothing: write nothing. A keep, a delete of an absent key; an abort (*status is its
//   status) or a put of a value beyond the limits (*status says so, "the update
//   function's ..."). *status is left as it was otherwise.
// - kDelete: remove the key (present).
// - kPut: store *value. A value that views `current` (which ends with the read) is
//   copied into *owned first, so *value stays valid after it.
#pragma once

#include <cstdint>
#include <exception>
#include <optional>
#include <string>
#include <string_view>

#include "api/validate.hpp"
#include "btree/node.hpp"
#include "vmstore/database.hpp"

namespace vmstore::internal {

enum class Decided { kNothing, kDelete, kPut };

inline Change callUpdateFn(Tree::UpdateFn fn, void* ctx, const Bytes* current, std::optional<std::string_view>* cur,
                           std::exception_ptr* thrown) {
  if (current != nullptr) {
    cur->emplace(reinterpret_cast<const char*>(current->data()), current->size());
  } else {
    cur->reset();
  }
  try {
    return fn(ctx, *cur);
  } catch (...) {
    *thrown = std::current_exception();
    return Change::keep();
  }
}

inline Decided decideChange(const Change& change, std::optional<std::string_view> current, std::string* owned,
                            std::string_view* value, Status* status) {
  switch (change.kind()) {
    case Change::Kind::kKeep:
      return Decided::kNothing;
    case Change::Kind::kAbort:
      *status = change.status();
      return Decided::kNothing;
    case Change::Kind::kDelete:
      return current ? Decided::kDelete : Decided::kNothing;  // absent already: nothing changes
    case Change::Kind::kPut:
      break;
  }
  std::string_view v = change.value();
  if (Status bad = validateValue(v); !bad.ok()) {
    *status = Status(bad.code(), "the update function's " + bad.message());
    return Decided::kNothing;
  }
  auto at = reinterpret_cast<uintptr_t>(v.data());
  auto from = current ? reinterpret_cast<uintptr_t>(current->data()) : 0;
  if (current && !v.empty() && at >= from && at < from + current->size()) v = owned->assign(v);
  *value = v;
  return Decided::kPut;
}

}  // namespace vmstore::internal
