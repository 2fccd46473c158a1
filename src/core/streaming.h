// streaming.h — when an op writes its outputs past the caches: outputs at least kStreamingOutputBytes large go out
// with non-temporal (streaming) stores, since they would not stay in the caches anyway and the ordinary stores would
// first read every line from memory. One threshold for every op that streams (RoPE, the causal conv, the gated
// delta rule's backward).
#ifndef TXOPS_CORE_STREAMING_H_
#define TXOPS_CORE_STREAMING_H_

#include <cstdint>

namespace txops {

constexpr int64_t kStreamingOutputBytes = int64_t{4} << 20;

}  // namespace txops

#endif  // TXOPS_CORE_STREAMING_H_
