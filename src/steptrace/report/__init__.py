"""Renderers: analysis results -> text, Markdown or JSON. Renderers never compute."""
