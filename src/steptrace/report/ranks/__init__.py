"""A job's report (a ``RanksReport``) as sections: the ranks, the rank x step matrix,
the collectives, and rows that stay readable at 8, 64 and 512 ranks."""
