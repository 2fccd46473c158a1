// amx.h — whether this process may run Intel AMX bf16 tile instructions (TDPBF16PS): the CPU has AMX-TILE and
// AMX-BF16, the OS enables their register state (XCR0 bits 17-18) and, on Linux, grants this process the tile
// data (arch_prctl ARCH_REQ_XCOMP_PERM: a process must ask before its first tile instruction, or it faults).
// TXOPS_NO_AMX (set, not "0") forbids them; tests switch them off and on at run time (set_amx_allowed).
#ifndef TXOPS_CORE_AMX_H_
#define TXOPS_CORE_AMX_H_

#include <cstdint>

namespace txops {

// The 64-byte block ldtilecfg reads (palette 1).
struct alignas(64) AmxTileConfig {
  uint8_t palette, start_row, reserved[14];
  uint16_t colsb[16];
  uint8_t rows[16];
};
// The configuration every tile kernel here uses (the GDR prefill and backward, the bench's AMX probe): tiles 0-7 of
// 16 rows x 64 bytes (16 fp32 or 32 bf16). A constant in read-only memory: for one filled on the stack, a GCC build
// emitted no stores of the column widths before the ldtilecfg that reads them (session 41), and ldtilecfg faults on an
// invalid configuration.
inline constexpr AmxTileConfig kAmxTiles16x64 = {
    1, 0, {}, {64, 64, 64, 64, 64, 64, 64, 64}, {16, 16, 16, 16, 16, 16, 16, 16}};

// The CPU and OS allow AMX bf16 tiles (checked, and the permission asked for, once) and nothing forbids them.
bool amx_bf16_usable();

// Run-time switch over amx_bf16_usable() (default on): plans made while it is off take the fp32 paths.
void set_amx_allowed(bool allowed);

}  // namespace txops

#endif  // TXOPS_CORE_AMX_H_
