"""Are the figures the same before and after a change? Every real trace, every number.

    .venv/bin/python benchmarks/same_figures.py --before 67094db

Checks out ``--before`` (a git ref) in a temporary worktree, runs ``steptrace analyze
--format json --top 1000`` with that version and with this checkout on every trace of
the traces folder (``STEPTRACE_TRACES``, default ../shared/traces), brings both JSONs to
one layout (``steptrace.analysis/1`` put the figures at the top; ``steptrace.report/2``
puts them under ``analysis`` and types the findings' evidence), and compares every
value exactly. Fields that exist on one side only are listed apart: a new field is not a
changed figure, but a field that disappeared is. Exit status 1 when any figure differs.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import results

REPO = Path(__file__).resolve().parents[1]
TRACES = Path(os.environ.get("STEPTRACE_TRACES", REPO.parent / "shared" / "traces"))
NOT_A_TRACE = "memory_timeline_export_raw__memory_analysis.raw.gz"
RUN = "import sys; from steptrace.cli import main; main()"


def analyze(src: Path, trace: Path) -> dict[str, Any]:
    """One version's JSON report of one trace (``src``: the version's source folder)."""
    done = subprocess.run(
        [sys.executable, "-c", RUN, "analyze", str(trace), "--format", "json", "--top", "1000"],
        env={**os.environ, "PYTHONPATH": str(src)},
        capture_output=True,
        text=True,
        check=True,
    )
    data: dict[str, Any] = json.loads(done.stdout)
    return data


def canonical(report: dict[str, Any]) -> dict[str, Any]:
    """Either schema in one layout: the figures, then the findings with plain evidence."""
    if report["schema"] == "steptrace.analysis/1":
        figures = {k: v for k, v in report.items() if k not in ("findings", "schema")}
        findings = [_old_finding(f) for f in report["findings"]]
    else:
        figures = {**report["analysis"], **{k: report[k] for k in ("scenario", "capture")}}
        figures["thresholds"] = report["thresholds"]
        findings = [_new_finding(f) for f in report["findings"]]
    return {**figures, "findings": findings}


def _old_finding(finding: dict[str, Any]) -> dict[str, Any]:
    evidence = dict(finding["evidence"])
    where = evidence.pop("where")
    values = {
        name: [f"{k} ×{v}" for k, v in value.items()] if isinstance(value, dict) else value
        for name, value in evidence.items()
    }
    return {**finding, "evidence": values, "where": where}


def _new_finding(finding: dict[str, Any]) -> dict[str, Any]:
    evidence = finding["evidence"]
    values = {f["name"]: f["value"] for f in evidence["figures"]}
    return {**finding, "evidence": values, "where": evidence["where"]}


def flat(value: Any, prefix: str = "") -> Iterator[tuple[str, Any]]:
    """``(path, leaf)`` for every leaf; lists are indexed, so order matters."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield from flat(item, f"{prefix}.{key}" if prefix else key)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from flat(item, f"{prefix}[{index}]")
    else:
        yield prefix, value


def compare(before: dict[str, Any], after: dict[str, Any]) -> tuple[list[str], list[str]]:
    """(changed or removed figures, added fields)."""
    old, new = dict(flat(canonical(before))), dict(flat(canonical(after)))
    problems = [
        f"changed {k}: {old[k]!r} -> {new[k]!r}" for k in old if k in new and old[k] != new[k]
    ]
    problems += [f"removed {k} ({old[k]!r})" for k in old if k not in new]
    added = [k for k in new if k not in old]
    return problems, added


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--before", required=True, help="git ref of the version to compare with")
    args = parser.parse_args()
    run = results.Run.start()
    traces = sorted(p for p in TRACES.glob("*/*.gz") if p.name != NOT_A_TRACE)
    if not traces:
        print(f"no traces in {TRACES}", file=sys.stderr)
        return 2
    failed = 0
    with tempfile.TemporaryDirectory() as folder:
        tree = Path(folder) / "before"
        subprocess.run(
            ["git", "-C", str(REPO), "worktree", "add", "--detach", "-q", str(tree), args.before],
            check=True,
        )
        try:
            for trace in traces:
                problems, added = compare(
                    analyze(tree / "src", trace), analyze(REPO / "src", trace)
                )
                failed += bool(problems)
                names = sorted({a.split("[")[0].split(".")[-1] for a in added})
                print(
                    f"{'SAME' if not problems else 'DIFF'}  {trace.name}"
                    + (f"  (new fields: {', '.join(names)})" if names else "")
                )
                for problem in problems[:20]:
                    print(f"      {problem}")
        finally:
            subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(tree)])
    print(f"{len(traces) - failed} of {len(traces)} traces: every figure identical")
    row = [args.before, len(traces), len(traces) - failed, failed]
    results.write("same_figures", run, ("before", "traces", "same", "differ"), [row])
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
