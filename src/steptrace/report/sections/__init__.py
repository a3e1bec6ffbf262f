"""One trace's report as format-neutral sections, one module per question (the
verdict, the context, the figures, findings, memory, roofline, critical path, timeline,
checks, diff), each built once from the ``Report`` for every format."""
