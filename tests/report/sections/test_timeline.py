"""The timeline's marks and the findings' links to them: the minor findings (under the
noise floor) stay in their own list, never marked or linked (issue #46.3)."""

from __future__ import annotations

from steptrace.report.sections.timeline import finding_jumps, timeline_section
from tests.conftest import lanes_of, report_of

DLRM = "sampled_128rank_rank0"  # a minor repeated-copy beside its major findings


def test_a_minor_finding_is_neither_marked_nor_linked() -> None:
    report, lanes = report_of(DLRM), lanes_of(DLRM)
    minor = {f.rule for f in report.findings if f.minor}
    major = {f.rule for f in report.findings if not f.minor}
    assert minor and major
    jumps = finding_jumps(report, lanes)
    assert jumps is not None
    linked = {item.text.split(":")[0] for item in jumps.items}
    assert linked and linked <= major and not linked & minor
    section = timeline_section(report, lanes)
    assert section is not None
    text = repr(section)
    assert not any(f"'{rule}'" in text for rule in minor)
