"""Adapters that turn the mechanisms DP libraries ship into audited `dpverify.Mechanism`s.

Each adapter reads the privacy claim from the library object itself, builds neighbouring pairs
from what the library says about its inputs, and declares where the noise comes from:
`randomness="own"` when the library's generator cannot be seeded (OpenDP, Google's DP library
`pydp`, PipelineDP), the engine's `rng` when it can (diffprivlib's `random_state`, Tumult
Core's module-level generator, Opacus's noise and batch-sampler generators). Import the one you need:

    from dpverify.libraries import opendp, diffprivlib, pydp, pipelinedp, tumult, opacus

`accountants` reads privacy accountants' curves (Google's dp_accounting) as curve claims
(dpverify.fdp), and `opendp.from_measurement(..., whole_profile=True)` an OpenDP
measurement's whole privacy profile.

Each needs its library installed: ``pip install 'dpverify[libraries]'`` (Opacus alone:
``pip install 'dpverify[opacus]'``, which pins torch 2.13.0), and Tumult Core's
``pip install 'dpverify[tumult]'`` (it pins numpy < 2, which diffprivlib 0.6.6 refuses, so it
goes in an environment of its own). The libraries are imported on first use
(`require_opendp`, `require_diffprivlib`, `require_pydp`, `require_pipelinedp`,
`require_tumult`), never when an adapter is imported.
"""

import importlib

from ..errors import DpVerifyError


def require(module: str, adapter: str, needs: str, extra: str = "libraries"):
    """Import a library module for an adapter, or raise a DpVerifyError naming the adapter,
    the versions it needs and the extra that installs them."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise DpVerifyError(f"dpverify.libraries.{adapter} needs {needs}: "
                            f"pip install 'dpverify[{extra}]' ({exc})") from None


def require_opendp():
    """Import opendp's prelude, or raise a DpVerifyError saying how to install it."""
    return require("opendp.prelude", "opendp", "opendp 0.14-0.16")


def require_diffprivlib():
    """Import diffprivlib, or raise a DpVerifyError saying how to install it."""
    return require("diffprivlib", "diffprivlib", "diffprivlib 0.6 (and scikit-learn < 1.8)")


def require_pydp():
    """Import Google's DP library (python-dp's `pydp`), or raise a DpVerifyError saying how to
    install it."""
    return require("pydp", "pydp", "python-dp 1.1")


def require_pipelinedp():
    """Import PipelineDP (`pipeline_dp`), or raise a DpVerifyError saying how to install it."""
    return require("pipeline_dp", "pipelinedp", "pipeline-dp 0.3")


def require_tumult():
    """Import Tumult Core (`tmlt.core`), or raise a DpVerifyError saying how to install it."""
    return require("tmlt.core", "tumult", "tmlt.core 0.20 (which needs numpy < 2 on Python "
                   "3.11)", extra="tumult")
