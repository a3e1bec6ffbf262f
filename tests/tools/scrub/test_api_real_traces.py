"""scrub on every real trace: the same analysis, number for number; only strings that held
a user or host name or a token change; a second scrub changes nothing."""

from __future__ import annotations

import gzip
import re
from pathlib import Path
from typing import Any

import msgspec
import pytest

import steptrace
from steptrace.tools.scrub import scrub_file, scrub_text
from steptrace.tools.scrub.text import decode, split_strings
from tests.conftest import gpu_trace, read_json, report_of, trace_params

# What each real trace holds that scrub replaces, each a true finding (first part of the name).
REAL_FINDINGS: dict[str, set[str]] = {
    "cpu_only_gloo": {"user"},  # username (before "cpu_": the first part found counts)
    "cpu_": {"host"},  # host_name "vm", in every trace recorded for this project
    "ddp_rank": {"host"},
    "triton": {"user"},  # /tmp/torchinductor_<user>/ in args.kernel_file
    "gp100": {"user"},  # traceName under /private/home/<user>/
    "kineto_v100": {"user"},  # /home/<user>/ in every args."Call stack"
    # HF_TOKEN; HOSTNAME (a container id) and the hosts of URLs; STARTED_BY, also the first
    # folder of the python_function names
    "tracelens": {"host", "token", "user"},
    "v100_1rank": {"host", "user"},  # host_name (an FQDN), username, tw_user
}
_PLACEHOLDER = re.compile(r"<(user|host|token)-\d+>")


def _without_path(node: Any) -> Any:
    if isinstance(node, dict):
        return {key: _without_path(value) for key, value in node.items() if key != "path"}
    if isinstance(node, list):
        return [_without_path(value) for value in node]
    return node


def _analysis(report: steptrace.Report) -> Any:
    return _without_path(msgspec.to_builtins(report.analysis))


@pytest.mark.parametrize("path", trace_params())
def test_every_real_trace_gives_the_same_analysis(path: Path, tmp_path: Path) -> None:
    target = tmp_path / "scrubbed.json.gz"
    report = scrub_file(path, target)
    expected = next((kinds for part, kinds in REAL_FINDINGS.items() if part in path.name), set())
    assert set(report.counts) == expected
    assert _analysis(steptrace.analyze(target)) == _analysis(report_of(path.name))


@pytest.mark.parametrize("path", trace_params())
def test_only_strings_with_a_secret_change_and_twice_is_once(path: Path) -> None:
    text = gzip.decompress(path.read_bytes())
    scrubbed, report = scrub_text(text)
    before, after = split_strings(text), split_strings(scrubbed)
    assert before[0::2] == after[0::2]  # numbers, spaces, punctuation: byte for byte
    changed = {decode(a) for b, a in zip(before[1::2], after[1::2], strict=True) if b != a}
    assert len(changed) <= report.total
    assert all(_PLACEHOLDER.search(string) for string in changed)
    again, second = scrub_text(scrubbed)
    assert (again, second.total) == (scrubbed, 0)


def test_a_real_token_in_a_real_trace_is_removed_and_the_trace_id_kept() -> None:
    path = gpu_trace("tracelens")
    doc = read_json(path)
    token = doc["metadata"]["system"]["env"]["HF_TOKEN"]
    assert token.startswith("hf_")
    scrubbed = scrub_text(gzip.decompress(path.read_bytes()))[0]
    assert token.encode() not in scrubbed
    assert doc["trace_id"].encode() in scrubbed  # the profiler's random id names nobody
