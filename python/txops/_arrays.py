"""Framework plumbing shared by the txops wrappers: recognising torch tensors and numpy arrays, exporting them
to the extension module without a copy, allocating outputs in the caller's framework, and choosing, per call,
between the extension directly and the registered torch operators (``torch.ops.txops``).

Tensors go to the C++ module as DLPack capsules (torch: ``torch.utils.dlpack.to_dlpack``, which unlike
``Tensor.__dlpack__`` also accepts tensors that require grad; numpy: ``ndarray.__dlpack__``); any other object
goes as it is and the module calls its ``__dlpack__``. numpy refuses to export read-only arrays (``np.broadcast_to`` views, for instance), so those go
as a raw ``(address, dtype code, shape, strides)`` tuple; the array stays alive for the duration of the call.

txops never imports torch itself. When torch is (or later gets) imported, :func:`attach_torch` binds the torch
helpers below and registers the operators (txops._torch_ops); :func:`watch_torch` arranges for that to happen
right after ``import torch`` finishes when txops was imported first, so the operators exist before any
``torch.compile`` traces a call.
"""
import importlib.util
import sys
import warnings

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
ops = None             # txops._torch_ops.Ops: the registered operators' handles (None before torch, or torch < 2.4)
_ops_missing = ""      # why `ops` is None although torch is there
_is_compiling = _dispatch_depth = _grad_enabled = _increment_version = None


def _never():
    return False


#: True while torch.compile (dynamo) traces. A wrapper asks this before calling a ``_txops._eager_*`` entry
#: (the plain-eager fast path, decided in C): dynamo cannot trace into C, so under it the entries must not be
#: reached. Replaced by torch's own function when torch is attached; read as ``_arrays.compiling()``.
compiling = _never


def _find_torch():
    torch = sys.modules.get("torch")
    if torch is not None and _torch is None and hasattr(torch, "Tensor"):
        attach_torch(torch)
    return _torch


def attach_torch(torch):
    """Binds the torch helpers and registers the txops operators; called once, when torch is first seen."""
    global _torch, _torch_tensor, _to_dlpack, ops, _ops_missing
    global _is_compiling, _dispatch_depth, _grad_enabled, _increment_version, compiling
    if _torch is not None:
        return
    from torch.utils import dlpack as torch_dlpack
    from . import _torch_ops
    try:
        ops = _torch_ops.register()
    except _torch_ops.Unsupported as why:
        ops, _ops_missing = None, str(why)
    compiler = getattr(torch, "compiler", None)
    _is_compiling = getattr(compiler, "is_dynamo_compiling", None) or getattr(compiler, "is_compiling", None) \
        or (lambda: False)
    _dispatch_depth = getattr(torch._C, "_len_torch_dispatch_stack", None) or (lambda: 0)
    _grad_enabled = torch.is_grad_enabled
    _increment_version = getattr(torch._C, "_increment_version", None) or (lambda tensors: None)
    # torch >= 2.10 publishes the DLPack C exchange API on its tensor type: the extension then reads a tensor
    # passed as it is (no capsule, no allocation; ~1.2 us less per 4-tensor call), else it gets a capsule.
    # With it the plain-eager fast path opens: the _eager_* entries decide in C what torch_ops() decides here.
    from . import _txops
    direct = _txops._has_exchange_api(torch.Tensor) if hasattr(_txops, "_has_exchange_api") else False
    _to_dlpack = _same if direct else torch_dlpack.to_dlpack
    compiling = _is_compiling
    if direct:
        _txops._set_torch_hooks(torch.Tensor, torch.is_grad_enabled, _dispatch_depth, _increment_version)
    _torch_tensor, _torch = torch.Tensor, torch


def _same(x):
    return x


class _AfterTorchImport:
    """A one-shot ``sys.meta_path`` finder: when ``torch`` is imported after txops, it lets the import run
    unchanged and calls :func:`attach_torch` right after torch's own module code has finished."""

    def find_spec(self, name, path=None, target=None):
        if name != "torch":
            return None
        _unwatch()
        spec = importlib.util.find_spec(name)  # the other finders, as without this one
        loader = getattr(spec, "loader", None)
        exec_module = getattr(loader, "exec_module", None)
        if exec_module is None:
            return spec  # nothing to wrap: the first txops call with a torch tensor attaches instead

        def exec_then_attach(module):
            exec_module(module)
            try:
                attach_torch(module)
            except Exception as error:  # never break `import torch`: the first txops call retries
                warnings.warn(f"txops: registering the torch operators failed: {error!r}", RuntimeWarning)
        loader.exec_module = exec_then_attach
        return spec


_watcher = None


def watch_torch():
    """Attach now if torch is imported, else as soon as it is (see _AfterTorchImport)."""
    global _watcher
    if _find_torch() is None and "torch" not in sys.modules and _watcher is None:
        _watcher = _AfterTorchImport()
        sys.meta_path.insert(0, _watcher)


def _unwatch():
    global _watcher
    if _watcher is not None:
        try:
            sys.meta_path.remove(_watcher)
        except ValueError:
            pass
        _watcher = None


def torch_ops(x, *others):
    """The registered operators when a call with these arguments must go through them, None when the
    extension is called directly. Through them: torch.compile / export tracing, a torch dispatch mode
    (FakeTensor, make_fx, ...), a tensor subclass (x), or autograd recording the call (grad mode on and a
    tensor that requires grad). Directly: numpy, and plain eager torch tensors with nothing to record — no
    dispatcher round trip on the hot path."""
    if _torch is None and _find_torch() is None:
        return None
    if not isinstance(x, _torch_tensor):
        return None
    if not (_is_compiling() or _dispatch_depth() or type(x) is not _torch_tensor):
        if not _grad_enabled():
            return None
        if not x.requires_grad:
            for t in others:
                if isinstance(t, _torch_tensor) and t.requires_grad:
                    break
            else:
                return None
    if ops is None:
        raise RuntimeError(f"txops: autograd, torch.compile and tracing need the txops torch operators: "
                           f"{_ops_missing}")
    return ops


def traced_torch_ops(x):
    """torch_ops() for the operators that autograd does not record (no backward): the registered operators
    only under tracing, a dispatch mode or a tensor subclass."""
    if _torch is None and _find_torch() is None:
        return None
    if not isinstance(x, _torch_tensor):
        return None
    if not (_is_compiling() or _dispatch_depth() or type(x) is not _torch_tensor):
        return None
    if ops is None:
        raise RuntimeError(f"txops: torch.compile and tracing need the txops torch operators: {_ops_missing}")
    return ops


def written(*tensors):
    """Bumps the autograd version counter of torch tensors the extension wrote in place (torch cannot see
    writes through DLPack), so that autograd refuses a backward that would read overwritten saved values."""
    if _torch is None:
        return
    for t in tensors:
        if not isinstance(t, _torch_tensor):
            tensors = tuple(t for t in tensors if isinstance(t, _torch_tensor))
            break
    if tensors:
        _increment_version(tensors)


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


def refuse_autograd(name, **tensors):
    """Raises RuntimeError, naming the first tensor that requires grad, when autograd would have to record a call
    of `name`, an operator without a backward."""
    if grad_needed(*tensors.values()):
        param = next(p for p, t in tensors.items() if getattr(t, "requires_grad", False))
        raise RuntimeError(f"{param} requires grad, but txops.{name} has no backward: call it under "
                           "torch.no_grad() or pass detached tensors")
