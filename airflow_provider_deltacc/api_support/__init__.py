"""Plumbing of the public API: renamed arguments (``deprecations``), duration arguments (``durations``)
and packages whose attributes load on first access (``lazy_exports``).
"""
