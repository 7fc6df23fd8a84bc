"""The pipeline's steps: hash, publish, follow the stages, build and check proofs, report.

Each step is a plain function over the connectors (no Prefect, no orchestration), so it
runs and is tested without a flow. One module, ``tasks.steps``, wraps the steps the flows
run as Prefect tasks (batch task runs, retries declared only where a step is safe to
repeat); it is the only module here that imports Prefect, and the import contract
"tasks import Prefect only in tasks.steps" in ``pyproject.toml`` keeps it so.
"""
