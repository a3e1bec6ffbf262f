"""``Report``: one trace's analysis, its findings, the question it answers, and warnings.

It is what ``steptrace.analyze`` returns and what ``--format json`` writes (schema
``steptrace.report/4``, see ``docs/json-schema.md``): the verdict first.
"""

from __future__ import annotations

import msgspec

from steptrace.across.ranks.figures import (
    RANKS_SCHEMA,
    ClockAlignment,
    CollectiveSummary,
    JobStepBound,
    RankResult,
    RanksAnalysis,
    Straggler,
    Unmatched,
)
from steptrace.across.ranks.rank_thresholds import RankThresholds
from steptrace.analysis.measure import TraceAnalysis, TraceSummary
from steptrace.hypotheses.finding import Finding
from steptrace.hypotheses.thresholds import Thresholds
from steptrace.hypotheses.verdict import Verdict, with_outcomes
from steptrace.scenario import CaptureFacts, Scenario, Throughput
from steptrace.validate.results import CheckResult

SCHEMA = "steptrace.report/4"
FINDINGS_SCHEMA = "steptrace.findings/4"  # what ``--findings-only --format json`` writes


class Report(msgspec.Struct, frozen=True, kw_only=True):
    """The question, the measurements, and the findings of one trace.

    ``verdict`` says what bounds the step, in one sentence, and the top findings' next
    checks (``hypotheses.verdict``); ``analysis`` holds every figure (``None`` in a GPU
    figure: not observed) and what loading the trace skipped (``analysis.trace.warnings``);
    ``findings`` are hypotheses with their next controlled check, most severe first;
    ``warnings`` are about the report's other inputs (an unreadable scenario) and its
    certainty (steps that differ by more than ``thresholds.step_spread``: more steps are
    needed). ``checks`` are the findings' checks when ``investigate`` ran them. The steps'
    lanes the HTML report draws are not part of it: the renderer has them from the trace
    (``pipeline.analyze_source``).
    """

    schema: str = SCHEMA
    verdict: Verdict  # what bounds the step, and what to check next
    scenario: Scenario | None  # the question and the step; None: none was recorded
    capture: CaptureFacts | None  # what the capture measured outside the profiler
    analysis: TraceAnalysis
    # samples/s (tokens/s) at the median step: None without a batch size in the scenario
    throughput: Throughput | None = None
    findings: tuple[Finding, ...]
    thresholds: Thresholds  # the thresholds the findings used
    warnings: tuple[str, ...] = ()
    checks: tuple[CheckResult, ...] = ()  # each finding's check, run by ``investigate``

    def top(self, n: int) -> Report:
        """The same report listing only the first ``n`` operators and kernels."""
        return msgspec.structs.replace(self, analysis=self.analysis.top(n))

    def checked(self, checks: tuple[CheckResult, ...]) -> Report:
        """The same report with its findings' checks (``findings`` ranked by them), the
        verdict's top findings chosen again from them with their outcomes."""
        outcomes = {c.rule: f"{c.outcome}: {c.sentence}" for c in checks}
        verdict = with_outcomes(self.verdict, self.findings, outcomes)
        return msgspec.structs.replace(self, checks=checks, verdict=verdict)


class FindingsReport(msgspec.Struct, frozen=True, kw_only=True):
    """A report reduced to its verdict, question, what the trace is, and the findings."""

    schema: str = FINDINGS_SCHEMA
    verdict: Verdict
    scenario: Scenario | None
    capture: CaptureFacts | None
    trace: TraceSummary
    findings: tuple[Finding, ...]
    thresholds: Thresholds
    warnings: tuple[str, ...] = ()
    checks: tuple[CheckResult, ...] = ()

    @classmethod
    def of(cls, report: Report) -> FindingsReport:
        return cls(
            verdict=report.verdict,
            scenario=report.scenario,
            capture=report.capture,
            trace=report.analysis.trace,
            findings=report.findings,
            thresholds=report.thresholds,
            warnings=report.warnings,
            checks=report.checks,
        )


class RanksReport(msgspec.Struct, frozen=True, kw_only=True):
    """Several rank traces of one job: cross-rank figures, findings, warnings.

    What ``steptrace.analyze_ranks`` returns and what its JSON writes (schema
    ``steptrace.ranks/2``, see ``docs/json-schema.md``). The figures are those of
    ``RanksAnalysis`` (``steptrace.across.ranks.figures``), at the top level.
    """

    schema: str = RANKS_SCHEMA
    world_size: int | None
    ranks: tuple[RankResult, ...]
    clocks: ClockAlignment
    collectives: tuple[CollectiveSummary, ...]
    unmatched: tuple[Unmatched, ...]
    stragglers: tuple[Straggler, ...]
    findings: tuple[Finding, ...]  # straggler, exposed-communication, collective-imbalance, ...
    thresholds: RankThresholds
    warnings: tuple[str, ...] = ()
    critical_path: tuple[JobStepBound, ...] | None = None  # per step: the bounding rank

    @classmethod
    def of(
        cls, analysis: RanksAnalysis, findings: tuple[Finding, ...], thresholds: RankThresholds
    ) -> RanksReport:
        return cls(
            world_size=analysis.world_size,
            ranks=analysis.ranks,
            clocks=analysis.clocks,
            collectives=analysis.collectives,
            unmatched=analysis.unmatched,
            stragglers=analysis.stragglers,
            findings=findings,
            thresholds=thresholds,
            warnings=analysis.warnings,
            critical_path=analysis.critical_path,
        )
