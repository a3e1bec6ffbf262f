"""Each finding's check as an A/B outside the profiler, one module per check (or pair
of checks on one subject), over the A/B core of ``validate``; ``factory``: what every
check shares."""
