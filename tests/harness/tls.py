"""Throw-away TLS material: a certificate authority (``trustme``) and a server certificate.

``issue_certificate(folder)`` writes, for ``127.0.0.1`` and ``localhost``, the server's
certificate chain and key and the authority's certificate as PEM files, for services
given ``tls_cert_file`` / ``tls_key_file`` and clients given ``tls_ca_file``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import trustme

__all__ = ["TlsFiles", "issue_certificate"]


@dataclass(frozen=True)
class TlsFiles:
    """PEM files: ``cert_file`` and ``key_file`` of the server, ``ca_file`` of the authority
    that issued it (``authority`` itself, to configure a client's trust directly)."""

    cert_file: Path
    key_file: Path
    ca_file: Path
    authority: trustme.CA


def issue_certificate(folder: Path) -> TlsFiles:
    """A new authority and a server certificate it issued, written into ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    authority = trustme.CA()
    cert = authority.issue_cert("127.0.0.1", "localhost")
    files = TlsFiles(folder / "server.pem", folder / "server.key", folder / "ca.pem", authority)
    cert.private_key_pem.write_to_path(str(files.key_file))
    cert.cert_chain_pems[0].write_to_path(str(files.cert_file))
    authority.cert_pem.write_to_path(str(files.ca_file))
    return files
