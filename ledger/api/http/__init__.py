"""The HTTP face of the publishing API (docs/rest-api.md): what a request meets.

``routes`` (the eleven operations on ``/v1``), ``writes`` and ``bulk`` (operations 2 and 6
and the bulk write, from body to 202), ``fastpath`` (the same writes answered before
FastAPI's routing), ``deps`` (authentication, JSON bodies, path identifiers), ``schemas``
(request and response bodies), ``openapi`` (the OpenAPI document) and ``verify_page``
(``GET /verify``), ``errors`` (the handlers that answer every failure in the one JSON
error form; the exception tree itself is ``ledger.api.errors``, shared by the package).
"""
