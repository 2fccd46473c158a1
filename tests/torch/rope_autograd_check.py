#!/usr/bin/env python3
"""rope_autograd_check.py — the RoPE backward ops of libtxops.so against torch.autograd.

The forward of each rotation mode is written here in plain PyTorch from docs/rope.md; autograd of
that forward (in float64) gives dx, dcos and dsin. txops is called through its aclnn C API with ctypes
(aclCreateTensor on the torch tensors' data pointers), on float32 copies of the same values, and must agree
to ~1e-5. Covers aclnnApplyRotaryPosEmbGrad (half, interleave, quarter; with query/key for gradCos/gradSin;
layouts BSND, SBND, BNSD, TND; cos batch 1 or B), aclnnInplacePartialRotaryMulGrad (all four modes) and
aclnnRotaryPositionEmbeddingGrad (all four modes; cos broadcast over every pattern of dims, lower rank; dx,
dcos, dsin).

Usage: /usr/bin/python3 rope_autograd_check.py path/to/libtxops.so
Exit 0: all passed; 1: a mismatch or an error; 77: skipped (torch missing) — ctest SKIP_RETURN_CODE.
"""
import ctypes
import sys

try:
    import torch
except ImportError:
    print("skipped: torch is not importable by", sys.executable)
    sys.exit(77)

ACL_FLOAT, ACL_FORMAT_ND = 0, 2
TOL = 1e-5  # |txops - autograd| <= TOL * (1 + |autograd|): fp32 storage of inputs and outputs, fp32 maths


# ---- the forward, from the spec ----------------------------------------------------------------------
def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


def rope_forward(x, c, s, mode):
    """y = f(x) for one of the four modes; c and s broadcast against x and are full width."""
    if mode == "half":
        return x * c + rotate_half(x) * s
    if mode == "interleave":
        rot = torch.stack((-x[..., 1::2], x[..., 0::2]), dim=-1).flatten(-2)
        return x * c + rot * s
    if mode == "quarter":
        x1, x2, x3, x4 = x.chunk(4, dim=-1)
        return x * c + torch.cat((-x2, x1, -x4, x3), dim=-1) * s
    if mode == "interleave-half":
        xe, xo = x[..., 0::2], x[..., 1::2]
        return torch.cat((xe, xo), dim=-1) * c + torch.cat((-xo, xe), dim=-1) * s
    raise ValueError(mode)


MODE_CODES = {"half": 0, "interleave": 1, "quarter": 2, "interleave-half": 3}


# ---- ctypes bindings of the aclnn API ------------------------------------------------------------------
class Txops:
    def __init__(self, path):
        lib = ctypes.CDLL(path)
        p, i64, u64 = ctypes.c_void_p, ctypes.c_int64, ctypes.c_uint64
        lib.aclCreateTensor.restype = p
        lib.aclCreateTensor.argtypes = [ctypes.POINTER(i64), u64, ctypes.c_int, ctypes.POINTER(i64), i64,
                                        ctypes.c_int, ctypes.POINTER(i64), u64, p]
        lib.aclDestroyTensor.argtypes = [p]
        lib.aclCreateIntArray.restype = p
        lib.aclCreateIntArray.argtypes = [ctypes.POINTER(i64), u64]
        lib.aclDestroyIntArray.argtypes = [p]
        lib.aclGetRecentErrMsg.restype = ctypes.c_char_p
        lib.aclnnApplyRotaryPosEmbGradGetWorkspaceSize.argtypes = (
            [p] * 6 + [ctypes.c_char_p, i64] + [p] * 4 + [ctypes.POINTER(u64), ctypes.POINTER(p)])
        lib.aclnnInplacePartialRotaryMulGradGetWorkspaceSize.argtypes = (
            [p] * 3 + [i64, p, ctypes.POINTER(u64), ctypes.POINTER(p)])
        lib.aclnnRotaryPositionEmbeddingGradGetWorkspaceSize.argtypes = (
            [p] * 4 + [i64] + [p] * 3 + [ctypes.POINTER(u64), ctypes.POINTER(p)])
        for name in ("aclnnApplyRotaryPosEmbGrad", "aclnnInplacePartialRotaryMulGrad",
                     "aclnnRotaryPositionEmbeddingGrad"):
            getattr(lib, name).argtypes = [p, u64, p, p]
        self.lib = lib

    def tensor(self, t):
        """An aclTensor over a float32 torch tensor (its own strides; storage = what the view spans)."""
        assert t.dtype == torch.float32
        n = t.dim()
        dims = (ctypes.c_int64 * n)(*t.shape)
        strides = (ctypes.c_int64 * n)(*t.stride())
        span = 1 + sum((d - 1) * st for d, st in zip(t.shape, t.stride()))
        storage = (ctypes.c_int64 * 1)(span)
        handle = self.lib.aclCreateTensor(dims, n, ACL_FLOAT, strides, 0, ACL_FORMAT_ND, storage, 1,
                                          ctypes.c_void_p(t.data_ptr()))
        if not handle:
            raise RuntimeError("aclCreateTensor: " + self.lib.aclGetRecentErrMsg().decode())
        return handle

    def run(self, phase_one, phase_two, *args):
        ws = ctypes.c_uint64(0)
        executor = ctypes.c_void_p()
        code = phase_one(*args, ctypes.byref(ws), ctypes.byref(executor))
        if code != 0:
            raise RuntimeError("phase one %d: %s" % (code, self.lib.aclGetRecentErrMsg().decode()))
        workspace = ctypes.create_string_buffer(max(int(ws.value), 1))
        code = phase_two(workspace, ws, executor, None)
        if code != 0:
            raise RuntimeError("phase two %d: %s" % (code, self.lib.aclGetRecentErrMsg().decode()))

    def apply_grad(self, gq_embed, gk_embed, cos, sin, q, k, mode, layout):
        outs = [torch.full_like(gq_embed, float("nan")), torch.full_like(gk_embed, float("nan")),
                torch.full_like(cos, float("nan")), torch.full_like(cos, float("nan"))]
        handles = [self.tensor(t) for t in (gq_embed, gk_embed, cos, sin, q, k)] + [self.tensor(t) for t in outs]
        try:
            self.run(self.lib.aclnnApplyRotaryPosEmbGradGetWorkspaceSize, self.lib.aclnnApplyRotaryPosEmbGrad,
                     *handles[:6], mode.encode(), layout, *handles[6:])
        finally:
            for h in handles:
                self.lib.aclDestroyTensor(h)
        return outs

    def rotary_grad(self, dy, cos, sin, x, mode):
        outs = [torch.full_like(dy, float("nan")), torch.full_like(cos, float("nan")),
                torch.full_like(cos, float("nan"))]
        handles = [self.tensor(t) for t in (dy, cos, sin, x)] + [self.tensor(t) for t in outs]
        try:
            self.run(self.lib.aclnnRotaryPositionEmbeddingGradGetWorkspaceSize,
                     self.lib.aclnnRotaryPositionEmbeddingGrad, *handles[:4], MODE_CODES[mode], *handles[4:])
        finally:
            for h in handles:
                self.lib.aclDestroyTensor(h)
        return outs

    def partial_grad(self, dy, cos, sin, mode, start, end):
        dy = dy.clone()  # in place
        values = (ctypes.c_int64 * 2)(start, end)
        slice_handle = self.lib.aclCreateIntArray(values, 2)
        handles = [self.tensor(t) for t in (dy, cos, sin)]
        try:
            self.run(self.lib.aclnnInplacePartialRotaryMulGradGetWorkspaceSize,
                     self.lib.aclnnInplacePartialRotaryMulGrad, *handles, MODE_CODES[mode], slice_handle)
        finally:
            for h in handles:
                self.lib.aclDestroyTensor(h)
            self.lib.aclDestroyIntArray(slice_handle)
        return dy


# ---- checks ----------------------------------------------------------------------------------------------
failures = []


def compare(what, got, want):
    err = ((got.double() - want).abs() / (1 + want.abs())).max().item() if want.numel() else 0.0
    status = "ok" if err <= TOL else "FAIL"
    print("%-70s max err %.2e  %s" % (what, err, status))
    if err > TOL:
        failures.append(what)


def random64(*shape):
    """float64 values that are exactly representable in float32 (txops sees the same numbers)."""
    return (torch.rand(*shape, dtype=torch.float64) * 4 - 2).float().double()


def layout_shapes(layout, B, S, N, D, cos_batch):
    if layout == 1:
        return (B, S, N, D), (cos_batch, S, 1, D)
    if layout == 2:
        return (S, B, N, D), (S, cos_batch, 1, D)
    if layout == 3:
        return (B, N, S, D), (cos_batch, 1, S, D)
    return (B * S, N, D), (B * S, 1, D)


def check_apply_grad(tx, mode, layout, cos_batch_one):
    B, S, Nq, Nk, D = 2, 5, 3, 2, 32
    q_shape, cos_shape = layout_shapes(layout, B, S, Nq, D, 1 if cos_batch_one else B)
    k_shape, _ = layout_shapes(layout, B, S, Nk, D, 1)
    q, k, gq, gk = random64(*q_shape), random64(*k_shape), random64(*q_shape), random64(*k_shape)
    c, s = random64(*cos_shape) / 2, random64(*cos_shape) / 2
    leaves = [t.clone().requires_grad_(True) for t in (q, k, c, s)]
    loss = (rope_forward(leaves[0], leaves[2], leaves[3], mode) * gq).sum() + \
           (rope_forward(leaves[1], leaves[2], leaves[3], mode) * gk).sum()
    loss.backward()
    got = tx.apply_grad(gq.float(), gk.float(), c.float(), s.float(), q.float(), k.float(), mode, layout)
    name = "ApplyRotaryPosEmbGrad %s layout %d cos %s" % (mode, layout, "batch 1" if cos_batch_one else "batch B")
    for label, g, leaf in zip(("gradQuery", "gradKey", "gradCos", "gradSin"), got, leaves):
        compare(name + " " + label, g, leaf.grad)


def check_partial_grad(tx, mode, start, end):
    B, S, N, D = 2, 3, 5, end + 3
    L = end - start
    x, dy = random64(B, S, N, D), random64(B, S, N, D)
    c, s = random64(1, S, 1, L) / 2, random64(1, S, 1, L) / 2
    x = x.requires_grad_(True)
    y = torch.cat((x[..., :start], rope_forward(x[..., start:end], c, s, mode), x[..., end:]), dim=-1)
    (y * dy).sum().backward()
    got = tx.partial_grad(dy.float(), c.float(), s.float(), mode, start, end)
    compare("InplacePartialRotaryMulGrad %s slice [%d, %d)" % (mode, start, end), got, x.grad)


def check_rotary_grad(tx, mode, x_shape, cos_shape):
    x, dy = random64(*x_shape), random64(*x_shape)
    c, s = random64(*cos_shape) / 2, random64(*cos_shape) / 2
    leaves = [t.clone().requires_grad_(True) for t in (x, c, s)]
    (rope_forward(leaves[0], leaves[1], leaves[2], mode) * dy).sum().backward()
    got = tx.rotary_grad(dy.float(), c.float(), s.float(), x.float(), mode)
    name = "RotaryPositionEmbeddingGrad %s x %s cos %s" % (mode, tuple(x_shape), tuple(cos_shape))
    for label, g, leaf in zip(("dx", "dcos", "dsin"), got, leaves):
        compare(name + " " + label, g, leaf.grad)


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 1
    torch.manual_seed(0)
    tx = Txops(sys.argv[1])
    try:
        for mode in ("half", "interleave", "quarter"):
            for layout in (1, 2, 3, 4):
                for cos_batch_one in ((True, False) if layout != 4 else (False,)):
                    check_apply_grad(tx, mode, layout, cos_batch_one)
        for mode in ("half", "interleave", "quarter", "interleave-half"):
            check_partial_grad(tx, mode, 0, 64)
            check_partial_grad(tx, mode, 3, 39)
        for mode in ("half", "interleave", "quarter", "interleave-half"):
            for cos_shape in ((1, 1, 4, 16), (2, 1, 4, 16), (1, 3, 1, 16), (2, 3, 4, 16), (4, 16), (16,)):
                check_rotary_grad(tx, mode, (2, 3, 4, 16), cos_shape)
            check_rotary_grad(tx, mode, (6, 3, 32), (6, 1, 32))
    except RuntimeError as e:
        print("error:", e)
        return 1
    if failures:
        print("%d check(s) failed" % len(failures))
        return 1
    print("all RoPE backward ops agree with torch.autograd")
    return 0


if __name__ == "__main__":
    sys.exit(main())
