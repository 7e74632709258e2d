"""Adapters that turn the mechanisms DP libraries ship into audited `dpverify.Mechanism`s.

Each adapter reads the privacy claim from the library object itself, builds neighbouring pairs
from what the library says about its inputs, and declares where the noise comes from:
`randomness="own"` when the library's generator cannot be seeded (OpenDP), the engine's `rng`
when it can (diffprivlib's `random_state`). Import the one you need:

    from dpverify.libraries import opendp, diffprivlib

Each needs its library installed: ``pip install 'dpverify[libraries]'``.
"""

import importlib

from ..errors import DpVerifyError


def require(module: str, adapter: str, needs: str):
    """Import a library module for an adapter, or raise a DpVerifyError naming the adapter,
    the versions it needs and the extra that installs them."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise DpVerifyError(f"dpverify.libraries.{adapter} needs {needs}: "
                            f"pip install 'dpverify[libraries]' ({exc})") from None
