"""Pure byte-level primitives of the Factom protocol: no I/O, no clocks, no globals.

Everything here works on raw ``bytes``; hex, base58 and JSON appear only in the
``to_*`` / ``from_*`` helpers at the edges. Layouts follow ``factom-formats.md``
(section numbers are cited in each module).
"""
