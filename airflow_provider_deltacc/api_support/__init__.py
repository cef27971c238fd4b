"""Plumbing of the public API: arguments (``arguments``: an old name refused with the new one, a warning at
the DAG file's line), duration arguments (``durations``) and packages whose attributes load on first access
(``lazy_exports``).
"""
