"""The OpenAPI 3.1 document of the publishing API, served at ``GET /v1/openapi.json``.

Decision: the document needs the key like every other route (docs/rest-api.md §2 (Authentication):
all calls carry ``user-key``); without one it is 403 Authentication Parameters Missing.
Tools fetch it with the header, for instance
``schemathesis run -H "user-key: $KEY" http://127.0.0.1:8090/v1/openapi.json``.
No HTML documentation pages are served.

The document is FastAPI's description of the routes, completed with what FastAPI cannot
see because the handlers read their bodies themselves (strict content-type and JSON
checks): the request bodies, every status code an operation can answer with the one
error body shape, the ``limit``/``offset`` bounds, the values of operation 7's ``stage``
filter, and the two ways to send the key (``user-key``, or the ``app_id`` + ``app_key``
pair of the Connect SDKs).
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi
from pydantic import BaseModel

from ledger.api.http.schemas import ChainCreate, EntryBatchCreate, EntryCreate, ExternalIds
from ledger.api.models import PUBLIC_STAGES
from ledger.api.settings import ApiSettings

__all__ = ["BASE64_PATTERN", "ERROR_SCHEMA", "MAX_OFFSET", "build_openapi"]

ERROR_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["error"],
    "properties": {
        "error": {
            "type": "object",
            "required": ["code", "name", "message"],
            "properties": {
                "code": {"type": "integer"},
                "name": {"type": "string"},
                "message": {"type": "string"},
            },
        }
    },
}

_ERRORS = {
    400: "Bad Request: invalid JSON, Base64, field type or query parameter",
    403: "Authentication Parameters Missing (no key) or Authentication Failed (wrong key)",
    404: "Page Not Found (unknown chain or entry, or not yours; search without a match)",
    413: "Payload Too Large: the body exceeds the configured limit",
    415: "Unsupported Media Type: the body is not application/json",
    422: "Unprocessable entity: entry above 10240 bytes, chain taken or unknown, "
    "callback URL refused",
    429: "Too Many Requests: the key's rate limit is used up (see Retry-After)",
    500: "Internal Error",
    503: "Service Unavailable: the service is stopping",
}

#: Standard Base64 with padding (RFC 4648 section 4), as every external ID and content.
BASE64_PATTERN = r"^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$"
#: Largest ``offset`` accepted (also the largest integer JSON keeps exactly).
MAX_OFFSET = 2**53 - 1

#: operation id -> (request body model or None, error codes besides 403/429/500)
_OPERATIONS: dict[str, tuple[type[BaseModel] | None, tuple[int, ...]]] = {
    "getInfo": (None, ()),
    "createChain": (ChainCreate, (400, 413, 415, 422, 503)),
    "listChains": (None, (400,)),
    "searchChains": (ExternalIds, (400, 404, 413, 415)),
    "getChain": (None, (404,)),
    "createEntry": (EntryCreate, (400, 413, 415, 422, 503)),
    "createEntries": (EntryBatchCreate, (400, 413, 415, 422, 503)),
    "listEntries": (None, (400, 404)),
    "getFirstEntry": (None, (404,)),
    "getLastEntry": (None, (404,)),
    "searchEntries": (ExternalIds, (400, 404, 413, 415)),
    "getEntry": (None, (404,)),
}

_CHAIN_ID = {"chain_id": "$response.body#/chain_id"}
#: Where the IDs an operation answers with can be used next (OpenAPI links).
_LINKS: dict[str, dict[str, Any]] = {
    "createChain": {
        **{
            name: {"operationId": name, "parameters": _CHAIN_ID}
            for name in (
                "getChain",
                "createEntry",
                "listEntries",
                "getFirstEntry",
                "getLastEntry",
                "searchEntries",
            )
        },
        # the answer names the chain's first entry too
        "getEntry": {
            "operationId": "getEntry",
            "parameters": {**_CHAIN_ID, "entry_hash": "$response.body#/entry_hash"},
        },
    },
    "createEntry": {
        "getEntry": {
            "operationId": "getEntry",
            "parameters": {**_CHAIN_ID, "entry_hash": "$response.body#/entry_hash"},
        }
    },
}

_SECURITY_SCHEMES = {
    "userKey": {"type": "apiKey", "in": "header", "name": "user-key"},
    "appId": {"type": "apiKey", "in": "header", "name": "app_id"},
    "appKey": {"type": "apiKey", "in": "header", "name": "app_key"},
}


def build_openapi(app: FastAPI, settings: ApiSettings) -> dict[str, Any]:
    """The completed OpenAPI document of ``app`` (module docstring)."""
    document = get_openapi(
        title=app.title,
        version=app.version,
        description=(
            "Publishing REST API: chains and entries on the ledger, with durability stages "
            "multi_az, ledger and anchor. Every call needs the user-key header."
        ),
        routes=app.routes,
    )
    components = document.setdefault("components", {})
    schemas = components.setdefault("schemas", {})
    for name in ("HTTPValidationError", "ValidationError"):
        schemas.pop(name, None)
    schemas["Error"] = ERROR_SCHEMA
    for model in (ChainCreate, EntryCreate, EntryBatchCreate, ExternalIds):
        schemas[model.__name__] = _request_schema(model)
    batch_entries = schemas[EntryBatchCreate.__name__]["properties"]["entries"]
    batch_entries["maxItems"] = settings.bulk_max_entries
    # Any item is accepted, and one that is not an EntryCreate gets its own error in the
    # 202 body (docs/rest-api.md §5.2): the schema says so rather than promise a 400.
    batch_entries["items"] = {
        "anyOf": [{"$ref": "#/components/schemas/EntryCreate"}, {}],
        "description": (
            "An operation 6 body (EntryCreate). An item that is not one is answered by its "
            "own error in the 202 body; the other items are still written."
        ),
    }
    components["securitySchemes"] = _SECURITY_SCHEMES
    document["security"] = [{"userKey": []}, {"appId": [], "appKey": []}]
    for path_item in document.get("paths", {}).values():
        for operation in path_item.values():
            _complete(operation, settings)
    return document


def _request_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The model's JSON schema with the Base64 and URL rules the handlers enforce."""
    schema = model.model_json_schema(ref_template="#/components/schemas/{model}")
    schema.pop("$defs", None)
    base64 = {"type": "string", "pattern": BASE64_PATTERN, "contentEncoding": "base64"}
    properties = schema.get("properties", {})
    if "external_ids" in properties:
        ids = properties["external_ids"]
        array = {"type": "array", "items": base64}
        if "minItems" in ids:
            array["minItems"] = ids["minItems"]
        properties["external_ids"] = (
            {"anyOf": [array, {"type": "null"}]} if "anyOf" in ids else array
        )
    if "content" in properties:
        properties["content"] = {"anyOf": [base64, {"type": "null"}]}
    if "callback_url" in properties:
        url = {"type": "string", "format": "uri", "pattern": "^https?://"}
        properties["callback_url"] = {
            "anyOf": [url, {"type": "null"}],
            "description": "http(s) URL; private and loopback hosts are refused (422) "
            "unless allowed by the service's configuration",
        }
    return schema


def _complete(operation: dict[str, Any], settings: ApiSettings) -> None:
    body_model, codes = _OPERATIONS[operation["operationId"]]
    if body_model is not None:
        ref = {"$ref": f"#/components/schemas/{body_model.__name__}"}
        operation["requestBody"] = {
            "required": True,
            "content": {"application/json": {"schema": ref}},
        }
    responses = operation.setdefault("responses", {})
    responses.pop("422", None)  # FastAPI's validation error: this API answers 400 instead
    for code in sorted({*codes, 403, 429, 500}):
        responses[str(code)] = {
            "description": _ERRORS[code],
            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
        }
    for parameter in operation.get("parameters", []):
        _bound(parameter, settings)
    links = _LINKS.get(operation["operationId"])
    success = responses.get("202") or responses.get("200")
    if links and success is not None:
        success["links"] = links


def _bound(parameter: dict[str, Any], settings: ApiSettings) -> None:
    if parameter.get("in") != "query":
        return
    if parameter["name"] == "limit":
        parameter["schema"] = {
            "type": "integer",
            "minimum": 1,
            "maximum": settings.page_size_max,
            "default": settings.page_size_default,
        }
    elif parameter["name"] == "offset":
        parameter["schema"] = {"type": "integer", "minimum": 0, "maximum": MAX_OFFSET, "default": 0}
    elif parameter["name"] == "stage":
        parameter["schema"] = {"type": "string", "enum": list(PUBLIC_STAGES)}
        parameter["description"] = "only the entries at this stage (an extension)"
