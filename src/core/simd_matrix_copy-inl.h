// simd_matrix_copy-inl.h — per-target (Highway) copies of a strided matrix of fp32 / bf16 / fp16 storage into a
// dense fp32 buffer and back (rounding as core/simd_convert-inl.h does), in either memory order. The kernels stage
// recurrent states this way: a state may come row-major or as a transposed view (transformers' and fla's
// [N, HV, K, V] order read as (V, K)), and the chunked prefill keeps it transposed.
//
// Why not an element loop: with the matrix transposed, the loop walks one line per element, a row stride apart;
// at 128 fp32 columns (a 512-byte stride) those lines fall in an eighth of L1's sets and evict each other before
// their neighbours are used, so every element came from L2 (measured: ~4 ns per element). Here a transposed
// matrix moves in 8 x 8 tiles through registers (AVX2 / AVX3), 16 source lines consumed whole per step.
//
// Include after <hwy/highway.h> and core/simd_convert-inl.h inside a foreach_target translation unit.
#if defined(TXOPS_CORE_SIMD_MATRIX_COPY_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef TXOPS_CORE_SIMD_MATRIX_COPY_INL_H_
#undef TXOPS_CORE_SIMD_MATRIX_COPY_INL_H_
#else
#define TXOPS_CORE_SIMD_MATRIX_COPY_INL_H_
#endif

#include <hwy/highway.h>

#include <cstdint>

HWY_BEFORE_NAMESPACE();
namespace txops {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

#undef TXOPS_HAVE_TILE_TRANSPOSE
#if HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_AVX3
#define TXOPS_HAVE_TILE_TRANSPOSE 1
// r[i] (row i of an 8 x 8 tile) becomes column i: unpack, shuffle, permute.
HWY_INLINE void TransposeTile8x8(__m256 (&r)[8]) {
  __m256 t[8];
  for (int i = 0; i < 8; i += 2) {
    t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
  }
  __m256 u[8];
  for (int i = 0; i < 8; i += 4) {
    u[i] = _mm256_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(1, 0, 1, 0));
    u[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(3, 2, 3, 2));
    u[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(1, 0, 1, 0));
    u[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(3, 2, 3, 2));
  }
  for (int i = 0; i < 4; ++i) {
    r[i] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x20);
    r[i + 4] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x31);
  }
}
#else
#define TXOPS_HAVE_TILE_TRANSPOSE 0
#endif

#if HWY_TARGET == HWY_AVX3
// r[i] (row i of a 16 x 16 tile) becomes column i: four shuffle stages of 16 operations (64 for 256 elements, where
// four 8 x 8 tiles take 96), and every row loaded or stored is a whole fp32 line.
HWY_INLINE void TransposeTile16x16(__m512 (&r)[16]) {
  __m512 t[16];
  for (int i = 0; i < 16; i += 2) {  // pairs of rows interleaved within each 128-bit lane
    t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
  }
  __m512 u[16];  // u[4g + k]: rows 4g .. 4g + 3 of columns k, k + 4, k + 8, k + 12 (one per lane)
  for (int g = 0; g < 4; ++g) {
    const __m512 *a = t + 4 * g;
    u[4 * g + 0] = _mm512_shuffle_ps(a[0], a[2], 0x44);
    u[4 * g + 1] = _mm512_shuffle_ps(a[0], a[2], 0xEE);
    u[4 * g + 2] = _mm512_shuffle_ps(a[1], a[3], 0x44);
    u[4 * g + 3] = _mm512_shuffle_ps(a[1], a[3], 0xEE);
  }
  __m512 v[16];  // row groups (0, 1) and (2, 3) side by side: columns k, k + 8 in v[k]; k + 4, k + 12 in v[4 + k]
  for (int k = 0; k < 4; ++k) {
    v[k] = _mm512_shuffle_f32x4(u[k], u[4 + k], 0x88);
    v[4 + k] = _mm512_shuffle_f32x4(u[k], u[4 + k], 0xDD);
    v[8 + k] = _mm512_shuffle_f32x4(u[8 + k], u[12 + k], 0x88);
    v[12 + k] = _mm512_shuffle_f32x4(u[8 + k], u[12 + k], 0xDD);
  }
  for (int k = 0; k < 4; ++k) {
    r[k] = _mm512_shuffle_f32x4(v[k], v[8 + k], 0x88);
    r[k + 8] = _mm512_shuffle_f32x4(v[k], v[8 + k], 0xDD);
    r[k + 4] = _mm512_shuffle_f32x4(v[4 + k], v[12 + k], 0x88);
    r[k + 12] = _mm512_shuffle_f32x4(v[4 + k], v[12 + k], 0xDD);
  }
}
#endif

// Tiles of 8 columns of the transposed source per step: two tiles along its contiguous dimension, so 16
// elements (a whole fp32 line) of each of its 8 rows are used at once.
constexpr int64_t kTileColumns = 16;

#if TXOPS_HAVE_TILE_TRANSPOSE
// The walk both copies share when the strided side is a transpose, per block of kTileColumns rows: wide(r, c) for
// its 16 x 16 tiles (columns below wide_cols, a multiple of 16), tile(r, c) for its 8 x 8 tiles up to the last
// multiple of 8, element(r, c) for the remaining columns. Returns the rows it covered; the caller runs element over
// the rest.
template <class Tile, class Element, class WideTile>
HWY_INLINE int64_t ForEachTile(int64_t rows, int64_t cols, const Tile& tile, const Element& element,
                               const WideTile& wide, int64_t wide_cols) {
  const int64_t c_full = cols / 8 * 8;
  int64_t r0 = 0;
  for (; r0 + kTileColumns <= rows; r0 += kTileColumns) {
    int64_t c0 = 0;
    for (; c0 < wide_cols; c0 += 16) wide(r0, c0);
    for (; c0 < c_full; c0 += 8)
      for (int64_t h = 0; h < kTileColumns; h += 8) tile(r0 + h, c0);
    for (int64_t c = c_full; c < cols; ++c)
      for (int64_t r = r0; r < r0 + kTileColumns; ++r) element(r, c);
  }
  return r0;
}
template <class Tile, class Element>
HWY_INLINE int64_t ForEachTile(int64_t rows, int64_t cols, const Tile& tile, const Element& element) {
  return ForEachTile(rows, cols, tile, element, [](int64_t, int64_t) {}, 0);
}
#endif

// dst[r * ld_dst + c] = src[r * row_stride + c * col_stride] as fp32, r < rows, c < cols.
template <class T>
HWY_INLINE void LoadMatrixF32(const T* src, int64_t row_stride, int64_t col_stride, int64_t rows, int64_t cols,
                              float* dst, int64_t ld_dst) {
  if (col_stride == 1) {
    for (int64_t r = 0; r < rows; ++r) LoadRowF32(src + r * row_stride, 1, cols, cols, dst + r * ld_dst);
    return;
  }
  const auto element = [&](int64_t r, int64_t c) HWY_ATTR {
    dst[r * ld_dst + c] = LoadScalarF32(src + r * row_stride + c * col_stride);
  };
  int64_t r0 = 0;
#if TXOPS_HAVE_TILE_TRANSPOSE
  if (row_stride == 1) {  // src is the transpose of a dense matrix: rows r.. r + 7 of dst per tile
    const hn::FixedTag<float, 8> d8;
    const auto tile = [&](int64_t r, int64_t c) HWY_ATTR {
      __m256 t[8];
      for (int i = 0; i < 8; ++i) t[i] = LoadF32(d8, src + (c + i) * col_stride + r).raw;
      TransposeTile8x8(t);
      for (int j = 0; j < 8; ++j) _mm256_storeu_ps(dst + (r + j) * ld_dst + c, t[j]);
    };
#if HWY_TARGET == HWY_AVX3
    // 16 x 16 tiles first, then 8 x 8 ones and single elements for the last columns.
    const hn::FixedTag<float, 16> d16;
    const auto wide = [&](int64_t r, int64_t c) HWY_ATTR {
      __m512 t[16];
      for (int i = 0; i < 16; ++i) t[i] = LoadF32(d16, src + (c + i) * col_stride + r).raw;
      TransposeTile16x16(t);
      for (int j = 0; j < 16; ++j) _mm512_storeu_ps(dst + (r + j) * ld_dst + c, t[j]);
    };
    r0 = ForEachTile(rows, cols, tile, element, wide, cols / 16 * 16);
#else
    r0 = ForEachTile(rows, cols, tile, element);
#endif
  }
#endif
  for (int64_t r = r0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) element(r, c);
}

// dst[r * row_stride + c * col_stride] = src[r * ld_src + c], rounded to T, r < rows, c < cols.
template <class T>
HWY_INLINE void StoreMatrixF32(const float* src, int64_t ld_src, int64_t rows, int64_t cols, T* dst,
                               int64_t row_stride, int64_t col_stride) {
  if (col_stride == 1) {
    for (int64_t r = 0; r < rows; ++r) StoreRowF32(src + r * ld_src, cols, dst + r * row_stride, 1);
    return;
  }
  const auto element = [&](int64_t r, int64_t c) HWY_ATTR {
    StoreScalarF32(src[r * ld_src + c], dst + r * row_stride + c * col_stride);
  };
  int64_t r0 = 0;
#if TXOPS_HAVE_TILE_TRANSPOSE
  if (row_stride == 1) {
    const hn::FixedTag<float, 8> d8;
    const auto tile = [&](int64_t r, int64_t c) HWY_ATTR {
      __m256 t[8];
      for (int j = 0; j < 8; ++j) t[j] = _mm256_loadu_ps(src + (r + j) * ld_src + c);
      TransposeTile8x8(t);
      for (int i = 0; i < 8; ++i) StoreF32(d8, hn::Vec<decltype(d8)>{t[i]}, dst + (c + i) * col_stride + r);
    };
    r0 = ForEachTile(rows, cols, tile, element);
  }
#endif
  for (int64_t r = r0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) element(r, c);
}

}  // namespace HWY_NAMESPACE
}  // namespace txops
HWY_AFTER_NAMESPACE();

#endif  // per-target include guard
