// prefetch.h — software prefetches: one line into L2 (prefetcht1 on x86), for data fetched many lines ahead of its
// use or for the next work unit, and every line of a byte range into L1 (prefetcht0, as Highway's Prefetch) or L2. Into L1
// ahead of a stream, or for a whole next state, those lines compete with the working set of the step in progress
// (measured on Zen 4, session 17: the key-major decode and the fused RoPE grads, src/ops/gated_delta_rule/README.md
// and src/ops/rope/README.md). A hint: it never faults.
#ifndef TXOPS_CORE_PREFETCH_H_
#define TXOPS_CORE_PREFETCH_H_

#include <cstdint>

namespace txops {

// Always inlined, and on x86-64 a volatile asm rather than __builtin_prefetch: GCC takes a prefetch for free of side
// effects, so a function (or lambda) that only prefetches is "pure" to it and its calls are deleted without a
// diagnostic (session 17's first build; in session 41 every prefetch of the chunked prefill's and the backward's
// next-step helpers had been dropped so). A volatile asm is never deleted.
#if defined(__GNUC__) || defined(__clang__)
// One line into L1.
__attribute__((always_inline)) inline void PrefetchL1(const void* address) {
#if defined(__x86_64__)
  asm volatile("prefetcht0 %0" : : "m"(*static_cast<const char*>(address)));
#else
  __builtin_prefetch(address, /*rw=*/0, /*locality=*/3);
#endif
}
__attribute__((always_inline)) inline void PrefetchL2(const void* address) {
#if defined(__x86_64__)
  asm volatile("prefetcht1 %0" : : "m"(*static_cast<const char*>(address)));
#else
  __builtin_prefetch(address, /*rw=*/0, /*locality=*/2);
#endif
}
// Every 64-byte line from address to address + bytes (stepping from address itself), into L1: the rows of the
// next work unit (the next head's q, k, v rows and staged state, the next checkpoint's rows, the conv's next token
// segment, the next RoPE rows).
__attribute__((always_inline)) inline void PrefetchBytes(const void* address, int64_t bytes) {
  const char* p = static_cast<const char*>(address);
  for (int64_t b = 0; b < bytes; b += 64) PrefetchL1(p + b);
}
// The same into L2: rows still in DRAM a stream reaches soon, which prefetched into L1 held the loads up on a Zen 4
// (the GDR decode's rows ahead, the RoPE row slices: their READMEs, session 31).
__attribute__((always_inline)) inline void PrefetchBytesL2(const void* address, int64_t bytes) {
  const char* p = static_cast<const char*>(address);
  for (int64_t b = 0; b < bytes; b += 64) PrefetchL2(p + b);
}
#else
inline void PrefetchL1(const void*) {}
inline void PrefetchL2(const void*) {}
inline void PrefetchBytes(const void*, int64_t) {}
inline void PrefetchBytesL2(const void*, int64_t) {}
#endif

}  // namespace txops

#endif  // TXOPS_CORE_PREFETCH_H_
