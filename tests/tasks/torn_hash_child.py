"""The hashing child (``tasks.hash_process.main``) with a writer racing its reads: the
``Race`` in ``RACE_ENV`` (``tests.tasks.torn_reads``) wraps its ``os.read`` and
``os.readv``. Run by the torn-read tests as ``HashProcess(module=...)``."""

from __future__ import annotations

import os

from tasks.hash_process import main
from tests.tasks.torn_reads import RACE_ENV, Race

if __name__ == "__main__":
    Race.from_json(os.environ[RACE_ENV]).install(setattr)
    main()
