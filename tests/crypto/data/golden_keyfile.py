#!/usr/bin/env python3
"""Prints the golden version-1 key file hard-coded (as hex) in
tests/crypto/keyfile_test.cpp, built from the format description in
docs/formats.md ("Key files"), independently of crypto/keyfile.cpp
(hashlib.scrypt + the 'cryptography' package's AES-GCM). The C++ test
decrypts it, so the reader and the document cannot drift apart. Fixed salt and nonce so that the file is reproducible byte for byte.

  secret key  B7E151628AED2A6ABF7158809CF4F3C762E7160F38B4DA56A784D9045190CFEF
              (BIP-340 test vector 1; public key DFF1D77F...BA659)
  passphrase  "veritrain golden passphrase"
  scrypt      N = 2^10, r = 8, p = 1
"""
import hashlib
import struct

from cryptography.hazmat.primitives.ciphers.aead import AESGCM

secret = bytes.fromhex("B7E151628AED2A6ABF7158809CF4F3C762E7160F38B4DA56A784D9045190CFEF")
pubkey = bytes.fromhex("DFF1D77F2A671C5F36183726DB2341BE58FEAE1DA2DECED843240F7B502BA659")
passphrase = b"veritrain golden passphrase"
log2_n, r, p = 10, 8, 1
salt = bytes(range(16))
nonce = bytes(range(100, 112))


def tagged(tag: str, data: bytes) -> bytes:
    t = hashlib.sha256(tag.encode()).digest()
    return hashlib.sha256(t + t + data).digest()


header = b"VTKEY\x00" + bytes([1, 1, log2_n]) + struct.pack("<II", r, p) + salt + nonce + pubkey
assert len(header) == 77
key = hashlib.scrypt(passphrase, salt=salt, n=1 << log2_n, r=r, p=p, dklen=32)
sealed = AESGCM(key).encrypt(nonce, secret, header)  # ciphertext || 16-byte tag
body = header + sealed
assert len(body) == 125
out = body + tagged("veritrain/keyfile/checksum/v1", body)
assert len(out) == 157
print(out.hex())
