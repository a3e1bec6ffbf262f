"""The output formats, one ``to_<name>`` module each (text, md, html, json), found by
name (``renderers``); they lay out sections, they never compute."""
