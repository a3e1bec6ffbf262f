"""Reports: a ``Report`` value, format-neutral sections built from it once, and renderers.

``model`` holds the ``Report``; ``trace_sections``, ``check_sections`` and
``diff_sections`` turn a report, an A/B comparison or a trace diff into a ``Document``
of sections (``document``); every output format is one ``to_<format>`` module whose
renderer only lays those sections out (``registry`` finds them by name).
"""
