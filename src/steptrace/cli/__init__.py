"""The ``steptrace`` command line: a thin layer over the library, one module per command.

Built on click, which starts in a few milliseconds: the command line is the whole process
of ``steptrace analyze``, so its start-up counts in every analysis. ``app`` (the command
group, in ``app``) has each command registered by importing its module (``commands``) here;
the modules beside ``commands`` are what the commands share and the work each does when
it runs, imported only then.
"""

from steptrace.cli.app import app, main
from steptrace.cli.commands import (  # noqa: F401 (each registers its command on app)
    analyze,
    compare,
    demo,
    diff,
    investigate,
    profile,
    render,
    scrub,
)

__all__ = ["app", "main"]
