"""What a capture measures besides the trace: the CPU's roofs (``peaks``), a step's FLOPs
(``flops``), what its tensors are (``inventory``) and the profiler's own cost
(``overhead``)."""
