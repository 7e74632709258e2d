"""One (ε, δ) audit as a pipeline of named stages (docs/method.md, "The audit, stage by stage").

    for each stage j:  its kind (search, tune, last) → draw search rows (ordinary audits: in
                       betting rounds, `betting.bet_and_draw`; a proved violation makes the
                       stages left a measurement run's, or ends the audit with proof_only) →
                       choose events → prepare (pilot, certificates) → count on fresh runs →
                       record (witness, tracked grids)
    then:              confirm (confirm=True) → illustrate the witness → the result

`AuditRun` owns the run's state; `dpverify.audit` builds one from validated options
(`pipeline.request.AuditRequest`) and calls `run()`. The statistical argument, stated once: an
ordinary audit's betting test (`pipeline.betting`) reaches 1/α_bet with probability at most
α_bet under the claim, whenever it stops (Ville's inequality, docs/theory.md §2.12); the last
stage's events are chosen on search samples and on counts of earlier stages' samples only, then
counted on fresh samples, each with its share of the last stage's α (docs/theory.md §2); by the
union bound the chance that any reported bound exceeds the true ε is at most α = 1 − confidence.
"""
from __future__ import annotations

import math
import time
from dataclasses import replace
from typing import NamedTuple

from .. import pairs as pairs_module
from ..attacks import (Candidate, Probe, Tuning, curve_grid, pooled_tuning, tail_rungs,
                       tuning_grid, tuning_index)
from ..attacks.planning import TAIL_RUNGS
from ..certify import (Certificate, PairPlan, betting_witness, certifying_counts,
                       choose_coupling, curve_counts, pilot, predicted_resolution, witness_of)
from ..certify.evaluator import PROBE_STRIDE
from ..certify.pilot import coupled_everywhere, seconds_per_run
from ..certify.reach import LeakGates
from ..sampling.illustration import with_examples
from ..mechanism import as_mechanism
from ..progress import Progress
from ..result import AuditResult, StageSummary, Witness
from ..sampling import Sampler, TimeBudgetSpent, check_uses_rng
from ..stats import (MIN_COUPLED_HITS_PER_BLOCK, coupled_block_size,
                     paired_variance_from_blocks)
from .betting import BETTING_SHARE, BettingTest, bet_and_draw
from .confirm import Confirming
from .outcome import ExitReason, audit_result, standing_witness
from .request import AuditRequest, build_request
from .schedule import (Schedule, StageKind, StagePlan, measurement_size, resolution_size,
                       samples_for_seconds, stage_key, stage_kind)
from .search import Search
from .selection import (by_promise, carry_over, concentrate, distinct, distinct_bets, hedged,
                        least_hedge_hits, one_sided_hedges, same_events_merged,
                        spread_over_pairs)
from .settings import DEFAULT_SETTINGS, Settings


RESOLUTION_AIM = 0.9  # a resolution target is aimed at claim + this share of its margin


class StageEvents(NamedTuple):
    """What a stage counts: `events` to certify at `level` per bound (each also at its curve
    grid in `curves`, or None), `probes` whose grids are counted for the next stage, and the
    pairs drawn on shared seeds (`coupled`, blocks of `block` runs)."""

    events: list
    curves: list
    probes: list
    level: float
    coupled: frozenset
    block: int


class AuditRun:
    """The state of one (ε, δ) audit and its stages; `run()` returns the `AuditResult`. Every
    attribute is set here; the pairs, the search and the sampler exist once `run()` has chosen
    the pairs and opened the sampler."""

    def __init__(self, mech, request: AuditRequest, settings: Settings = DEFAULT_SETTINGS,
                 started: float | None = None):
        # the audit's floating_point decides how outputs are encoded (exact floats or real
        # values, sampling/encoding.py), in every chunk and the illustration alike
        if mech.floating_point != request.floating_point:
            mech = replace(mech, floating_point=request.floating_point)
        self.mech, self.request, self.settings = mech, request, settings
        self.started = time.perf_counter() if started is None else started
        self.K = request.certify_per_stage
        # an ordinary audit tests by betting on its search rows with half of α, anytime-valid,
        # and certifies its last stage with the other half; a measurement run certifies only
        alpha = 1.0 - request.confidence
        self.schedule = Schedule(request.samples, request.confidence, request.stop_early, self.K,
                                 settings.first_stage, settings.growth,
                                 betting_alpha=alpha * BETTING_SHARE if request.stop_early
                                 else 0.0)
        self.bar = Progress(mech.name, len(self.schedule), enabled=request.progress)
        self.betting = (BettingTest(request.epsilon, request.delta, alpha * BETTING_SHARE,
                                    progress=self.bar) if request.stop_early else None)
        # common random numbers (paired search and tuning, the coupled certificate) need M(D)
        # and M(D') to draw from one seed; a mechanism with its own randomness cannot
        self.shared_seeds = not mech.draws_own_randomness
        self.paired = settings.paired_search and self.shared_seeds
        self.events: list[Candidate] = []   # the stage's events; kept while search is frozen
        self.pool: list[Candidate] = []     # this stage's candidates, best first
        self.one_sided: list[Candidate] = []  # ... and its events seen under one input only
        self.tuning_runs = 0  # outputs per input the latest tracked grids were counted on
        self.leak_gates: LeakGates | None = None  # what a leak had to pass (the last stage's)
        self.tracked: list[Candidate] = []  # candidates with grid counts from the last stage
        self.stages: list[StageSummary] = []
        self.best: Witness | None = None
        self.best_event: Candidate | None = None
        self.best_curve: dict | None = None
        self.exit = ExitReason.FINISHED
        self.first_tuning: int | None = None  # the index of the first stage that only tuned
        self.measuring_from: int | None = None  # the stage a proved violation's measuring began
        self.proof_runs: int | None = None  # runs drawn when the betting test proved it
        self.proof: Witness | None = None   # ... and its witness (the wealth of the bets)
        self.confirming: Confirming | None = None  # audit(confirm=True) on a violation
        self.sized_for_resolution = False  # the last stage was sized for audit(resolution=)
        self.pair_list: list = []               # set by run(): the pairs audited
        self.search: Search | None = None       # ... their search samples and models
        self.sampler: Sampler | None = None     # ... and the sampler drawing their runs

    # ---- the run --------------------------------------------------------------------------

    def run(self) -> AuditResult:
        """Choose the pairs, check the mechanism draws from `rng`, run the stages (Ctrl-C keeps
        what was certified so far) and assemble the result."""
        r = self.request
        deadline = None if r.time_limit is None else time.monotonic() + r.time_limit
        self.pair_list, search_runs = self._pairs(deadline)
        # seconds: a measurement run takes the size a pilot says the budget buys
        # (`_size_to_budget`); an ordinary audit stops at the first chunk past it, with what
        # its test by betting has proven
        stop_after = (r.seconds - (time.perf_counter() - self.started)
                      if r.seconds is not None and r.stop_early else None)
        self.search = Search(len(self.pair_list), r.floating_point, self.paired, self.settings)
        with Sampler(self.mech, self.pair_list, r.seed, n_jobs=r.n_jobs, backend=r.backend,
                     deadline=deadline, progress=self.bar, stop_after=stop_after) as sampler:
            self.sampler = sampler
            try:
                for p in range(len(self.pair_list)):
                    for side in (0, 1):
                        check_uses_rng(sampler, p, side)
                if r.seconds is not None and not r.stop_early:
                    self._size_to_budget()
                self._run_stages()
                if (r.confirm and self.best is not None
                        and self.best.epsilon_lower_bound > r.epsilon):
                    self.confirming = Confirming(r, self.pair_list, self.best_event, self.best,
                                                 self.paired, self._stream_counts())
                    if self._measured_past_claim():
                        self.confirming.by_measurement()
                    else:
                        self.confirming.run(sampler)
            except KeyboardInterrupt:
                self.exit = ExitReason.INTERRUPTED  # keep what was certified so far
            except TimeBudgetSpent:
                self.exit = ExitReason.BUDGET_SPENT  # the betting test holds at any stop
            finally:
                self.bar.close()
            runs = sampler.runs
        self._take_betting_evidence()
        confirmation = self.confirming.result if self.confirming is not None else None
        lower, best = standing_witness(self.best, confirmation)
        best = self._illustrated(best, int(runs.max()))
        return audit_result(self, runs, search_runs, lower, best, confirmation)

    def _run_stages(self) -> None:
        """The data flow, once per stage (a proof may shorten the schedule as it runs)."""
        j = 0
        while j < len(self.schedule):
            j += 1
            stage = self.schedule.stage(j)
            kind = stage_kind(stage, self.search.frozen)
            if kind is StageKind.TUNE and self.first_tuning is None:
                self.first_tuning = j
            key = stage_key(kind, j, self.first_tuning)
            self.bar.start_stage(j, self.schedule.sizes)
            probes = self._choose_events(stage)
            if self.measuring_from == j:  # the proof came in this stage: it now measures
                stage = self.schedule.stage(j)
                key = stage_key(stage_kind(stage, False), j, self.first_tuning)
            elif self._proved():
                self.exit = ExitReason.VIOLATION
                return
            stage, plan = self._prepare(stage, probes, key)
            counted = self._count(stage, plan, key)
            self._record(stage, plan, counted)
            if self._violation_found():
                self.exit = ExitReason.VIOLATION
                return
            self._fit_to_resolution(stage)
        if self.measuring_from is not None:
            self.exit = ExitReason.VIOLATION

    def _pairs(self, deadline):
        """The neighbouring pairs, and the runs an input search spent choosing them. A search
        draws from seed streams of its own, so the pairs are fixed before any certifying sample
        exists (docs/method.md, "Input search")."""
        given, r = self.request.pairs, self.request
        if not isinstance(given, pairs_module.PairSearch):
            return pairs_module.normalize(given), 0
        from ..input_search import find_pairs
        found = find_pairs(self.mech, given, r.seed, r.n_jobs, r.backend, deadline, r.delta,
                           self.schedule.final_level, self.schedule.final_size)
        return pairs_module.normalize(found), found.runs

    def _size_to_budget(self) -> None:
        """`--measure --seconds S`: the size the time left buys, from a pilot of the mechanism's
        cost (`schedule.samples_for_seconds`); the clock's, never an output's (docs/method.md,
        "Time budgets"), so the bound keeps its confidence."""
        r = self.request
        per_run = seconds_per_run(self.sampler)
        left = r.seconds - (time.perf_counter() - self.started)
        samples = samples_for_seconds(left, per_run, most=r.samples,
                                      least=self.settings.first_stage)
        self.schedule = self.schedule.with_samples(samples)

    def _fit_to_resolution(self, stage: StagePlan) -> None:
        """audit(resolution=): once search has converged and the tracked grids predict that a
        last stage of at most `samples` runs reaches the target on one of its events, the next
        stage is the last, of the smallest such size (`schedule.resolution_size`), with such an
        event beside its usual picks (`_with_sized_event`). The size is a function of runs drawn
        before the last stage only, so its certificates keep their level; the test by betting
        holds at any stop (docs/method.md, "Passes that stop at the resolution asked")."""
        r, j = self.request, stage.index
        # only once search has converged by its own rule: a target shortens the stages that
        # would only tune and certify, never the search that finds a violation's event
        if (r.resolution is None or stage.last or self.measuring_from is not None
                or not self.tracked or not self.search.frozen):
            return

        def reaches(n: int) -> bool:
            carried = carry_over(self.tracked, n, r.delta, self.schedule.final_level,
                                 self.sampler.chunk_size)
            return bool(self._within_target(carried, n))

        size = resolution_size(reaches, self.settings.first_stage, self.schedule.sizes[-1])
        if size is not None:
            self.schedule = self.schedule.ending_after(j, size)
            self.sized_for_resolution = True

    def _with_sized_event(self, picked: list[Candidate], carried: list[Candidate]):
        """A resolution-sized last stage's events: the usual picks (the likeliest violations
        first), and, when none of them is predicted to reach the target, the best one that is,
        in a slot of its own (α is split over every event certified)."""
        n = self.schedule.final_size
        sized = self._within_target(carried, n)
        if not sized or any(c is s for c in picked for s in sized):  # identity: one list
            return picked
        return picked + sized[:1]

    def _within_target(self, carried: list[Candidate], n: int) -> list[Candidate]:
        """Of candidates re-tuned for a last stage of n runs, those whose tuning rates predict a
        resolution within the target there (`certify.predicted_resolution`, at the last stage's
        level); one-sided hedges are for leaks, whose reach the pass states apart, not for it.
        The target is aimed a little inside (RESOLUTION_AIM): the rates come from fewer runs
        than the last stage's."""
        r = self.request
        target = r.epsilon + RESOLUTION_AIM * (r.resolution - 1.0) * r.epsilon

        def within(c: Candidate) -> bool:
            t, i = c.tuning, tuning_index(c)
            return predicted_resolution(t.k_p[i] / t.m_p, t.k_q[i] / t.m_q, n, r.epsilon,
                                        r.delta, self.schedule.final_level) <= target
        return [c for c in carried if not c.one_sided and within(c)]

    # ---- choose events --------------------------------------------------------------------

    def _choose_events(self, stage: StagePlan) -> list[Probe]:
        """Set the stage's events and return its probes (candidates whose threshold grids this
        stage counts for the next). Once search has converged, the tracked counts choose the
        thresholds for the final size and later stages certify those events; a measurement run
        counts their grids again at each stage before its last."""
        if self.search.frozen and self.tracked:
            carried = distinct(by_promise(carry_over(
                self.tracked, self.schedule.final_size, self.request.delta, stage.level,
                self.sampler.chunk_size)))
            picked = distinct_bets(carried, self.search.data, self.K)
            if self.sized_for_resolution:
                picked = self._with_sized_event(picked, carried)
            self.events = picked
            self.tracked = []
            if stage.measuring and not stage.final_measurement:
                spread = spread_over_pairs(carried, self.settings.tracked_per_pair)
                return [Probe(c, c.tuning[0]) for c in spread[:self.settings.tracked]]
            return []
        if self.search.frozen:
            return []  # the events stay those of the stage before
        self._search(stage)
        stage = self.schedule.stage(stage.index)  # a proof may have made it a measurement
        return [] if stage.last or self._proved() else self._probes()

    def _search(self, stage: StagePlan) -> None:
        """Stage j's search: the events for its size (for the next stage's, if it certifies
        nothing), among the tracked candidates re-tuned and the freshly searched ones."""
        j, search = stage.index, self.search
        cap = search.begin_stage()
        if self.betting is None or self.betting.violation:
            search.draw(self.sampler, j, stage.size, cap)
        elif bet_and_draw(self.betting, search, self.sampler, j, stage.size, cap):
            self._record_betting(j)
            if self.request.proof_only:
                return  # a violation is proved: nothing left to choose
            self._begin_measurement(stage)
            stage = self.schedule.stage(j)
        sizes = self.schedule.sizes
        planned = stage.size if stage.certifies else sizes[min(j, len(sizes) - 1)]
        carried = carry_over(self.tracked, planned, self.request.delta, stage.level,
                             self.sampler.chunk_size)
        chosen = search.choose(self.sampler, stage.size, sizes[-1], self.request.delta,
                               stage.level, self.K, planned, cap)
        pool = carried + chosen.candidates
        search.conclude(j, pool, chosen.events[0] if chosen.events else None)
        self.pool = distinct(by_promise(pool))
        self.one_sided = chosen.one_sided
        picked = (hedged(carried, chosen.candidates, self.K)
                  if stage.final_measurement and carried else self.pool[:self.K])
        self.events = picked

    def _probes(self) -> list[Probe]:
        """The best distinct candidates, spread over pairs (`spread_over_pairs`), and the best
        events seen under one input only (`one_sided_hedges`), each with a grid of thresholds
        to count."""
        data, settings = self.search.data, self.settings
        spread = spread_over_pairs(self.pool, settings.tracked_per_pair)
        probes = same_events_merged(spread, data, settings.tracked, families=True)
        probes += one_sided_hedges(self.one_sided, probes, data, settings.one_sided_tracked,
                                   self.request.epsilon, self.request.delta)
        return [Probe(c, c.tuning[0] if c.tuning is not None else tuning_grid(c, *data[c.pair]))
                for c in probes if c.tuning is not None or c.pair in data]

    # ---- prepare: pilot and certificates --------------------------------------------------

    def _prepare(self, stage: StagePlan, probes: list[Candidate], key: int):
        """The stage's events with their certificates, chosen on a pilot drawn apart; a
        measurement run's last stage first puts all of α on one event if it clearly leads."""
        data, events = self.search.data, self.events
        if stage.final_measurement:
            events = concentrate(same_events_merged(distinct(events), data), stage.size,
                                 self.request.delta, stage.alpha / 2, self.sampler.chunk_size,
                                 self.settings.concentrate_z)
            events = self._with_tail_rungs(stage, events)
        # the stage's α is split over the events it really certifies (union bound)
        level = stage.alpha / (2 * len(events)) if stage.certifies and events else stage.level
        rates = self._pilot(stage, events, key)
        events, coupled, block = self._coupling(stage, events, probes, rates, level)
        self.events = events
        curves = [curve_grid(c, *data[c.pair]) if self.request.curves and c.pair in data
                  else None for c in events]
        return stage, StageEvents(events, curves, probes, level, coupled, block)

    def _with_tail_rungs(self, stage: StagePlan, events: list[Candidate]) -> list[Candidate]:
        """The last stage's events with rarer thresholds of the leading one's family beside it,
        where its tuning counts show the ratio still climbing (`attacks.tail_rungs`). A leading
        one-sided hedge (no hit under Q: no climb to measure) passes the rungs to the next
        event."""
        if not events or not self.settings.tail_rungs:
            return events
        leading = next((c for c in events if not c.one_sided), events[0])
        level = stage.alpha / (2 * (len(events) + TAIL_RUNGS))
        return events + tail_rungs(leading, stage.size, self.request.delta, level,
                                   self.sampler.chunk_size)

    def _pilot(self, stage: StagePlan, events: list[Candidate], key: int) -> dict:
        """The pilot's rates of a certifying stage's events (`certify.pilot.pilot`)."""
        if not (stage.certifies and events):
            return {}
        return pilot(self.sampler, events, key, stage.size, self.request.delta,
                     self.shared_seeds)

    def _coupling(self, stage, events, probes, rates, level):
        """(events, coupled pairs, block): a certifying stage's certificates from the pilot;
        a stage that certifies nothing counts its tracked grids in paired blocks, on which a
        rare event's ratio is known far better (`attacks.retune`)."""
        if stage.certifies and self.shared_seeds:
            s = self.settings
            # the coupled t-test's condition (stats.MIN_COUPLED_HITS_PER_BLOCK) is the one the
            # planner assumes too; "never" makes it unreachable
            min_hits = math.inf if s.coupling == "never" else MIN_COUPLED_HITS_PER_BLOCK
            events, pairs, block = choose_coupling(events, rates, stage.size,
                                                   self.sampler.chunk_size, self.request.delta,
                                                   level, min_hits, s.min_coupled_block_runs)
            if s.coupling == "always":
                return coupled_everywhere(events, block)
            return events, pairs, block
        if self.paired and probes:
            block = coupled_block_size(stage.size, self.sampler.chunk_size,
                                       self.settings.min_tuning_block_runs)
            return events, frozenset(c.pair for c in probes) if block else frozenset(), block
        return events, frozenset(), 0

    # ---- count and record -----------------------------------------------------------------

    def _count(self, stage: StagePlan, plan: StageEvents, key: int):
        """Count the stage's events on its fresh sample, drawn under stage key `key`. A stage
        that certifies nothing draws only what its probes need, and counts their grids on every
        output."""
        events, curves = (plan.events, plan.curves) if stage.certifies else ([], [])
        return certifying_counts(self.sampler, self.request.seed, events, plan.probes, key,
                                 stage.size, stride=PROBE_STRIDE if stage.certifies else 1,
                                 coupled=plan.coupled, block=plan.block, curves=curves)

    def _record(self, stage: StagePlan, plan: StageEvents, counted) -> None:
        """Witnesses of the counted events (the best one kept) and the tracked grids."""
        stage_best = -math.inf
        self.tracked = []
        for pair_plan in counted.by_pair.values():
            for i in range(len(pair_plan.events)):  # a stage that certifies nothing has none
                w = self._certify(stage, plan, counted, pair_plan, i)
                stage_best = max(stage_best, w.epsilon_lower_bound)
            for k in range(len(pair_plan.probes)):
                self.tracked.append(self._tuned(pair_plan, k, counted))
        self.stages.append(StageSummary(stage.index, stage.size, stage.alpha,
                                        len(plan.events) if stage.certifies else 0, stage_best))
        if self.tracked:  # the fewest outputs a tracked grid saw: the next picks' tuning sample
            self.tuning_runs = min(int(counted.counts[c.pair, c.direction][-1])
                                   for c in self.tracked)
        if stage.last and stage.certifies:
            self.leak_gates = self._leak_gates(stage, plan)

    def _leak_gates(self, stage: StagePlan, plan: StageEvents) -> LeakGates:
        """What the last stage and the samples before it spent, as the gates a leak must pass
        (`certify.reach`). A last stage that certifies tracked events (search froze before it)
        picked them on the tuning sample; one that searched picked on the search sample. The
        least-searched pair sets the search's size; with several pairs a hedge may fall on an
        untracked pair, and needs the hits `least_hedge_hits` asks of one."""
        r, pairs = self.request, len(self.pair_list)
        expected = sorted(c.expected_epsilon for c in plan.events)
        competitor = ((expected[0] if len(expected) >= self.K else expected[-1]) if expected
                      else -math.inf)
        search = int(self.search.kept.min())
        k_select = least_hedge_hits(r.epsilon, r.delta, search // 2, pairs, probed=pairs == 1)
        return LeakGates(search=search, tuning=self.tuning_runs if self.search.frozen else 0,
                         certify=stage.size, level=plan.level, competitor=competitor,
                         claim=r.epsilon, delta=r.delta, k_select=k_select)

    @staticmethod
    def _tuned(pair_plan: PairPlan, k: int, counted) -> Candidate:
        """Probe k's candidate with its grid counts (and their paired variance, where they were
        counted in paired blocks), added to those of the stages before that counted the same
        grid (`pooled_tuning`)."""
        probe = pair_plan.probes[k]
        cand, span = probe.candidate, pair_plan.probe_span(k)
        key, other = (cand.pair, cand.direction), (cand.pair, 1 - cand.direction)
        g_p, g_q = counted.counts[key][span], counted.counts[other][span]
        # outputs the grids saw under each input (the counts' last entry)
        m_p, m_q = int(counted.counts[key][-1]), int(counted.counts[other][-1])
        variance = None
        if key in counted.blocks:
            b_p, b_q = counted.blocks[key][:, span], counted.blocks[other][:, span]
            variance = paired_variance_from_blocks(b_p, b_q)
        fresh = Tuning(probe.grid, g_p, g_q, m_p, m_q, variance)
        return replace(cand, tuning=pooled_tuning(cand.tuning, fresh))

    def _certify(self, stage: StagePlan, plan: StageEvents, counted, pair_plan: PairPlan,
                 i: int) -> Witness:
        """Event i of its pair's plan, certified; kept as the best witness if it is."""
        cand = pair_plan.events[i]
        key, other = (cand.pair, cand.direction), (cand.pair, 1 - cand.direction)
        k_p, k_q = counted.counts[key][i], counted.counts[other][i]
        n_p, n_q = counted.runs[key], counted.runs[other]
        blocks = ((counted.blocks[key][:, i], counted.blocks[other][:, i], plan.block)
                  if cand.certificate is Certificate.COUPLED else None)
        w = witness_of(self.pair_list, cand, k_p, n_p, k_q, n_q, self.request.delta, plan.level,
                       stage.index, blocks)
        if self.best is None or w.epsilon_lower_bound > self.best.epsilon_lower_bound:
            self.best, self.best_event = w, cand
            self.best_curve = curve_counts(pair_plan, i, counted.counts[key],
                                           counted.counts[other], n_p, n_q,
                                           plan.level / (1.0 - self.request.confidence))
        return w

    def _record_betting(self, j: int) -> None:
        """The betting test's violation as the audit's witness (`certify.betting_witness`)."""
        self.best, self.best_event = betting_witness(self.pair_list, self.betting, j)
        self.proof, self.proof_runs = self.best, int(self.sampler.runs.sum())
        self.stages.append(StageSummary(j, 0, self.betting.alpha, 0,
                                        self.best.epsilon_lower_bound))

    def _stream_counts(self):
        """The betting test's joint counts of the witness's pair and order, if it has them."""
        event = self.best_event
        stream = (self.betting.streams.get((event.pair, event.direction))
                  if self.betting is not None and event is not None else None)
        return stream.counts if stream is not None else None

    def _violation_found(self) -> bool:
        """An ordinary audit stops at the first stage whose bound exceeds the claim (one that
        measures a proved violation, at its last)."""
        return (self.request.stop_early and self.measuring_from is None
                and self.best is not None and self.best.epsilon_lower_bound > self.request.epsilon)

    def _proved(self) -> bool:
        """Whether the betting test has proved a violation that is not being measured."""
        return (self.betting is not None and self.betting.violation
                and self.measuring_from is None)

    def _measured_past_claim(self) -> bool:
        """Whether a proved violation's measurement, certified on runs drawn after the proof,
        itself puts ε past the claim: the confirmation it would have drawn, at no extra runs
        (docs/method.md, "Marginal violations and confirmation")."""
        return (self.measuring_from is not None and self.exit is ExitReason.VIOLATION
                and self.proof is not None and self.best is not self.proof
                and self.best.epsilon_lower_bound > self.request.epsilon)

    def _begin_measurement(self, stage: StagePlan) -> None:
        """After a proof in stage j's search, the schedule ends where the violation is measured
        (`schedule.measurement_size`), and its stages from j on are a measurement run's."""
        s = self.settings
        proof_runs = int(self.sampler.runs.max())
        size = measurement_size(self.schedule.sizes, proof_runs, stage.size, s.measure_floor,
                                s.measure_multiple)
        self.schedule = self.schedule.measuring(size)
        self.measuring_from = stage.index

    # ---- result ---------------------------------------------------------------------------

    def _take_betting_evidence(self) -> None:
        """Stopped before its last stage, an ordinary audit stands on the bets' evidence."""
        if self.best is None and self.betting is not None and self.betting.streams:
            self.best, self.best_event = betting_witness(self.pair_list, self.betting,
                                                         len(self.stages))

    def _illustrated(self, best: Witness | None, samples_per_side: int) -> Witness | None:
        """The witness with its event's outputs on the illustrative sample, drawn before the
        result exists (`sampling.illustration.with_examples`, whose independence checks may
        refuse the mechanism); not after Ctrl-C or a spent budget, nor if Ctrl-C stops it."""
        if best is None or self.exit in (ExitReason.INTERRUPTED, ExitReason.BUDGET_SPENT):
            return best
        try:
            return with_examples(self.mech, best, self.best_event, self.request.seed,
                                 samples_per_side)
        except KeyboardInterrupt:
            return best


def audit_with_settings(mechanism, settings: Settings, **options) -> AuditResult:
    """An (ε, δ) audit as `dpverify.audit` runs it, with the pipeline's tuning `settings` instead
    of the defaults (for tests and experiments; `options` as for `audit`)."""
    mech = as_mechanism(mechanism)
    return AuditRun(mech, build_request(mech, **options), settings).run()
