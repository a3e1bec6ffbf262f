"""``Window``: the capture's schedule and options as one value."""

from __future__ import annotations

import msgspec
import pytest

from steptrace.errors import CaptureError
from steptrace.scenario import CaptureFacts
from steptrace.window import Window


def test_the_schedule_in_numbers_and_words() -> None:
    window = Window(cold_steps=2, wait=1, warmup=2, active=3, repeat=2)
    assert (window.cycle, window.profiled_steps, window.needed_steps) == (6, 12, 14)
    assert window.describe() == (
        "cold start (2) + (wait 1 + warmup 2 + active 3) x repeat 2 need 14"
    )
    assert window.options == {
        "record_shapes": False,
        "profile_memory": False,
        "with_stack": False,
        "with_flops": False,
    }


@pytest.mark.parametrize(
    "fields", [{"active": 0}, {"repeat": 0}, {"wait": -1}, {"warmup": -1}, {"cold_steps": -1}]
)
def test_an_impossible_schedule_is_refused(fields: dict[str, int]) -> None:
    with pytest.raises(CaptureError, match="the schedule needs"):
        Window(**fields)


def test_capture_facts_carry_the_window_through_json() -> None:
    facts = CaptureFacts(window=Window(active=3, with_stack=True), torch_version="2.13.0")
    again = msgspec.json.decode(msgspec.json.encode(facts), type=CaptureFacts)
    assert again == facts and again.window is not None and again.window.with_stack
