"""Real multi-rank recordings on the CPU: a gloo run of several processes, one trace per
rank (``distributed``), what each rank does (``rank_step``), and a rank's trace with its
host clock moved (``clock_shift``)."""
