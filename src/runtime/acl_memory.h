// acl_memory.h — what the runtime knows about the memory it handed out: the aclrtMalloc / aclrtMallocHost
// block holding a pointer, so that phase one can refuse a tensor claiming more bytes than its block has.
// Pointers the runtime never allocated (plain host memory, the C++ API's buffers) are not known, and not checked.
#ifndef TXOPS_RUNTIME_ACL_MEMORY_H_
#define TXOPS_RUNTIME_ACL_MEMORY_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace txops {

// Every block is followed by at least kBlockGuard bytes of its own allocation (its rounding to 64 bytes, plus 64),
// poisoned under AddressSanitizer: a pointer up to kBlockGuard bytes past a block's last byte lies in memory the
// runtime allocated (never in a neighbour's), so it is matched to its block, with 0 bytes left.
constexpr size_t kBlockGuard = 64;

struct RuntimeBlock {
  uintptr_t base = 0;
  size_t size = 0;           // bytes the caller asked for
  const char* kind = "";     // "aclrtMalloc" or "aclrtMallocHost"
  // The bytes of the block from p (a pointer find_runtime_block matched to it) to its end; 0 past the end.
  size_t bytes_from(const void* p) const {
    const uintptr_t offset = reinterpret_cast<uintptr_t>(p) - base;
    return offset >= size ? 0 : size - offset;
  }
};

// True (and *block filled) when p lies inside a live block the runtime allocated, or in its guard.
bool find_runtime_block(const void* p, RuntimeBlock* block);

// The runtime blocks an executor's tensors point into, recorded by phase one (tensor_to_view) so that phase two
// can refuse to run when one of them was freed (or replaced by a smaller block) in between.
struct UsedBlock {
  const char* param = "";  // the tensor's parameter name (a string literal)
  uintptr_t base = 0;
  size_t size = 0;
};
// Phase one of the calling thread: tensor_to_view appends; publishing the executor takes the list, and a failed
// phase one drops it.
void note_used_block(const char* param, const RuntimeBlock& block);
std::vector<UsedBlock> take_used_blocks();
// Empty when every block is still live with the recorded base and size; else the message naming the tensor.
std::string check_used_blocks(const std::vector<UsedBlock>& blocks);

}  // namespace txops

#endif  // TXOPS_RUNTIME_ACL_MEMORY_H_
