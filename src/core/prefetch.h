// prefetch.h — a software prefetch into L2 (prefetcht1 on x86), for data fetched many lines ahead of its use or for
// the next work unit. Highway's Prefetch (prefetcht0) fills L1; ahead of a stream, or for a whole next state, those
// lines compete with the working set of the step in progress (measured on Zen 4, session 17: the key-major decode
// and the fused RoPE grads, src/ops/gated_delta_rule/README.md and src/ops/rope/README.md). A hint: it never faults.
#ifndef TXOPS_CORE_PREFETCH_H_
#define TXOPS_CORE_PREFETCH_H_

namespace txops {

// Always inlined: called out of line, GCC finds the function free of side effects (a prefetch has none it can
// see) and deletes the calls — every prefetch is lost without a diagnostic (seen in session 17's first build).
#if defined(__GNUC__) || defined(__clang__)
__attribute__((always_inline)) inline void PrefetchL2(const void* address) {
  __builtin_prefetch(address, /*rw=*/0, /*locality=*/2);
}
#else
inline void PrefetchL2(const void*) {}
#endif

}  // namespace txops

#endif  // TXOPS_CORE_PREFETCH_H_
