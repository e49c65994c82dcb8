"""A throwaway self-signed certificate for the platforms' host names.

Chromium reaches the simulator through ``--host-resolver-rules`` and accepts this
certificate because it runs with ``--ignore-certificate-errors``; the names are still right
so that tools which check them (curl with ``--cacert``) work too.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import ssl
import tempfile
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from testmeeting.platforms import CERT_NAMES


def generate_pem(names: tuple[str, ...] = CERT_NAMES) -> tuple[bytes, bytes]:
    """Make a P-256 key and a self-signed certificate valid for ``names`` and 127.0.0.1.

    Returns:
        ``(certificate_pem, private_key_pem)``; the certificate is valid from one hour ago
        for 30 days.
    """
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "meetbot testmeeting")])
    now = dt.datetime.now(dt.UTC)
    alt_names: list[x509.GeneralName] = [x509.DNSName(name) for name in names]
    alt_names.append(x509.IPAddress(ipaddress.ip_address("127.0.0.1")))
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(hours=1))
        .not_valid_after(now + dt.timedelta(days=30))
        .add_extension(x509.SubjectAlternativeName(alt_names), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    key_pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    return cert.public_bytes(serialization.Encoding.PEM), key_pem


def server_ssl_context(cert_pem: bytes, key_pem: bytes) -> ssl.SSLContext:
    """A server-side TLS context holding the given certificate and key.

    ``ssl`` only loads key material from files, so both are written to a private temporary
    directory that is removed once loaded.
    """
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    with tempfile.TemporaryDirectory(prefix="testmeeting-tls-") as folder:
        cert_path = Path(folder) / "cert.pem"
        key_path = Path(folder) / "key.pem"
        cert_path.write_bytes(cert_pem)
        key_path.write_bytes(key_pem)
        key_path.chmod(0o600)
        context.load_cert_chain(cert_path, key_path)
    return context
