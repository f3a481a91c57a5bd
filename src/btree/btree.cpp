// BasicBTree over the vmcache buffer manager.
#include "btree/btree_impl.hpp"

namespace vmstore::internal {

template class BasicBTree<BufferManager>;

}  // namespace vmstore::internal
