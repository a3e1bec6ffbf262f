"""Across analyses: work on several measured traces at once (``diff``: two of them)."""
