"""Errors of the flows and the command line (``flows``).

Exception tree::

    FlowError (Exception)                     root of every error the ``flows`` package defines
    ├── MissingApiKey (RuntimeError)          ``flows.settings``: no publishing API key
    ├── MissingCallbackSecret (RuntimeError)  ``flows.settings``: no HMAC key for callbacks
    └── TaskRunnerUnavailable (RuntimeError)  ``flows.settings``: ``dask`` without prefect-dask

The builtin bases stay for the callers that catch them (``except RuntimeError``).
"""

from __future__ import annotations

__all__ = ["FlowError"]


class FlowError(Exception):
    """Root of the ``flows`` package's errors (tree in the module docstring)."""
