"""Returning freed memory to the system between an audit's stages."""
from __future__ import annotations


def _malloc_trim():
    """glibc's malloc_trim, or None (another C library or system: nothing to call)."""
    try:
        import ctypes
        trim = ctypes.CDLL(None).malloc_trim
    except Exception:  # noqa: BLE001
        return None
    trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int
    return trim


_MALLOC_TRIM = _malloc_trim()


def return_freed_memory() -> None:
    """Give the C allocator's free pages back to the system, as dask's workers do: chunks are
    drawn and attacks learned on worker threads, whose malloc arenas otherwise keep freed
    search chunks resident (reports/memory.md). Changes no result."""
    if _MALLOC_TRIM is not None:
        _MALLOC_TRIM(0)
