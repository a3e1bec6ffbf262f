"""What bounds the step: the dependency graph, the critical path, and what-if on it."""
