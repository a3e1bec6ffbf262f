"""CUDA and HIP graphs read from the trace: each replay and the GPU work it ran
(``replays``), which no operator launched."""
