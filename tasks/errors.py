"""Errors of the pipeline's domain steps (``tasks``).

Exception tree::

    TaskError (Exception)               root of every error the ``tasks`` package defines
    ├── ChainMismatch (RuntimeError)    ``tasks.publish``: the API names another chain ID
    ├── EntryTooLarge (ValueError)      ``tasks.documents``: an entry above the 10 KiB payload
    ├── ReceiptRejected (ValueError)    ``tasks.verify``: a receipt that does not prove the entry
    ├── StagePending (RuntimeError)     ``tasks.steps``: entries not at the stage yet (retried)
    └── UnsupportedValue (TypeError)    ``tasks.row_hashing``: a column value with no JSON form

Each class is defined beside the code that raises it; the builtin bases stay for the
callers that catch them (``except ValueError``).
"""

from __future__ import annotations

__all__ = ["TaskError"]


class TaskError(Exception):
    """Root of the ``tasks`` package's errors (tree in the module docstring)."""
