#!/usr/bin/env python3
"""Independent reference for the golden vectors hard-coded in
tests/crypto/sha256_test.cpp, merkle_test.cpp and keys_test.cpp.

Only Python's hashlib is used, so a bug in crypto/ cannot leak into the
expected values. Run: python3 tests/crypto/data/golden_vectors.py
"""
import hashlib
import struct


def sha256(b: bytes) -> bytes:
    return hashlib.sha256(b).digest()


def tagged(tag: str, data: bytes) -> bytes:
    t = sha256(tag.encode())
    return sha256(t + t + data)


def leaf(b: bytes) -> bytes:
    return tagged("veritrain/merkle/leaf/v1", b"\x00" + b)


def node(l: bytes, r: bytes) -> bytes:
    return tagged("veritrain/merkle/node/v1", b"\x01" + l + r)


def root(leaf_hashes):
    n = len(leaf_hashes)
    level = list(leaf_hashes)
    if n == 0:
        top = bytes(32)
    else:
        while len(level) > 1:
            nxt = [node(level[i], level[i + 1]) for i in range(0, len(level) - 1, 2)]
            if len(level) % 2:
                nxt.append(level[-1])  # promoted, never duplicated
            level = nxt
        top = level[0]
    return tagged("veritrain/merkle/root/v1", struct.pack("<Q", n) + top)


print("tagged(veritrain/test/v1, '')   ", tagged("veritrain/test/v1", b"").hex())
print("tagged(veritrain/test/v1, 'abc')", tagged("veritrain/test/v1", b"abc").hex())
print("tagged(BIP0340/challenge, '')   ", tagged("BIP0340/challenge", b"").hex())
print("leaf('')                        ", leaf(b"").hex())
print("node(0^32, 0^32)                ", node(bytes(32), bytes(32)).hex())
print("root([])                        ", root([]).hex())
print("root(['a'])                     ", root([leaf(b"a")]).hex())
print("root(['a','b','c'])             ", root([leaf(x) for x in (b"a", b"b", b"c")]).hex())
print("root(['a','b','c','d','e'])     ", root([leaf(x) for x in (b"a", b"b", b"c", b"d", b"e")]).hex())
print("root(leaf(i as u32le) i<7)      ", root([leaf(struct.pack("<I", i)) for i in range(7)]).hex())
pk = bytes.fromhex("F9308A019258C31049344F85F89D5229B531C845836F99B08601F113BCE036F9")
print("address(BIP-340 vector 0 key)   ", tagged("veritrain/address/v1", pk)[:20].hex())
