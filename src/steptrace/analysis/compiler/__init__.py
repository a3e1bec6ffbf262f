"""torch.compile read from the trace: the compiler's own events (``events``), kept out of
the step's work, and what it did in each step (``steps``)."""
