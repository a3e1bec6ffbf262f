"""Memory per step and device: usage and peaks, what holds a peak, the memory lane."""
