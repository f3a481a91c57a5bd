#include "vmstore/status.hpp"

namespace vmstore {

const char* Status::codeName(int code) {
  switch (code) {
    case 0: return "ok";
    case 1: return "not found";
    case -1: return "invalid argument";
    case -2: return "I/O error";
    case -3: return "corruption";
    case -4: return "no space";
    case -5: return "too big";
    case -6: return "out of memory";
    case -7: return "busy";
    default: return code <= -100 ? "error code of the caller" : "unknown status code";
  }
}

std::string Status::toString() const {
  std::string s = codeName(rawCode());
  if (message_) s += ": " + *message_;
  return s;
}

}  // namespace vmstore
