"""Several rank traces of one job: collectives matched, clocks aligned, stragglers."""
