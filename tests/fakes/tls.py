"""Certificates for loopback TLS tests, made on the spot with trustme.

One CA signs a certificate for ``localhost`` and ``127.0.0.1``. Servers take
``server_context``; clients trust the CA through ``ca_file`` (a PEM path for
SSL_CERT_FILE), the way a user points a client at a private CA. A client that
is not given ``ca_file`` trusts nothing here.

    certs = make_certs(tmp_path)
    fake = FakeProvider(ssl_context=certs.server_context)
    monkeypatch.setenv("SSL_CERT_FILE", certs.ca_file)
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass
from pathlib import Path

import trustme


@dataclass(frozen=True)
class Certs:
    ca_file: str  # the CA's certificate, PEM, for SSL_CERT_FILE
    server_context: ssl.SSLContext  # presents the localhost / 127.0.0.1 certificate


def make_certs(directory: Path) -> Certs:
    ca = trustme.CA()
    cert = ca.issue_cert("localhost", "127.0.0.1")
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    cert.configure_cert(context)
    path = directory / "ikigai-test-ca.pem"
    ca.cert_pem.write_to_path(str(path))
    return Certs(ca_file=str(path), server_context=context)
