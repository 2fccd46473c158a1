// apply_rotary.h — shapes the ApplyRotaryPosEmbV2 and ApplyRotaryPosEmbGrad targets share: the layout code
// (1 BSND, 2 SBND, 3 BNSD, 4 TND, and invalid codes, which get BSND shapes) and the sizes it places.
#ifndef TXOPS_FUZZ_APPLY_ROTARY_H_
#define TXOPS_FUZZ_APPLY_ROTARY_H_

#include <vector>

#include "fuzz_util.h"

namespace txfuzz {

struct ApplyShape {
  int64_t layout = 1;
  int64_t B = 1, S = 1, Nq = 1, Nk = 1, D = 64, Dc = 64;
  bool cos_b1 = false;

  std::vector<int64_t> act(int64_t n, int64_t d) const {
    switch (layout) {
      case 2: return {S, B, n, d};
      case 3: return {B, n, S, d};
      case 4: return {B * S, n, d};
      default: return {B, S, n, d};
    }
  }
  std::vector<int64_t> q() const { return act(Nq, D); }
  std::vector<int64_t> k() const { return act(Nk, D); }
  std::vector<int64_t> cos() const {
    const int64_t b = cos_b1 ? 1 : B;
    switch (layout) {
      case 2: return {S, b, 1, Dc};
      case 3: return {b, 1, S, Dc};
      case 4: return {B * S, 1, Dc};
      default: return {b, S, 1, Dc};
    }
  }
};

// `grad`: cos D is D (the grad needs full-width cos); else cos D may be narrower (the rest stays untouched).
inline ApplyShape decode_apply_shape(Session& s, bool grad) {
  static const int64_t kLayouts[] = {1, 2, 3, 4, 0, 5, -1, INT64_MAX};
  static const int64_t kD[] = {64, 128, 32, 16, 8, 4, 2, 40, 36, 132, 1024, 6, 0, 1026, 3};
  ApplyShape a;
  a.layout = s.pick(kLayouts, "attr", "layout");
  a.B = 1 + s.range(0, 3, "shape", "B");
  a.S = 1 + s.range(0, 15, "shape", "S");
  a.Nq = 1 + s.range(0, 7, "shape", "Nq");
  a.Nk = 1 + s.range(0, 7, "shape", "Nk");
  a.D = s.pick(kD, "shape", "D");
  fit_budget({&a.B, &a.S, &a.Nq}, kMaxElements / (a.D > 0 ? a.D : 1));
  fit_budget({&a.B, &a.S, &a.Nk}, kMaxElements / (a.D > 0 ? a.D : 1));
  a.Dc = a.D;
  if (!grad && a.D > 2) {  // a narrower cos: D - 2k
    a.Dc = a.D - 2 * s.range(0, (a.D - 2) / 2, "shape", "cos_D_less");
  }
  a.cos_b1 = s.flag("shape", "cos_B1");
  return a;
}

}  // namespace txfuzz

#endif  // TXOPS_FUZZ_APPLY_ROTARY_H_
