"""Test certificates (not a test): a certificate signed now by a test certificate authority, for
the TLS servers the tests start (the Thrift server's --tls-cert, the Kafka broker's SASL_SSL
listener)."""

from __future__ import annotations

import datetime
import ipaddress

from cryptography import x509
from cryptography.hazmat.primitives import hashes
from cryptography.x509.oid import NameOID


def name(common: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])


def certificate(subject: str, issuer: str, public_key, signing_key, ca: bool,
                days: int = 1) -> x509.Certificate:
    """`subject`'s certificate for `public_key`, signed by `issuer`'s `signing_key`, valid from
    five minutes ago for `days`; a server's (ca false) names localhost and 127.0.0.1."""
    now = datetime.datetime.now(datetime.timezone.utc)
    builder = (x509.CertificateBuilder().subject_name(name(subject)).issuer_name(name(issuer))
               .public_key(public_key).serial_number(x509.random_serial_number())
               .not_valid_before(now - datetime.timedelta(minutes=5))
               .not_valid_after(now + datetime.timedelta(days=days))
               .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
    if not ca:
        builder = builder.add_extension(x509.SubjectAlternativeName(
            [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False)
    return builder.sign(signing_key, hashes.SHA256())
