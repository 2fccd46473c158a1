"""Framework plumbing shared by the txops wrappers: recognising torch tensors and numpy arrays, exporting them
to the extension module without a copy, and allocating outputs in the caller's framework.

Tensors go to the C++ module as DLPack capsules (torch: ``torch.utils.dlpack.to_dlpack``, which unlike
``Tensor.__dlpack__`` also accepts tensors that require grad; numpy: ``ndarray.__dlpack__``); any other object
goes as it is and the module calls its ``__dlpack__``. numpy refuses to export read-only arrays (``np.broadcast_to`` views, for instance), so those go
as a raw ``(address, dtype code, shape, strides)`` tuple; the array stays alive for the duration of the call.
"""
import sys

import numpy as np

# numpy dtype -> txops DType code (CANN's aclDataType numbers)
_NUMPY_DTYPE_CODES = {
    np.dtype(np.float32): 0, np.dtype(np.float16): 1, np.dtype(np.int8): 2, np.dtype(np.int32): 3,
    np.dtype(np.uint8): 4, np.dtype(np.int16): 6, np.dtype(np.uint16): 7, np.dtype(np.uint32): 8,
    np.dtype(np.int64): 9, np.dtype(np.uint64): 10, np.dtype(np.float64): 11, np.dtype(np.bool_): 12,
}

_torch = None          # the torch module once it has been imported by anyone (txops never imports it eagerly)
_torch_tensor = ()     # torch.Tensor, or () so that isinstance(x, ()) is always False
_to_dlpack = None


def _find_torch():
    global _torch, _torch_tensor, _to_dlpack
    torch = sys.modules.get("torch")
    if torch is not None and _torch is None and hasattr(torch, "Tensor"):
        from torch.utils import dlpack as torch_dlpack
        _torch, _torch_tensor, _to_dlpack = torch, torch.Tensor, torch_dlpack.to_dlpack
    return _torch


def is_torch(x):
    """True when x is a torch.Tensor (without importing torch)."""
    if _torch is None:
        _find_torch()
    return isinstance(x, _torch_tensor)


def export(x):
    """What the extension module receives for x: a DLPack capsule, a raw view tuple, or x itself (other
    objects: the module calls their __dlpack__)."""
    if isinstance(x, _torch_tensor):
        return _to_dlpack(x)
    if isinstance(x, np.ndarray):
        return x.__dlpack__() if x.flags.writeable else _raw_numpy_view(x)
    if x is None:
        return None
    if _torch is None and _find_torch() is not None and isinstance(x, _torch_tensor):
        return _to_dlpack(x)
    return x


def export_output(x, param):
    """export() for a tensor the operator writes: a read-only numpy array is refused, never written."""
    if isinstance(x, np.ndarray) and not x.flags.writeable:
        raise ValueError(f"{param} must be writable (the operator writes it), got a read-only array")
    return export(x)


def _raw_numpy_view(x):
    code = _NUMPY_DTYPE_CODES.get(x.dtype)
    if code is None:
        raise TypeError(f"array dtype must be one of {sorted(str(d) for d in _NUMPY_DTYPE_CODES)}, got {x.dtype}")
    itemsize = x.dtype.itemsize
    if any(s % itemsize for s in x.strides):
        raise ValueError(f"array strides must be multiples of the item size {itemsize}, got {x.strides}")
    return (x.ctypes.data, code, tuple(x.shape), tuple(s // itemsize for s in x.strides))


def _allocate(kind, shape, dtype, like):
    """torch.<kind> or numpy.<kind> ("empty" / "zeros") of `shape` and `dtype`, in the framework of `like`."""
    if _torch is None:
        _find_torch()
    if isinstance(like, _torch_tensor):
        return getattr(_torch, kind)(shape, dtype=dtype, device=like.device)
    if isinstance(like, np.ndarray):
        return getattr(np, kind)(shape, dtype=dtype)
    raise TypeError(f"tensor must be a torch.Tensor or a numpy.ndarray, got {type(like).__name__}")


def empty(shape, dtype, like):
    """A new contiguous array of `shape` and `dtype` in the framework of `like`."""
    return _allocate("empty", shape, dtype, like)


def zeros(shape, dtype, like):
    """A new zero-filled array of `shape` and `dtype` in the framework of `like`."""
    return _allocate("zeros", shape, dtype, like)


def int32_array(values, like, param):
    """values (a sequence of ints, or an integer array/tensor) as an int32 array of like's framework."""
    if _torch is None:
        _find_torch()
    if isinstance(values, _torch_tensor):
        if values.dtype == _torch.int32:
            return values
        if values.dtype.is_floating_point or values.dtype.is_complex:
            raise TypeError(f"{param} dtype must be an integer type, got {values.dtype}")
        return values.to(_torch.int32)
    if isinstance(values, np.ndarray):
        if values.dtype == np.int32:
            return values
        if values.dtype.kind not in "iu":
            raise TypeError(f"{param} dtype must be an integer type, got {values.dtype}")
        return values.astype(np.int32)
    try:
        as_list = [int(v) for v in values]
    except TypeError:
        raise TypeError(f"{param} must be a sequence of ints or an integer tensor, got {type(values).__name__}")
    if isinstance(like, _torch_tensor):
        return _torch.tensor(as_list, dtype=_torch.int32)
    return np.asarray(as_list, dtype=np.int32)


def grad_needed(*tensors):
    """True when torch autograd must record a call on these tensors."""
    if _torch is None:
        _find_torch()
    for t in tensors:  # requires_grad first: it is cheaper than asking torch whether grad mode is on
        if isinstance(t, _torch_tensor) and t.requires_grad:
            return _torch.is_grad_enabled()
    return False
