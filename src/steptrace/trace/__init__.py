"""Reading traces: files -> ``Trace`` (metadata + columnar ``EventTable``).

``source`` reads and gunzips (standard library and isal only, so the command line starts
reading before numpy is imported), ``decode`` turns the text into typed events, ``columns``
into numpy columns, ``load`` puts them together into a ``table.Trace``.
"""
