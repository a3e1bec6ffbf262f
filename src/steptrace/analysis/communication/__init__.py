"""Collectives on one rank: each instance, and by type how long, large, fast and exposed."""
