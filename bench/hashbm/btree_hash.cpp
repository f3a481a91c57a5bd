// BasicBTree over the traditional hash-table buffer manager (the benchmark's control
// experiment: the same tree code, a different page translation).
#include "btree/btree_impl.hpp"
#include "hashbm/hash_buffer_manager.hpp"

namespace vmstore::internal {

template class BasicBTree<HashBufferManager>;

}  // namespace vmstore::internal
