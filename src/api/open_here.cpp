#include "api/open_here.hpp"

namespace vmstore::internal {

const std::shared_ptr<OpenHere>& openHere() {
  thread_local const std::shared_ptr<OpenHere> here = [] {
    auto made = std::make_shared<OpenHere>();
    detail::tOpenHere = made.get();
    return made;
  }();
  return here;
}

}  // namespace vmstore::internal
