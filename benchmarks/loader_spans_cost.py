"""What recording the DataLoader's workers costs: batches per second of a loader with and
without ``steptrace.LoaderSpans``, interleaved.

What is measured
----------------
A ``DataLoader`` of 2 workers (fork), 16 samples a batch, each sample a small tensor made
in Python and a short sleep (``--read-us``, what a worker waits on), iterated for
``--batches`` batches after its first (the workers' start left out), with the recorder
installed and iterated through ``LoaderSpans.iterate`` (B) or plain (A); A and B alternate
for ``--rounds`` rounds (B first in odd rounds). Printed: each side's median batches per
second, B/A, and the spread of the rounds. The recorder's work is two ``time.time_ns`` a
sample and one written line a batch in the worker, and one line a batch in the main
process: the target is no visible cost (B/A within the rounds' spread of 1).
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch
from torch.utils.data import DataLoader, Dataset

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
import results
from steptrace.capturing.loader_spans import LoaderSpans


class Samples(Dataset[torch.Tensor]):
    def __init__(self, read_s: float) -> None:
        self.read_s = read_s

    def __len__(self) -> int:
        return 1 << 20

    def __getitem__(self, index: int) -> torch.Tensor:
        time.sleep(self.read_s)
        return torch.full((64,), float(index))


COLUMNS = (
    "read µs a sample",
    "batches a round",
    "A plain batches/s",
    "B recorded batches/s",
    "B/A",
    "B/A of the rounds",
    "rounds",
)
NOTES = (
    "Medians of interleaved rounds; 2 fork workers, 16 samples a batch. Target: B/A within "
    "the rounds' spread of 1 (no visible cost)."
)


def rate(read_s: float, batches: int, recorded: bool) -> float:
    """Batches per second after the first, with the recorder or without."""
    loader = DataLoader(
        Samples(read_s), batch_size=16, num_workers=2, multiprocessing_context="fork"
    )
    with tempfile.TemporaryDirectory() as folder:
        spans = LoaderSpans(Path(folder) / "w")
        with spans.installed(loader) if recorded else contextlib.nullcontext():
            source = spans.iterate(loader) if recorded else iter(loader)
            next(source)  # the workers' start, left out
            began = time.perf_counter()
            for _ in range(batches):
                next(source)
            took = time.perf_counter() - began
            del source
    return batches / took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--batches", type=int, default=200)
    parser.add_argument("--read-us", type=float, default=100.0)
    args = parser.parse_args()
    run = results.Run.start()
    torch.set_num_threads(1)
    plain: list[float] = []
    recorded: list[float] = []
    for k in range(args.rounds):
        for side in (True, False) if k % 2 else (False, True):
            got = rate(args.read_us / 1e6, args.batches, side)
            (recorded if side else plain).append(got)
            print(f"round {k}: {'B recorded' if side else 'A plain   '} {got:8.1f} batches/s")
    a, b = statistics.median(plain), statistics.median(recorded)
    ratios = sorted(r / p for r, p in zip(recorded, plain, strict=True))
    spread = f"{ratios[0]:.3f}-{ratios[-1]:.3f}"
    print(f"A plain {a:.1f}/s, B recorded {b:.1f}/s: B/A {b / a:.3f} (rounds {spread})")
    row = [f"{args.read_us:g}", args.batches, f"{a:.1f}", f"{b:.1f}", f"{b / a:.3f}", spread]
    results.write("loader_spans_cost", run, COLUMNS, [[*row, args.rounds]], NOTES)


if __name__ == "__main__":
    main()
