// guarded(fn): runs fn (returning a Status), turning the engine's exceptions into a
// Status: StorageError its own, bad_alloc NoMemory, a system_error IOError (NoMemory for
// ENOMEM), invalid_argument InvalidArgument. Anything else propagates.
#pragma once

#include <cerrno>
#include <new>
#include <stdexcept>
#include <system_error>

#include "buffer/errors.hpp"
#include "vmstore/status.hpp"

namespace vmstore::internal {

template <class Fn>
Status guarded(Fn&& fn) {
  try {
    return fn();
  } catch (const StorageError& e) {
    return e.status();
  } catch (const std::bad_alloc&) {
    return Status::NoMemory("out of memory");
  } catch (const std::system_error& e) {
    if (e.code().value() == ENOMEM) return Status::NoMemory(e.what());
    return Status::IOError(e.what());
  } catch (const std::invalid_argument& e) {  // an Options value nothing parsed (an unknown policy)
    return Status::InvalidArgument(e.what());
  }
}

}  // namespace vmstore::internal
