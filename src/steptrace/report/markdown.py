"""Markdown renderer: the same sections as the terminal report, as GitHub tables."""

from __future__ import annotations

from collections.abc import Sequence

from steptrace.analysis.analyze import TraceAnalysis
from steptrace.report import format as fmt


def render_markdown(results: list[TraceAnalysis], *, findings_only: bool = False) -> str:
    if findings_only:
        return "\n".join(_findings_report(r) for r in results)
    return "\n".join(_report(r) for r in results)


def _findings_report(result: TraceAnalysis) -> str:
    head = [f"# steptrace findings: `{fmt.title(result)}`\n"]
    head += [f"- {line}" for line in fmt.scenario_lines(result)] + [""]
    return "\n".join([*head, _findings(result)])


def _findings(result: TraceAnalysis) -> str:
    out = ["## Findings\n", f"{fmt.FINDINGS_TITLE}\n"]
    if not result.findings:
        return "\n".join([*out, fmt.no_findings(result) + "\n"])
    rows = [
        [
            f"{f.level} ({100 * f.severity:.0f}%)",
            f"`{f.rule}`",
            f"{f.observation} ({fmt.evidence_line(f.evidence)})",
            f.hypothesis,
            f.next_check,
            " ".join(f.caveats),
        ]
        for f in result.findings
    ]
    header = ["level", "rule", "observation", "hypothesis", "next check", "caveats"]
    return "\n".join([*out, _table(header, rows)])


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(_cell(c) for c in cells) + " |"

    align = "|" + "|".join(":---" if i == 0 else "---:" for i in range(len(header))) + "|"
    return "\n".join([line(header), align, *(line(r) for r in rows)]) + "\n"


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _report(result: TraceAnalysis) -> str:
    trace = result.trace
    out = [f"# steptrace analysis: `{fmt.title(result)}`\n"]
    out += [f"- {line}" for line in fmt.scenario_lines(result)] + [""]
    out += [f"> note: {n}\n" for n in fmt.option_notes(result)]
    out.append(
        f"GPU: {fmt.devices(result)}\n"
        if trace.gpu_observed
        else f"> {fmt.gpu_absent_note(result)}\n"
    )
    if not trace.steps_from_markers:
        out.append(f"> {fmt.NO_STEPS}\n")
    if (first := fmt.first_step_note(result)) is not None:
        out.append(f"> {first}\n")
    out += [f"> warning: {w}\n" for w in trace.warnings]
    summary = result.summary
    out.append("## Steps\n")
    out.append(
        _table(
            ["step", "wall ms", "GPU busy ms", "GPU idle ms", "GPU busy", "kernels"],
            [
                [
                    s.name,
                    fmt.ms(s.wall_ms),
                    fmt.ms(s.gpu.busy_ms if s.gpu else None),
                    fmt.ms(s.gpu.idle_ms if s.gpu else None),
                    fmt.pct(s.gpu.utilization if s.gpu else None),
                    str(s.gpu.kernels.count) if s.gpu else fmt.NOT_OBSERVED,
                ]
                for s in result.steps
            ],
        )
    )
    out.append(
        f"\n{summary.count} step(s): wall {fmt.spread(summary.wall_ms)} ms (median [min–max]).\n"
    )
    if summary.phases:
        out.append("## Labels (exclusive of nested labels, median [min–max] over steps)\n")
        out.append(
            _table(
                ["label", "steps", "exclusive ms", "share of step", "GPU idle ms"],
                [
                    [
                        p.name,
                        str(p.steps),
                        fmt.spread(p.exclusive_ms),
                        fmt.spread(p.share, "%"),
                        fmt.spread(p.gpu_idle_ms),
                    ]
                    for p in summary.phases
                ],
            )
        )
    out.append(f"## CPU operators (top {len(result.operators)} of {result.operators_total})\n")
    out.append(
        _table(
            ["operator", "calls", "self ms", "inclusive ms", "GPU ms launched", "input shapes"],
            [
                [
                    f"`{o.name}`",
                    str(o.calls),
                    fmt.ms(o.self_ms),
                    fmt.ms(o.inclusive_ms),
                    fmt.ms(o.gpu_ms),
                    o.input_shapes or "not recorded",
                ]
                for o in result.operators
            ],
        )
    )
    out.append(_findings(result))
    out.append(f"## Kernels (top {len(result.kernels)} of {result.kernels_total})\n")
    if not trace.gpu_observed:
        out.append("Not observed.\n")
    else:
        out.append(
            _table(
                ["kernel", "calls", "total ms", "mean µs", "min µs", "max µs"],
                [
                    [
                        f"`{fmt.short(k.name, 90)}`",
                        str(k.calls),
                        fmt.ms(k.total_ms),
                        fmt.us(k.mean_us),
                        fmt.us(k.min_us),
                        fmt.us(k.max_us),
                    ]
                    for k in result.kernels
                ],
            )
        )
    return "\n".join(out)
