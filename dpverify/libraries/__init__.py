"""Adapters that turn the mechanisms DP libraries ship into audited `dpverify.Mechanism`s.

Each adapter reads the privacy claim from the library object itself, builds neighbouring pairs
from what the library says about its inputs, and declares where the noise comes from:
`randomness="own"` when the library's generator cannot be seeded (OpenDP), the engine's `rng`
when it can (diffprivlib's `random_state`). Import the one you need:

    from dpverify.libraries import opendp, diffprivlib

Each needs its library installed: ``pip install 'dpverify[libraries]'``.
"""
