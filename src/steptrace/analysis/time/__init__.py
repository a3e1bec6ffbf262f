"""Where a step's time goes: the steps, the user's phases, CPU and GPU per step, idle and
silent time, work outside the steps, copies, kernels, operators and who launched what."""
