"""Audit IBM's diffprivlib: its mechanisms (`from_mechanism`) and its bounded tools and models
(`from_tool`), with the claim read from the library object and neighbouring pairs built from
what the library says about its inputs.

    from diffprivlib.mechanisms import LaplaceBoundedDomain
    from dpverify.libraries import diffprivlib as dpl
    m = dpl.from_mechanism(LaplaceBoundedDomain(epsilon=1, sensitivity=1, lower=0, upper=4))
    dpverify.audit(m)

The modules of this package:

    mechanisms.py   from_mechanism: claim, neighbouring inputs and runner of a mechanism instance
    tools.py        from_tool: claim, neighbouring datasets and runner of a tool or model
    seeding.py      the instance's own kind of generator, drawing from the engine's `rng`

Seeding: a mechanism keeps its own kind of generator (SystemRandom, RandomState or Generator),
so the code path audited is the one the instance runs; only its draws come from the engine's
`rng`, with the same distribution as the library's own generator (see seeding.py). Tools and
models are given `random_state=RandomState(rng's bit generator)`, diffprivlib's documented way
to seed them. Either way the same seed gives the same outputs.

diffprivlib itself is imported on first use (it pulls in scikit-learn: about a second).
"""
# the adapter's public names (those in __all__, plus the runners, output readers and constants
# the adapter is built from), importable from the package as they were from the one module
from .mechanisms import (MAX_CATEGORICAL_PAIRS, UNIFORM_EPSILON, bounded_pairs,  # noqa: F401
                         from_mechanism, mechanism_claim, mechanism_pairs)
from .seeding import (EngineSystemRandom, SeededRandomise, SeededUtilitySelect,  # noqa: F401
                      SeededVectorMinimiser, generator_kind, seeded_view)
from .tools import (ADD_REMOVE_TOOLS, NEIGHBOURING, ToolRun, add_remove_pairs,  # noqa: F401
                    coefficients, from_tool, histogram_counts, naive_bayes_parameters, numbers,
                    replace_pairs, tool_pairs)

__all__ = ["from_mechanism", "from_tool", "mechanism_claim", "mechanism_pairs", "tool_pairs",
           "bounded_pairs", "replace_pairs", "add_remove_pairs", "EngineSystemRandom",
           "seeded_view", "generator_kind", "UNIFORM_EPSILON"]
