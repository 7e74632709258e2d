"""Short, stable ids of how a witness's bound was certified: `Witness.certificate` and the
"certificate" of its JSON. The code compares these; the words a person reads are written in
`dpverify.evidence` (CERTIFICATE_WORDS, CERTIFICATE_DOCS), the only place text is made."""
from __future__ import annotations

TWO_BOUNDS = "two_bounds"   # ε ≥ ln((p_L − δ)/q_U): stats.certified_epsilon
RATIO_TEST = "ratio_test"   # conditional binomial test on Poisson counts: stats.ratio_epsilon_bound
COUPLED = "coupled"         # t-test on blocks of common random numbers: stats.coupled_epsilon_bound
BETTING = "betting"         # testing by betting while searching: pipeline.betting, certify.betting
CONFIRMING = "confirming"   # a violation's event bet on again over fresh runs: pipeline.confirm
BETTING_KINDS = (BETTING, CONFIRMING)  # certified by a wealth, not by one event's counts
CERTIFICATES = (TWO_BOUNDS, RATIO_TEST, COUPLED, BETTING, CONFIRMING)

# Documents written before the ids named a certificate by a phrase.
_PHRASES = {
    "two Clopper–Pearson bounds": TWO_BOUNDS,
    "conditional ratio test (Poisson sample sizes)": RATIO_TEST,
    "coupled t-test on blocks of common random numbers": COUPLED,
    "testing by betting (anytime-valid)": BETTING,
    "testing by betting on the witness's event over fresh runs (confirmation)": CONFIRMING,
}


def certificate_id(value: str) -> str:
    """The id of a certificate as a document names it: an id, or the phrase older documents
    used; anything else as it is."""
    return _PHRASES.get(value, value)
