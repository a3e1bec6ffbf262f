"""steptrace inside the loops users already have: each module imports its framework itself.

- ``steptrace.integrations.lightning``: ``StepTraceProfiler``, a Lightning ``Profiler``
  (``Trainer(profiler=StepTraceProfiler(scenario=..., dirpath=...))``).
- ``steptrace.integrations.transformers``: ``StepTraceCallback``, a Hugging Face
  ``TrainerCallback``.
- ``steptrace.integrations.accelerate``: ``profile_kwargs``, the ``ProfileKwargs`` with
  which ``accelerator.profile()`` writes traces steptrace reads, the scenario attached.

Importing this package imports none of the frameworks (nor torch); importing a module
imports its framework (and torch). ``steptrace.capturing.trace_handler`` serves any torch.profiler.
"""
