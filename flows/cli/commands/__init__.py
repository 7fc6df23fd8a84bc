"""The ``notary`` commands, one module per command or command group.

Each module has ``register(app)``, which adds its commands to a Typer application
(``flows.cli.application`` composes them; tests build small applications of one command).
"""
