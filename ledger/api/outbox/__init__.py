"""The outbox of the publishing API: from an accepted write to the ledger, and callbacks.

``writer`` (group commit) and ``intake`` (set-based acceptance) record writes; ``worker``
coordinates the background passes: ``submitter`` (compose, commit, reveal through the
``gateway`` to the wallet and node, ``refusals`` saying what an error means),
``block_follower`` and ``anchor_follower`` (stages ``ledger`` and ``anchor``, moved with
``stage_moves``), ``failures`` (writes given up), ``credit_gate`` (hold writes while the
paying address cannot pay) and ``callbacks`` (the durable callback queue and its
delivery, to the targets ``callback_targets`` allows).
``backlog`` and ``credit_status`` read what is still owed, for health checks and metrics;
``driver_sql`` holds the hot statements written once for both database drivers.
"""
