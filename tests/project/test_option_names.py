"""Every option a message names exists: each ``--name`` in the strings of steptrace's
own code (messages, warnings, help) is an option of one of its commands, and the capture's
advice (``--active``) is an option of each command that captures."""

from __future__ import annotations

import io
import re
import tokenize
from pathlib import Path

import click

from steptrace.cli import app
from tests.paths import SRC

SOURCE = SRC / "steptrace"
OPTION = re.compile(r"(?<![\w-])--[a-z][a-z0-9]*(?:-[a-z0-9]+)*(?![-{\w])")  # not a template
NOT_OURS = {"--help", "--name", "--no-name"}  # click's own; options.switch's placeholder


def options_of(command: click.Command) -> set[str]:
    found = {o for p in command.params for o in (*p.opts, *p.secondary_opts)}
    if isinstance(command, click.Group):
        for sub in command.commands.values():
            found |= options_of(sub)
    return found


def named_in_strings(path: Path) -> set[str]:
    text = path.read_text(encoding="utf-8")
    strings = [
        t.string
        for t in tokenize.generate_tokens(io.StringIO(text).readline)
        if t.type == tokenize.STRING
    ]
    return {m for s in strings for m in OPTION.findall(s)}


def test_every_option_a_message_names_exists() -> None:
    known = options_of(app)
    named = {  # scrub's patterns name options of the user's command lines, not ours
        (name, path.relative_to(SOURCE).as_posix())
        for path in SOURCE.rglob("*.py")
        if "scrub" not in path.parts
        for name in named_in_strings(path)
    }
    missing = sorted((n, where) for n, where in named if n not in known | NOT_OURS)
    assert not missing, missing


def test_the_capture_advice_names_an_option_of_each_capturing_command() -> None:
    assert isinstance(app, click.Group)
    for name in ("profile", "investigate"):
        assert "--active" in options_of(app.commands[name]), name
