"""HTML renderer: one self-contained page (inline CSS and SVG, no script, no network).

Sections, in the order a person reads them: the question; notes (GPU observed or not,
first step apart, options that cost); step times; the labels of each step; GPU busy and
idle; the findings; top operators and kernels; the A/B results with every raw value;
how to open the trace in Perfetto.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape
from typing import Any, Protocol

from steptrace.analysis.analyze import TraceAnalysis
from steptrace.report import format as fmt
from steptrace.report import svg

STYLE = """
body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;margin:2rem auto;max-width:1100px;
color:#222;line-height:1.45;padding:0 1rem}
h1{font-size:1.5rem}h2{font-size:1.15rem;margin-top:2rem;border-bottom:1px solid #ddd}
.question{background:#f3f6fb;border-left:4px solid #4e79a7;padding:.6rem 1rem}
.note{background:#fff8e6;border-left:4px solid #f28e2b;padding:.4rem 1rem;margin:.3rem 0}
table{border-collapse:collapse;width:100%;font-size:.85rem;margin:.5rem 0}
th,td{border:1px solid #ddd;padding:.3rem .5rem;text-align:right;vertical-align:top}
th:first-child,td:first-child{text-align:left}td.text{text-align:left}
code{font-size:.85em;word-break:break-all}.verdict{font-weight:bold;font-size:1.05rem}
.high{color:#b00020}.medium{color:#b35c00}.low{color:#555}svg{max-width:100%;height:auto}
"""


class ComparisonLike(Protocol):
    """What the page shows of a ``steptrace.validate.Comparison`` (no torch import here)."""

    verdict: str
    sentence: str
    ratio: float | None
    ci: tuple[float, float] | None
    baseline: Any
    candidate: Any
    correctness: Any
    samples: Any
    noise_warning: str | None
    accepted_difference: bool


def render_html(
    result: TraceAnalysis,
    *,
    comparisons: Sequence[tuple[str, ComparisonLike]] = (),
    trace_name: str | None = None,
) -> str:
    """The whole report as one HTML document."""
    sections = [
        _question(result),
        _notes(result),
        _steps(result),
        _phases(result),
        _gpu(result),
        _findings(result),
        _operators(result),
        _kernels(result),
        *(_comparison(title, c) for title, c in comparisons),
        _perfetto(trace_name or result.trace.path),
    ]
    title = escape(f"steptrace report: {fmt.title(result)}")
    return (
        f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{title}</title>'
        f'<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<style>{STYLE}</style></head><body><h1>{title}</h1>"
        + "".join(sections)
        + "</body></html>\n"
    )


def _table(header: Sequence[str], rows: Sequence[Sequence[str]], text_columns: int = 1) -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in header)
    body = "".join(
        "<tr>"
        + "".join(
            f"<td{' class=text' if i < text_columns else ''}>{escape(c)}</td>"
            for i, c in enumerate(row)
        )
        + "</tr>"
        for row in rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _question(result: TraceAnalysis) -> str:
    lines = "".join(f"<div>{escape(line)}</div>" for line in fmt.scenario_lines(result))
    return f'<div class="question">{lines}</div>'


def _notes(result: TraceAnalysis) -> str:
    notes = [] if result.trace.gpu_observed else [fmt.gpu_absent_note(result)]
    if not result.trace.steps_from_markers:
        notes.append(fmt.NO_STEPS)
    if (first := fmt.first_step_note(result)) is not None:
        notes.append(first)
    notes += fmt.option_notes(result) + [f"warning: {w}" for w in result.trace.warnings]
    devices = f"<p>GPU: {escape(fmt.devices(result))}</p>" if result.trace.gpu_observed else ""
    return devices + "".join(f'<div class="note">{escape(n)}</div>' for n in notes)


def _steps(result: TraceAnalysis) -> str:
    names = [s.name for s in result.steps]
    walls = [s.wall_ms for s in result.steps]
    first = 0 if result.summary.first_step and result.summary.first_step.differs else None
    rows = [
        [s.name, fmt.ms(s.wall_ms), fmt.ms(s.gpu.busy_ms if s.gpu else None),
         fmt.ms(s.gpu.idle_ms if s.gpu else None), fmt.ms(s.cpu.busy_ms)]
        for s in result.steps
    ]  # fmt: skip
    caption = (
        f"{result.summary.count} step(s): {fmt.spread(result.summary.wall_ms)} ms "
        "(median [min–max])" + ("; the first step, in orange, is shown apart" if first == 0 else "")
    )
    return (
        "<h2>Step time</h2>"
        + svg.bars(names, walls, "ms", highlight=first)
        + f"<p>{escape(caption)}</p>"
        + _table(["step", "wall ms", "GPU busy ms", "GPU idle ms", "CPU in operators ms"], rows)
    )


def _phases(result: TraceAnalysis) -> str:
    names = list(dict.fromkeys(p.name for s in result.steps for p in s.phases))
    if not names:
        return "<h2>Labels per step</h2><p>No labels (record_function) in this trace.</p>"
    series = [
        (name, [sum(p.exclusive_ms for p in s.phases if p.name == name) for s in result.steps])
        for name in names
    ]
    series.append(("outside labels", [s.unlabeled_ms or 0.0 for s in result.steps]))
    chart = svg.stacked(
        [s.name for s in result.steps], series, [s.wall_ms for s in result.steps], "ms"
    )
    return (
        "<h2>Labels per step (exclusive of nested labels)</h2>"
        + chart
        + "<p>Each bar is one step's wall time; grey is time on other threads or not "
        "attributed. Nested labels are never counted twice.</p>"
    )


def _gpu(result: TraceAnalysis) -> str:
    if not result.trace.gpu_observed:
        return f"<h2>GPU</h2><p>{escape(fmt.gpu_absent_note(result))}</p>"
    steps = [s for s in result.steps if s.gpu]
    chart = svg.stacked(
        [s.name for s in steps],
        [("busy", [s.gpu.busy_ms for s in steps if s.gpu]),
         ("idle", [s.gpu.idle_ms for s in steps if s.gpu])],
        [s.wall_ms for s in steps],
        "ms",
    )  # fmt: skip
    return (
        "<h2>GPU busy and idle per step</h2>"
        + chart
        + "<p>Busy is the union of kernels, copies and sets on all streams, within the step.</p>"
    )


def _findings(result: TraceAnalysis) -> str:
    head = f"<h2>Findings</h2><p>{escape(fmt.FINDINGS_TITLE)}</p>"
    if not result.findings:
        return head + f"<p>{escape(fmt.no_findings(result))}</p>"
    rows = "".join(
        f'<tr><td class="text"><span class="{f.level}">{escape(f.level)}</span> '
        f"({100 * f.severity:.0f}% of step)<br><code>{escape(f.rule)}</code></td>"
        f'<td class="text">{escape(f.observation)}<br>'
        f"<small>{escape(fmt.evidence_line(f.evidence))}</small></td>"
        f'<td class="text">{escape(f.hypothesis)}</td>'
        f'<td class="text">{escape(f.next_check)}</td>'
        f'<td class="text">{escape(" ".join(f.caveats))}</td></tr>'
        for f in result.findings
    )
    header = "".join(
        f"<th>{h}</th>" for h in ("finding", "observation", "hypothesis", "next check", "caveats")
    )
    return head + f"<table><thead><tr>{header}</tr></thead><tbody>{rows}</tbody></table>"


def _operators(result: TraceAnalysis) -> str:
    rows = [
        [o.name, str(o.calls), fmt.ms(o.self_ms), fmt.ms(o.inclusive_ms), fmt.ms(o.gpu_ms),
         o.input_shapes or "not recorded"]
        for o in result.operators
    ]  # fmt: skip
    title = f"<h2>CPU operators by self time (top {len(rows)} of {result.operators_total})</h2>"
    header = ["operator", "calls", "self ms", "inclusive ms", "GPU ms launched", "input shapes"]
    return title + _table(header, rows)


def _kernels(result: TraceAnalysis) -> str:
    if not result.trace.gpu_observed:
        return "<h2>Kernels</h2><p>Not observed.</p>"
    rows = [
        [k.name, str(k.calls), fmt.ms(k.total_ms), fmt.us(k.mean_us), fmt.us(k.min_us),
         fmt.us(k.max_us)]
        for k in result.kernels
    ]  # fmt: skip
    title = f"<h2>Kernels by total time (top {len(rows)} of {result.kernels_total})</h2>"
    return title + _table(["kernel", "calls", "total ms", "mean µs", "min µs", "max µs"], rows)


def _comparison(title: str, result: ComparisonLike) -> str:
    check = result.correctness
    parts = [f"<h2>A/B outside the profiler: {escape(title)}</h2>"]
    agreement = "all outputs, gradients and parameters agree" if check.ok else "outputs differ"
    accepted = " (the difference was accepted explicitly)" if result.accepted_difference else ""
    parts.append(
        f"<p>Correctness after {check.steps} steps from the same state: {agreement}{accepted}.</p>"
    )
    worst = sorted(check.differences, key=lambda d: (d.ok, -(d.max_abs or 0)))[:8]
    parts.append(
        _table(
            ["compared", "agrees", "max abs diff", "max rel diff", "note"],
            [[d.name, "yes" if d.ok else "NO", _g(d.max_abs), _g(d.max_rel), d.note or ""]
             for d in worst],
        )
    )  # fmt: skip
    if result.baseline is not None and result.candidate is not None and result.samples is not None:
        a, b = result.baseline, result.candidate
        parts.append(
            _table(
                ["side", "n", "median ms", "IQR ms", "min ms", "max ms", "IQR/median"],
                [[name, str(s.n), f"{s.median:.4f}", f"{s.iqr:.4f}", f"{s.min:.4f}",
                  f"{s.max:.4f}", f"{100 * s.spread:.1f}%"] for name, s in (("A", a), ("B", b))],
            )
        )  # fmt: skip
        samples = result.samples
        parts.append(
            svg.strips(
                [("A warm-up", list(samples.warmup_a)), ("A", list(samples.a)),
                 ("B warm-up", list(samples.warmup_b)), ("B", list(samples.b))],
                "ms",
            )
        )  # fmt: skip
    if result.noise_warning:
        parts.append(f'<div class="note">warning: {escape(result.noise_warning)}</div>')
    parts.append(f'<p class="verdict">{escape(result.sentence)}</p>')
    return "".join(parts)


def _g(value: float | None) -> str:
    return "—" if value is None else f"{value:.3g}"


def _perfetto(trace: str) -> str:
    return (
        "<h2>Open the trace on the timeline</h2><p>Open <code>ui.perfetto.dev</code> in a "
        "browser and drag the trace file into it (Perfetto reads it locally; the file is not "
        f"uploaded): <code>{escape(trace)}</code>. <code>chrome://tracing</code> also opens "
        "it. Look at the steps, time ranges, threads and streams named in the findings.</p>"
    )
