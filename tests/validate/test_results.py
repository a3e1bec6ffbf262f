"""``Comparison``: one type per verdict, tagged by ``verdict`` in JSON, no null timing figure.

Built from synthetic raw samples through the real statistics (no torch: a report reads
these types on any machine), then written and read back as JSON.
"""

from __future__ import annotations

import json
import typing
from pathlib import Path

import msgspec
import numpy as np
import pytest

from steptrace.validate.estimators import decide
from steptrace.validate.results import (
    TIMED,
    Comparison,
    Correctness,
    Difference,
    Faster,
    LoopCheck,
    NoDetectableDifference,
    OutputsDiffer,
    Slower,
    Timed,
    TooFewSamples,
)
from steptrace.validate.stats import summarize, verdict
from steptrace.validate.timing import Samples

AGREE = Correctness(ok=True, steps=3, differences=(), start_identical=True)
DIFFER = Correctness(
    ok=False,
    steps=3,
    differences=(Difference("step0.output", False, 0.5, 0.25, None, None),),
    start_identical=True,
)
# every field a timed result holds beyond the common ones, and the few that may be null
TIMING_FIELDS = ("ratio", "ci", "estimate", "other_estimate", "interference", "baseline")
MAY_BE_NULL = {"p_value", "batch_size", "noise_warning", "loop"}


def samples(factor: float, seed: int = 0) -> Samples:
    """Six blocks of five steps per side, B ``factor`` times A's 10 ms, 1% noise."""
    rng = np.random.default_rng(seed)
    a = 10 * (1 + 0.01 * rng.random(30))
    b = factor * 10 * (1 + 0.01 * rng.random(30))
    return Samples(
        warmup_a=(30.0,),
        warmup_b=(31.0,),
        a=tuple(a.tolist()),
        b=tuple(b.tolist()),
        order=("AB", "BA") * 3,
        elapsed_s=0.7,
        block_steps=5,
        stopped="precise",
    )


def timed(factor: float) -> Timed:
    """The timed result for these samples, its type chosen by the verdict."""
    raw = samples(factor)
    deciding, other, measured = decide(raw.a, raw.b, raw.block_steps)
    outcome = verdict(deciding, 0.01)
    return TIMED[outcome](
        sentence="said",
        correctness=AGREE,
        by_design=(),
        device="cpu",
        accepted_difference=False,
        samples=raw,
        loop=LoopCheck((1.0, 1.2), (2.0, 2.2), 1.1, 2.1, 2.1 / 1.1),
        ratio=deciding.ratio,
        ci=deciding.ci,
        p_value=deciding.p_value,
        estimate=deciding,
        other_estimate=other,
        interference=measured,
        band=0.01,
        unit="ms/step",
        batch_size=32,
        baseline=summarize(raw.a),
        candidate=summarize(raw.b),
        noise_warning=None,
    )


def every_verdict() -> list[Comparison]:
    too_few = TooFewSamples(
        sentence="No verdict",
        correctness=AGREE,
        by_design=(),
        device="cpu",
        accepted_difference=False,
        samples=samples(1.0),
        loop=None,
    )
    differ = OutputsDiffer(sentence="differ", correctness=DIFFER, by_design=(), device="cpu")
    return [timed(0.5), timed(2.0), timed(1.0), differ, too_few]


def test_the_synthetic_samples_give_each_timed_verdict() -> None:
    kinds = [type(c) for c in every_verdict()[:3]]
    assert kinds == [Faster, Slower, NoDetectableDifference]


@pytest.mark.parametrize("result", every_verdict(), ids=lambda c: c.verdict)
def test_each_verdict_decodes_back_to_its_own_type(result: Comparison, tmp_path: Path) -> None:
    written = result.write_json(tmp_path / "ab.json")
    raw = json.loads(written.read_text())
    assert raw["verdict"] == result.verdict and raw["schema"] == "steptrace.compare/4"
    again = msgspec.json.decode(written.read_bytes(), type=Comparison)
    assert type(again) is type(result) and again == result


def test_a_timed_result_has_no_null_timing_figure(tmp_path: Path) -> None:
    fields = msgspec.structs.fields(Timed)
    optional = {f.name for f in fields if type(None) in typing.get_args(f.type)}
    assert optional == MAY_BE_NULL
    written = json.loads(timed(0.5).write_json(tmp_path / "ab.json").read_text())
    assert all(written[name] is not None for name in (*TIMING_FIELDS, "candidate", "samples"))


def test_a_timed_verdict_with_a_null_figure_is_refused() -> None:
    raw = json.loads(msgspec.json.encode(timed(0.5)))
    raw["ratio"] = None
    with pytest.raises(msgspec.ValidationError, match="ratio"):
        msgspec.json.decode(json.dumps(raw), type=Comparison)


def test_only_the_results_of_a_timing_carry_its_figures() -> None:
    differ, too_few = every_verdict()[3:]
    for name in ("samples", "accepted_difference", *TIMING_FIELDS):
        assert not hasattr(differ, name), name
    assert too_few.samples.a and not hasattr(too_few, "ratio")


def test_the_summaries_are_the_raw_samples_summarized() -> None:
    result = timed(2.0)
    assert result.baseline == summarize(result.samples.a)
    assert result.candidate.median == pytest.approx(float(np.median(result.samples.b)))
    assert result.throughput("baseline") == pytest.approx(32 / (result.baseline.median / 1000))


def test_raw_values_to_csv_by_verdict(tmp_path: Path) -> None:
    rows = timed(1.0).write_csv(tmp_path / "timed.csv").read_text().splitlines()
    assert len(rows) == 1 + 2 + 60 + 4  # header, warm-up, steady steps, the whole loops
    differ = every_verdict()[3].write_csv(tmp_path / "differ.csv").read_text()
    assert differ.splitlines() == ["side,phase,index,ms"]  # no timing ran


def test_outputs_that_differ_are_never_said_to_be_accepted() -> None:
    pytest.importorskip("torch")  # the investigation package loads the checks
    from steptrace.investigation.outcome import outcome_of

    differ = every_verdict()[3]
    outcome, sentence = outcome_of(differ)
    assert outcome == "outputs-differ" and "accepted" not in sentence
    accepted = msgspec.structs.replace(timed(0.5), correctness=DIFFER, accepted_difference=True)
    outcome, sentence = outcome_of(accepted)
    assert outcome == "supported" and sentence.endswith("(outputs differ by design, accepted)")
