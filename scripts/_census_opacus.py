"""Census cases for Opacus, read by scripts/libraries.py (scripts/_census_common.py says what a
census module offers): DP-SGD trainings through `make_private` with each loader, clipping
mode, loss reduction and accountant the installed Opacus offers, and the corners of the
dataset's size, built with `dpverify.libraries.opacus`. Each is the auditing literature's
worst case for one example: a one-weight model (Linear(1, 1) without bias, L1 loss, SGD at lr
1) on 38 examples whose gradient is 0 (input 0), and a canary whose gradient is +1 whatever
the weight (input 1, target -10^6), so that every batch holding it moves the weight by exactly
the clip norm. Batches of 4 (10 an epoch), σ = 1, clip norm 1, one epoch; the output is every
step's update of the weight, which the accountant covers. The size corners remove examples of
gradient 0, so what their pairs differ in is only the size Opacus sees.

`python scripts/_census_opacus.py --check` repeats the direct library check of the findings
(FINDINGS_CHECKED): Opacus's own figures for the two datasets of each size corner, from
make_private on plain DataLoaders, without dpverify.
"""
import sys
from functools import partial

from _census_common import S11, S13, S14, config

N, BATCH = 38, 4

SKIPPED = {
    "grad_sample_mode='ew'": "expanded weights refuse a batch of 0 examples (torch: 'Batch size "
        "must be positive, got 0'), which Poisson sampling draws: the training fails, it does "
        "not leak",
    "clipping='per_layer'": "the model has one parameter tensor, where per-layer clipping is "
        "flat clipping; the adapter's tests cover it on two tensors",
    "secure_mode=True": "its generator cannot be seeded, and it is the same sampler and noise "
        "drawn from another source",
}


CANARY = ([1.0], [-1e6])


def _data():
    import numpy as np
    return np.zeros((N, 1), np.float32), np.zeros((N, 1), np.float32)


def _model():
    import torch
    return torch.nn.Linear(1, 1, bias=False)


def _training(corner="user", **options):
    import torch
    from dpverify.libraries.opacus import from_training
    inputs, targets = _data()
    reduction = options.get("loss_reduction", "mean")
    options = {"noise_multiplier": 1.0, "max_grad_norm": 1.0, "output": "updates", **options}
    return from_training(_model, lambda p: torch.optim.SGD(p, lr=1.0),
                         torch.nn.L1Loss(reduction=reduction), inputs, targets,
                         batch_size=BATCH, corner=corner, canary=CANARY, **options)


def _case(name: str, samples: int, **options):
    """A census row: `name` says the method and, for a size corner, which (the findings'
    texts are keyed by it); the configuration column shows the other arguments."""
    if "corner" in options:
        name = f"{name} ({options['corner']} corner)"
    shown = {k: v for k, v in options.items() if k != "corner"}
    return (name, config(shown), partial(_training, **options), samples)


CASES = [
    _case("make_private", S14, accountant="prv"),
    _case("make_private", S14, accountant="rdp"),
    _case("make_private", S14, accountant="gdp"),
    _case("make_private, shuffled", S14, accountant="prv", loader="shuffled"),
    # ghost clipping trains without the adapter's stacked layer: one training a run (~8 ms)
    _case("make_private, ghost clipping", S11, accountant="prv", grad_sample_mode="ghost"),
    _case("make_private", S14, accountant="prv", loss_reduction="sum"),
    _case("make_private_with_epsilon", S14, accountant="prv", target_epsilon=2.0,
          target_delta=1e-5, noise_multiplier=None),
    _case("make_private", S14, accountant="prv", corner="batches"),
    _case("make_private", S14, accountant="prv", corner="normalisation"),
    _case("make_private", S14, accountant="prv", corner="tiny"),
    _case("make_private, shuffled", S14, accountant="prv", loader="shuffled", corner="batches"),
    _case("make_private, sum", S13, accountant="prv", loss_reduction="sum", corner="batches"),
]


def cases() -> list:
    """(name, configuration, build, samples) for every census case."""
    return list(CASES)


_SUBSAMPLED = ("Poisson-subsampled DP-SGD at δ = 1e-5: the accountant's ε is carried by events "
               "about as rare as δ (the canary drawn into a batch whose noise falls far out), "
               "which 2^14 runs per input do not reach; the numpy model of the same epoch "
               "(reports/dpsgd.md) certifies a third of its accountant's ε at that δ too, and "
               "the adapter's tests flag halved noise on full batches (q = 1), where the tail "
               "is not needed")
HALF_CLAIM_NOTES = {"make_private": _SUBSAMPLED, "make_private_with_epsilon": _SUBSAMPLED,
                    "make_private, shuffled": _SUBSAMPLED + " (here with the canary in exactly "
                    "one batch of a shuffled epoch, judged against the Poisson accountant)"}

_STEPS = ("Opacus 1.6 sets the steps of an epoch to len(loader) = ceil(N/B) and the sampling "
          "rate to q = 1/len(loader) from the dataset: 36 examples train 9 steps at q = 1/9, 37 "
          "train 10 at q = 1/10 (`python scripts/_census_opacus.py --check`: make_private on "
          "plain DataLoaders, no dpverify code). A dataset one example larger releases one "
          "model more, so under add-or-remove neighbours no finite ε covers the trajectory; "
          "the accountant's ε holds for N (hence q and the steps) public, which the "
          "add-or-remove relation it claims does not give")
FINDINGS_CHECKED = {
    "make_private, ghost clipping": "Opacus 1.6's ghost clipping "
        "(`DPTensorFastGradientClipping.backward`) rescales the per-sample losses by the "
        "clipping coefficients as `coeff * loss_per_sample`: coeff has shape (n,) and a "
        "regression loss with reduction='none' has shape (n, 1), so the product broadcasts to "
        "n × n and every example's gradient is scaled by the sum of all n coefficients instead "
        "of its own. Checked outside dpverify (`python scripts/_census_opacus.py --check`, "
        "plain make_private calls, no noise): 8 examples, one of gradient 10 and seven of "
        "gradient 0 (coefficient 1 each), clip norm 1: the update is 1.0 with hooks and 71.0 "
        "with ghost clipping, 10 × (7 + 0.1); with CrossEntropyLoss (per-sample loss of shape "
        "(n,)) both give the same update",
    "make_private (batches corner)": _STEPS,
    "make_private, shuffled (batches corner)": _STEPS + " (the same with a shuffled loader)",
    "make_private, sum (batches corner)": _STEPS + " (the same with loss_reduction='sum', "
        "which has no divisor to change)",
    "make_private (normalisation corner)": "With loss_reduction='mean' Opacus 1.6 divides the "
        "noisy gradient sum by expected_batch_size = int(N·q), from the dataset's size: 4 for "
        "36 examples and 3 for 35, at the same 9 steps and q = 1/9 (`python "
        "scripts/_census_opacus.py --check`, make_private on plain DataLoaders). On examples "
        "of gradient 0 each update is then N(0, (σC/4)²) against N(0, (σC/3)²); the exact ε "
        "at δ = 1e-5 between the two 9-step laws is 12.03 (the same script, from chi-square "
        "tails, no dpverify code), against the claim",
    "make_private (tiny corner)": "One example against the same with the canary: q = 1 and "
        "one step for both, but expected_batch_size = int(N·q) is 1 against 2 (`python "
        "scripts/_census_opacus.py --check`), so the update is N(0, 1) against N(−1/2, 1/4) "
        "(σ = C = lr = 1); the exact ε at δ = 1e-5 between the two is 34.7 (the same script, "
        "by numerical integration, no dpverify code), against the claim",
}


def opacus_figures(size: int, **options) -> dict:
    """What Opacus itself derives for a dataset of `size` examples (no dpverify code): its
    sampling rate, steps per epoch and expected batch size, from make_private on a plain
    DataLoader, as its tutorials write it."""
    import torch
    from opacus import PrivacyEngine
    from torch.utils.data import DataLoader, TensorDataset
    inputs, targets = _data()
    model = _model()
    loader = DataLoader(TensorDataset(torch.tensor(inputs[:size]), torch.tensor(targets[:size])),
                        batch_size=BATCH, shuffle=options.get("loader") == "shuffled")
    _, optimizer, loader = PrivacyEngine(accountant="prv").make_private(
        module=model, optimizer=torch.optim.SGD(model.parameters(), lr=1.0), data_loader=loader,
        noise_multiplier=1.0, max_grad_norm=1.0,
        poisson_sampling=options.get("loader", "poisson") == "poisson")
    return {"examples": size, "sample_rate": 1 / len(loader), "steps": len(loader),
            "expected_batch_size": optimizer.expected_batch_size}


def check_findings() -> dict:
    """Opacus's figures on both datasets of each size corner (pairs.py: batches 36 and 37,
    normalisation 36 and 35, tiny 1 and 2), and the exact ε at δ = 1e-5 of the updates those
    figures imply (no dpverify code): only noise moves the weight on examples of gradient 0,
    N(0, (σC/E)²) a step, the canary adds -1/E in the one step of the tiny corner."""
    figures = {size: opacus_figures(size) for size in (35, 36, 37, 1, 2)}
    normal = [1.0 / figures[size]["expected_batch_size"] for size in (36, 35)]
    tiny = [(0.0, 1.0 / figures[1]["expected_batch_size"]),
            (-1.0 / figures[2]["expected_batch_size"], 1.0 / figures[2]["expected_batch_size"])]
    return {"figures": figures,
            "normalisation epsilon": isotropic_gaussians_epsilon(*normal, figures[36]["steps"]),
            "tiny epsilon": gaussians_epsilon(*tiny[0], *tiny[1]),
            "batches": f"{figures[36]['steps']} steps against {figures[37]['steps']}: the "
                       "longer training has an update the shorter has not"}


def _epsilon_of(delta_at, delta: float = 1e-5) -> float:
    """The smallest ε with delta_at(ε) ≤ δ (delta_at falls in ε), by bisection."""
    from scipy.optimize import brentq
    if delta_at(0.0) <= delta:
        return 0.0
    return brentq(lambda e: delta_at(e) - delta, 0.0, 50.0, xtol=1e-6)


def isotropic_gaussians_epsilon(sd_a: float, sd_b: float, dims: int) -> float:
    """ε at δ = 1e-5 between N(0, sd_a² I) and N(0, sd_b² I) in `dims` dimensions, both
    orders: the log-likelihood ratio is a function of r² = |x|², chi-square under each."""
    import numpy as np
    from scipy.stats import chi2

    def delta_at(eps, a=sd_a, b=sd_b):
        worst = 0.0
        for p, q in ((a, b), (b, a)):
            # ln p/q = dims·ln(q/p) − r²/2·(1/p² − 1/q²) > eps  ⇔  r² on one side of t
            slope = 0.5 * (1 / p**2 - 1 / q**2)
            t = (dims * np.log(q / p) - eps) / slope
            if slope > 0:   # the ratio falls in r²: the event is r² < t
                hit = chi2.cdf(t / p**2, dims) - np.exp(eps) * chi2.cdf(t / q**2, dims)
            else:
                hit = chi2.sf(t / p**2, dims) - np.exp(eps) * chi2.sf(t / q**2, dims)
            worst = max(worst, hit)
        return worst
    return _epsilon_of(delta_at)


def gaussians_epsilon(mean_a: float, sd_a: float, mean_b: float, sd_b: float) -> float:
    """ε at δ = 1e-5 between N(mean_a, sd_a²) and N(mean_b, sd_b²), both orders, by
    integrating the hockey-stick divergence numerically."""
    import numpy as np
    from scipy.integrate import quad
    from scipy.stats import norm

    def delta_at(eps):
        worst = 0.0
        for (m1, s1), (m2, s2) in (((mean_a, sd_a), (mean_b, sd_b)),
                                   ((mean_b, sd_b), (mean_a, sd_a))):
            f = lambda x: max(norm.pdf(x, m1, s1) - np.exp(eps) * norm.pdf(x, m2, s2), 0.0)
            lo, hi = min(m1, m2) - 12 * max(s1, s2), max(m1, m2) + 12 * max(s1, s2)
            worst = max(worst, quad(f, lo, hi, limit=400, points=[m1, m2])[0])
        return worst
    return _epsilon_of(delta_at)


def ghost_update(mode: str, examples: int = 8, gradient: float = 10.0) -> float:
    """The weight's move in one noiseless full-batch step of plain Opacus (no dpverify code):
    one example of gradient `gradient` (L1 loss, input `gradient`, target -10^6), the others of
    gradient 0, clip norm 1, sum reduction, grad_sample_mode `mode`."""
    import torch
    from opacus import PrivacyEngine
    from torch.utils.data import DataLoader, TensorDataset
    inputs = torch.zeros(examples, 1)
    inputs[0, 0] = gradient
    model = torch.nn.Linear(1, 1, bias=False)
    torch.nn.init.zeros_(model.weight)
    loader = DataLoader(TensorDataset(inputs, torch.full((examples, 1), -1e6)),
                        batch_size=examples)
    made = PrivacyEngine(accountant="prv").make_private(
        module=model, optimizer=torch.optim.SGD(model.parameters(), lr=1.0), data_loader=loader,
        noise_multiplier=0.0, max_grad_norm=1.0, grad_sample_mode=mode,
        criterion=torch.nn.L1Loss(reduction="sum"), loss_reduction="sum",
        poisson_sampling=False)
    model, optimizer = made[0], made[1]
    criterion, loader = (made[2], made[3]) if len(made) == 4 else (
        torch.nn.L1Loss(reduction="sum"), made[2])
    for x, y in loader:
        optimizer.zero_grad()
        criterion(model(x), y).backward()
        optimizer.step()
    return -float(next(model.parameters()).detach())


if __name__ == "__main__" and "--check" in sys.argv:
    for key, value in check_findings().items():
        print(key, value)
    print("ghost clipping: update", ghost_update("ghost"), "against hooks", ghost_update("hooks"))
