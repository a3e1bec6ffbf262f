"""Cost and size of the multi-rank report: sections and every format at 8, 64 and 512 ranks.

What is measured
----------------
For each rank count, a ``RanksReport`` built by construction (``tests/across/ranks/reports.py``:
the recorded ``slow-read-4`` set's rank 0 copied to every rank, one rank slower in
``read_batch``), then, for ``--repeats`` rounds, the median time to build the sections
and render each format (text, md, html, json) from a fresh document, and the size of each
output. The report must stay readable, so its size should grow far slower than the ranks
(tables fold beyond 16 ranks, heatmaps bin beyond 128); the JSON is never folded.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the constructed reports live with the tests

from tests.across.ranks.reports import widened  # noqa: E402

import results  # noqa: E402
from steptrace.report.formats.renderers import renderer  # noqa: E402
from steptrace.report.ranks.sections import ranks_document  # noqa: E402

FORMATS = ("text", "md", "html", "json")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, nargs="+", default=[8, 64, 512])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    run = results.Run.start()
    rows: list[list[object]] = []
    print(f"{'ranks':>6} " + " ".join(f"{f + ' ms':>9} {f + ' KB':>9}" for f in FORMATS))
    for ranks in args.ranks:
        report = widened(ranks, slow_rank=ranks // 2)
        times: dict[str, list[float]] = {f: [] for f in FORMATS}
        sizes: dict[str, int] = {}
        for _ in range(args.repeats):
            for name in FORMATS:
                start = time.perf_counter()
                out = renderer(name).render([ranks_document(report)])
                times[name].append(time.perf_counter() - start)
                sizes[name] = len(out.encode())
        cells = " ".join(
            f"{1000 * statistics.median(times[f]):9.1f} {sizes[f] / 1024:9.1f}" for f in FORMATS
        )
        print(f"{ranks:>6} {cells}")
        rows.append([ranks, *cells.split(), args.repeats])
    columns = [f"{f} {unit}" for f in FORMATS for unit in ("ms", "KB")]
    results.write("ranks_render", run, ["ranks", *columns, "rounds"], rows, notes=RESULT_NOTES)


RESULT_NOTES = (
    "Medians of the rounds: building the sections and rendering each format, from a"
    " RanksReport constructed with one rank slower in read_batch; the size of each output."
)


if __name__ == "__main__":
    main()
