"""The exit codes of every ``notary`` command: one enum, so scripts can rely on them.

=====  ===============  ======================================================================
code   member           meaning
=====  ===============  ======================================================================
0      ``OK``           everything the command set out to do holds
1      ``INCOMPLETE``   the command ran, but not everything holds: documents failed or still
                        wait for a stage (``notarize``, ``table``, ``watch``, ``collect``,
                        ``proof export``), a report found problems, a proof bundle failed a
                        step (``verify``)
2      ``USAGE``        bad usage or configuration (arguments, missing key or secret, a file
                        that cannot be read, a database that is not an audit store)
3      ``UNREACHABLE``  a service or database could not be reached
130    ``INTERRUPTED``  stopped by Ctrl-C (128 + SIGINT, the shell's convention)
=====  ===============  ======================================================================
"""

from __future__ import annotations

from enum import IntEnum

__all__ = ["ExitCode"]


class ExitCode(IntEnum):
    """Process exit status of a ``notary`` command (module docstring: what each means)."""

    OK = 0
    INCOMPLETE = 1
    USAGE = 2
    UNREACHABLE = 3
    INTERRUPTED = 130
