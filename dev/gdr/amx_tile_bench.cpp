// dev/gdr/amx_tile_bench.cpp — throwaway: the cost of one chunk-sized AMX product (rows 64 x depth 128 x cols 128,
// the state split in three bf16 parts, as chunked_amx-inl.h XOnTiles does it) against the TDPBF16PS count's
// ideal, for variants of the loop: per-call tile configuration, the store phase, the part order. Arguments: the depth
// and the column count (default 128 128): `build/dev_amx_tile_bench 256 32`.
// Build: g++ -O2 -std=c++17 -mavx512f -mavx512bw -mavx512vl -mavx512dq -mamx-tile -mamx-bf16 dev/gdr/amx_tile_bench.cpp
//        -o build/dev_amx_tile_bench   (needs a CPU and OS with AMX; asks for the tile permission itself)
#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <vector>

struct alignas(64) TileConfig {
  uint8_t palette = 1, start_row = 0, reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};

__attribute__((noinline)) static void config() {
  static TileConfig cfg;  // (a local one: GCC dropped the stores of its fields before ldtilecfg)
  for (int t = 0; t < 8; ++t) cfg.colsb[t] = 64, cfg.rows[t] = 16;
  _tile_loadconfig(&cfg);
}

// mode bit 1: configure per call; bit 2: store phase; bit 4: B parts for both column tiles loaded before the dps.
template <int kMode>
__attribute__((noinline)) void product(int64_t rows, int64_t depth, const uint16_t* a, const uint32_t* split,
                                       int64_t cols, float* x, int64_t ldx) {
  if (kMode & 1) config();
  alignas(64) float block[4][256];
  const int64_t part = depth / 2 * cols, a_stride = depth * 2, b_stride = cols * 4;
  for (int64_t cb = 0; cb < cols; cb += 32) {
    for (int64_t rb = 0; rb < rows; rb += 32) {
      _tile_zero(0);
      _tile_zero(1);
      _tile_zero(2);
      _tile_zero(3);
      for (int64_t k = 0; k < depth; k += 32) {
        _tile_loadd(4, a + rb * depth + k, a_stride);
        _tile_loadd(5, a + (rb + 16) * depth + k, a_stride);
        const uint32_t* b = split + k / 2 * cols + cb;
        for (int s = 0; s < 3; ++s, b += part) {
          if (kMode & 4) {
            _tile_loadd(6, b, b_stride);
            _tile_loadd(7, b + 16, b_stride);
            _tile_dpbf16ps(0, 4, 6);
            _tile_dpbf16ps(1, 4, 7);
            _tile_dpbf16ps(2, 5, 6);
            _tile_dpbf16ps(3, 5, 7);
          } else {
            _tile_loadd(6, b, b_stride);
            _tile_dpbf16ps(0, 4, 6);
            _tile_dpbf16ps(2, 5, 6);
            _tile_loadd(7, b + 16, b_stride);
            _tile_dpbf16ps(1, 4, 7);
            _tile_dpbf16ps(3, 5, 7);
          }
        }
      }
      if (kMode & 2) {
        _tile_stored(0, block[0], 64);
        _tile_stored(1, block[1], 64);
        _tile_stored(2, block[2], 64);
        _tile_stored(3, block[3], 64);
        for (int64_t i = rb; i < rb + 32; ++i) {
          const int64_t t = i - rb < 16 ? 0 : 2, r = (i - rb) % 16;
          _mm512_storeu_ps(x + i * ldx + cb, _mm512_load_ps(block[t] + r * 16));
          _mm512_storeu_ps(x + i * ldx + cb + 16, _mm512_load_ps(block[t + 1] + r * 16));
        }
      } else {
        _tile_stored(0, x + rb * ldx + cb, ldx * 4);
        _tile_stored(1, x + rb * ldx + cb + 16, ldx * 4);
        _tile_stored(2, x + (rb + 16) * ldx + cb, ldx * 4);
        _tile_stored(3, x + (rb + 16) * ldx + cb + 16, ldx * 4);
      }
    }
  }
  if (kMode & 1) _tile_release();
}

// The products depth and columns (arguments 1 and 2; multiples of 32, columns at most 128): the operands outgrow L1
// (A 64 x depth bf16, B three parts of depth / 2 x columns u32) as they grow (README.md "Speed, session 41").
static int g_depth = 128, g_cols = 128;

template <int kMode>
double time_it(const char* name, const uint16_t* a, const uint32_t* split, float* x) {
  const int reps = 20000;
  if (!(kMode & 1)) config();
  double best = 1e30;
  for (int round = 0; round < 5; ++round) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < reps; ++i) product<kMode>(64, g_depth, a, split, g_cols, x, 128);
    const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / reps;
    best = us < best ? us : best;
  }
  if (!(kMode & 1)) _tile_release();
  const double dps = 2.0 * (g_cols / 32) * (g_depth / 32) * 3 * 4;  // row blocks x col blocks x k steps x parts x 4
  std::printf("%-44s %.3f us per product, %.1f ns per TDPBF16PS\n", name, best, best * 1e3 / dps);
  return best;
}

int main(int argc, char** argv) {
  if (syscall(SYS_arch_prctl, 0x1023 /* ARCH_REQ_XCOMP_PERM */, 18 /* XFEATURE_XTILEDATA */) != 0) {
    std::printf("no AMX permission\n");
    return 1;
  }
  g_depth = argc > 1 ? std::atoi(argv[1]) : 128;
  g_cols = argc > 2 ? std::atoi(argv[2]) : 128;
  if (g_depth <= 0 || g_depth % 32 != 0 || g_depth > 4096 || g_cols <= 0 || g_cols % 32 != 0 || g_cols > 128) {
    std::printf("depth: a multiple of 32 up to 4096; columns: 32, 64, 96 or 128\n");
    return 1;
  }
  std::vector<uint16_t> a(64 * g_depth, 0x3f80);
  std::vector<uint32_t> split(3 * g_depth / 2 * g_cols, 0x3f803f80u);
  std::vector<float> x(64 * 128);
  time_it<3>("config per call, store phase (XOnTiles)", a.data(), split.data(), x.data());
  time_it<2>("config once, store phase", a.data(), split.data(), x.data());
  time_it<0>("config once, tiles stored straight", a.data(), split.data(), x.data());
  time_it<7>("config per call, store phase, loads first", a.data(), split.data(), x.data());
  time_it<4>("config once, stored straight, loads first", a.data(), split.data(), x.data());
  return 0;
}
