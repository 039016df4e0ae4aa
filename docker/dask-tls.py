"""Make the Dask cluster's TLS credentials once: a certificate authority of its own and a certificate
signed by it for the scheduler, the workers and the clients.

    python dask-tls.py FOLDER        (docker-compose.yml runs it in the `dask-tls` service)

FOLDER gets ca.pem (the authority every side trusts), ca-key.pem (which signs; keep it on the
server), and NAME.pem / NAME-key.pem for NAME in scheduler, worker and client. Files already there
are kept, so a restart keeps the credentials that workers on other hosts hold. Dask's TLS asks
each side for a certificate signed by ca.pem (distributed.security: CERT_REQUIRED both ways): a
client or worker without one, or with one from another authority, is refused at the handshake.
The certificates are valid for ten years; delete the folder's files to make new ones.
"""

from __future__ import annotations

import datetime
import os
import sys
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

ROLES = ("scheduler", "worker", "client")
DAYS = 3650


def _key(path: Path) -> ec.EllipticCurvePrivateKey:
    if path.exists():
        return serialization.load_pem_private_key(path.read_bytes(), password=None)
    key = ec.generate_private_key(ec.SECP256R1())
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)  # readable by its owner only
    with os.fdopen(fd, "wb") as fh:
        fh.write(pem)
    return key


def _name(common: str) -> x509.Name:
    return x509.Name(
        [x509.NameAttribute(NameOID.ORGANIZATION_NAME, "bottlenecks"), x509.NameAttribute(NameOID.COMMON_NAME, common)]
    )


def _certificate(subject: str, key, issuer: x509.Name, signer, ca: bool) -> x509.Certificate:
    now = datetime.datetime.now(datetime.timezone.utc)
    builder = (
        x509.CertificateBuilder()
        .subject_name(_name(subject))
        .issuer_name(issuer)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))  # a host whose clock is a little behind
        .not_valid_after(now + datetime.timedelta(days=DAYS))
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
    )
    if ca:
        builder = builder.add_extension(
            x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True
        )
    else:  # every node both listens and connects (workers talk to each other)
        usages = [ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]
        builder = builder.add_extension(x509.ExtendedKeyUsage(usages), critical=False)
    return builder.sign(signer, hashes.SHA256())


def make(folder: Path) -> list[str]:
    """Write the credentials missing from ``folder``; the names of the files written."""
    folder.mkdir(parents=True, exist_ok=True)
    before = set(os.listdir(folder))
    ca_key = _key(folder / "ca-key.pem")
    ca_file = folder / "ca.pem"
    if not ca_file.exists():
        ca_file.write_bytes(
            _certificate("dask-ca", ca_key, _name("dask-ca"), ca_key, True).public_bytes(serialization.Encoding.PEM)
        )
    ca = x509.load_pem_x509_certificate(ca_file.read_bytes())
    for role in ROLES:
        cert = folder / f"{role}.pem"
        key = _key(folder / f"{role}-key.pem")
        if not cert.exists():
            made = _certificate(f"dask-{role}", key, ca.subject, ca_key, False)
            cert.write_bytes(made.public_bytes(serialization.Encoding.PEM))
    return sorted(set(os.listdir(folder)) - before)


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    made = make(Path(argv[0]))
    print(f"Dask TLS credentials in {argv[0]}: " + (f"made {', '.join(made)}" if made else "kept (already there)"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
