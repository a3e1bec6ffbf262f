"""One module per command: its options, its help, and the call into the library that does
its work (imported when the command runs, so that ``--help`` stays fast)."""
