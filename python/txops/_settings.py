"""Process-wide settings of the txops library (threads, SIMD level, CANN compatibility, verbose logging):
typed, documented front ends of the extension's functions."""
from __future__ import annotations

from . import _txops as _C


def num_threads() -> int:
    """The number of threads the operators use.

    Returns
    -------
    int
        ``TXOPS_NUM_THREADS`` or :func:`set_num_threads`'s value, else the machine's cores.

    Examples
    --------
    >>> import txops
    >>> txops.num_threads() >= 1
    True
    """
    return _C.num_threads()


def set_num_threads(n: int) -> None:
    """Sets the number of threads the operators use; results are bit-identical for any count.

    Parameters
    ----------
    n : int
        Threads; 0 goes back to the default.

    Examples
    --------
    >>> import txops
    >>> txops.set_num_threads(1); txops.num_threads()
    1
    >>> txops.set_num_threads(0)
    """
    _C.set_num_threads(n)


def active_isa() -> str:
    """The SIMD level the kernels run at: 'scalar', 'avx2' or 'avx512'.

    Examples
    --------
    >>> import txops
    >>> txops.active_isa() in ("scalar", "avx2", "avx512")
    True
    """
    return _C.active_isa()


def set_max_isa(isa: str) -> None:
    """Caps the SIMD level chosen at run time (as ``TXOPS_MAX_ISA``).

    Parameters
    ----------
    isa : {'scalar', 'avx2', 'avx512'}

    Examples
    --------
    >>> import txops
    >>> txops.set_max_isa("scalar"); txops.active_isa()
    'scalar'
    >>> txops.set_max_isa("avx512")  # back to the best the CPU has
    """
    _C.set_max_isa(isa)


def cpu_has_avx512_bf16() -> bool:
    """Whether the CPU has AVX512_BF16 (bf16 results are the same bits either way).

    Examples
    --------
    >>> import txops
    >>> isinstance(txops.cpu_has_avx512_bf16(), bool)
    True
    """
    return _C.cpu_has_avx512_bf16()


def compat_mode() -> str:
    """'txops' (the default: txops' wider limits) or 'cann' (CANN's documented limits and codes).

    Examples
    --------
    >>> import txops
    >>> txops.compat_mode()
    'txops'
    """
    return _C.compat_mode()


def set_compat_mode(mode: str) -> None:
    """Enforces CANN's documented limits (``'cann'``, as ``TXOPS_COMPAT=cann``) or txops' (``'txops'``).

    Parameters
    ----------
    mode : {'txops', 'cann'}

    Examples
    --------
    >>> import txops
    >>> txops.set_compat_mode("cann"); txops.compat_mode()
    'cann'
    >>> txops.set_compat_mode("txops")
    """
    _C.set_compat_mode(mode)


def verbose() -> bool:
    """Whether each operator call logs one line on stderr (kernel, ISA, threads, shape, time).

    Examples
    --------
    >>> import txops
    >>> isinstance(txops.verbose(), bool)
    True
    """
    return _C.verbose()


def set_verbose(on: bool) -> None:
    """Turns the per-call log line on stderr on or off (as ``TXOPS_VERBOSE=1``).

    Parameters
    ----------
    on : bool

    Examples
    --------
    >>> import txops
    >>> txops.set_verbose(False)
    """
    _C.set_verbose(on)
