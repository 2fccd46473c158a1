// gdr.h — what the ChunkGatedDeltaRule and RecurrentGatedDeltaRule targets share: the kernel overrides the plan
// reads from the environment, head counts and dims, and the host-readable sequence lengths (with mutations).
#ifndef TXOPS_FUZZ_GDR_H_
#define TXOPS_FUZZ_GDR_H_

#include <algorithm>
#include <vector>

#include "fuzz_util.h"

namespace txfuzz {

// TXOPS_GDR_KERNEL (prefill kernel) and TXOPS_GDR_SPLIT (chunk or column mode), set or unset on every input.
inline void gdr_environment(Session& s) {
  static const char* const kKernels[] = {nullptr, "chunked", "recurrent", "auto"};
  static const char* const kSplits[] = {nullptr, "chunks", "columns", "items"};
  const char* kernel = s.pick(kKernels, "cfg", "kernel");
  const char* split = s.pick(kSplits, "cfg", "split");
  if (kernel) setenv("TXOPS_GDR_KERNEL", kernel, 1); else unsetenv("TXOPS_GDR_KERNEL");
  if (split) setenv("TXOPS_GDR_SPLIT", split, 1); else unsetenv("TXOPS_GDR_SPLIT");
}

struct GdrShape {
  int64_t B = 1, T = 0, Nk = 1, Nv = 1, Dk = 16, Dv = 16;
  std::vector<int64_t> lens;
};

// B sequences of 1..max_len tokens (or 0), Nv a multiple of Nk, head dims from `dims`; then shrunk so that one
// activation and one state stay near kMaxElements and the work near kMaxWork.
template <size_t N>
GdrShape decode_gdr_shape(Session& s, int64_t short_len, int64_t long_len, const int64_t (&dims)[N]) {
  GdrShape g;
  g.B = 1 + s.range(0, 3, "shape", "B");
  const int64_t max_len = s.flag("shape", "long") ? long_len : short_len;
  for (int64_t b = 0; b < g.B; ++b) {
    const int64_t raw = s.range(0, max_len, "lens", "len");
    g.lens.push_back((raw + 1) % (max_len + 1));  // 0 -> 1 token (the default), max_len -> an empty sequence
    g.T += g.lens.back();
  }
  g.Nk = 1 + s.range(0, 3, "shape", "Nk");
  g.Nv = g.Nk * (1 + s.range(0, 3, "shape", "ratio"));
  g.Dk = s.pick(dims, "shape", "Dk");
  g.Dv = s.pick(dims, "shape", "Dv");
  const int64_t T = std::max<int64_t>(g.T, 1);
  // elements (one activation, one state) and work (T * Nv * Dk * Dv multiply-adds, ~4 passes) stay small: a
  // sanitized scalar chunked kernel runs ~1 ns per multiply-add. 2^17 still reaches several chunks (T = 512 at
  // Nv = 1, Dk = Dv = 16) and the largest head dims (Dk = Dv = 256 for 2 tokens); 2^19 ran ~110 inputs/s.
  constexpr int64_t kMaxWork = int64_t{1} << 17;
  while (sat_mul(sat_mul(T, g.Nv), std::max(g.Dk, g.Dv)) > kMaxElements ||
         sat_mul(sat_mul(g.B, g.Nv), sat_mul(g.Dk, g.Dv)) > kMaxElements ||
         sat_mul(sat_mul(T, g.Nv), sat_mul(g.Dk, g.Dv)) > kMaxWork) {
    if (g.Nv > g.Nk) g.Nv -= g.Nk;
    else if (g.Nk > 1) g.Nv = --g.Nk;
    else if (g.Dk >= g.Dv && g.Dk > 1) g.Dk /= 2;
    else if (g.Dv > 1) g.Dv /= 2;
    else break;
  }
  return g;
}

// The lengths as written to the int32 tensor: as decoded, or with one rule broken.
inline std::vector<int64_t> mutate_lens(Session& s, std::vector<int64_t> lens) {
  static const int64_t kBad[] = {-1, INT32_MAX, INT32_MIN, 1 << 20};
  switch (s.range(0, 3, "lensv", "mut")) {
    case 1: lens[s.range(0, lens.size() - 1, "lensv", "at")] = s.pick(kBad, "lensv", "value"); break;
    case 2: lens.back() += s.range(0, 1, "lensv", "sign") ? 1 : -1; break;  // sum != T
    case 3: std::reverse(lens.begin(), lens.end()); break;  // same sum, other order
    default: break;
  }
  return lens;
}

}  // namespace txfuzz

#endif  // TXOPS_FUZZ_GDR_H_
