"""The path of a trace's bytes: read and gunzipped in chunks on a thread (``stream``),
read whole ahead (``source``), or at an fsspec URL (``remote``); cut between events
(``split``) and decoded in worker processes (``parallel``); within the limits checked
before memory is taken (``budget``); a progress display for large files (``progress``)."""
