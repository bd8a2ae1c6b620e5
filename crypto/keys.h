#pragma once
// secp256k1 keys, BIP-340 Schnorr signatures (libsecp256k1) and addresses.
//
//   public key  32-byte x-only key (BIP-340)
//   signature   64 bytes (BIP-340), over messages of any length
//   address     first 20 bytes of TaggedHash("veritrain/address/v1", xonly pubkey)

#include <array>
#include <compare>
#include <cstdint>
#include <iosfwd>
#include <span>
#include <string>
#include <string_view>

#include "common/bytes.h"
#include "common/encoding.h"
#include "common/result.h"

namespace vt::crypto {

class PublicKey;

struct Address {
  static constexpr std::size_t kSize = 20;
  std::array<std::uint8_t, kSize> bytes{};

  static Address Of(const PublicKey& key);
  // Invalid "address-bad-length" or "address-bad-hex".
  static Result<Address> FromBytes(ByteSpan bytes);
  static Result<Address> FromHex(std::string_view hex);
  // 40 lower-case hex digits.
  std::string Hex() const { return ToHex(bytes); }
  ByteSpan span() const { return bytes; }
  auto operator<=>(const Address&) const = default;
};

struct Signature {
  static constexpr std::size_t kSize = 64;
  std::array<std::uint8_t, kSize> bytes{};

  // Invalid "sig-bad-length" or "sig-bad-hex". Says nothing about validity.
  static Result<Signature> FromBytes(ByteSpan bytes);
  static Result<Signature> FromHex(std::string_view hex);
  std::string Hex() const { return ToHex(bytes); }
  ByteSpan span() const { return bytes; }
  auto operator<=>(const Signature&) const = default;
};

// An x-only public key that is known to lie on the curve.
class PublicKey {
 public:
  static constexpr std::size_t kSize = 32;

  // Invalid "pubkey-bad-length" or "pubkey-invalid" (not an x coordinate on
  // the curve, or not below the field size).
  static Result<PublicKey> FromBytes(ByteSpan bytes);
  static Result<PublicKey> FromHex(std::string_view hex);

  const std::array<std::uint8_t, kSize>& bytes() const { return m_bytes; }
  ByteSpan span() const { return m_bytes; }
  std::string Hex() const { return ToHex(m_bytes); }
  Address address() const { return Address::Of(*this); }

  bool operator==(const PublicKey& other) const { return m_bytes == other.m_bytes; }
  auto operator<=>(const PublicKey& other) const { return m_bytes <=> other.m_bytes; }

 private:
  friend class SecretKey;
  friend bool Verify(const PublicKey& key, ByteSpan message, const Signature& sig);
  PublicKey() = default;

  std::array<std::uint8_t, kSize> m_bytes{};
  // libsecp256k1's parsed secp256k1_xonly_pubkey, kept so that Verify does
  // not redo the square root of parsing on every call.
  std::array<unsigned char, 64> m_parsed{};
};

// A secp256k1 secret key. Not copyable (use Clone() when a copy is really
// meant), wiped on destruction and when moved from, and never printed: the
// stream operator writes "SecretKey(<redacted>)" plus the public key, so
// that test failures and logs cannot leak it.
class SecretKey {
 public:
  static constexpr std::size_t kSize = 32;

  // From getrandom(2); Error "os-random-failed".
  static Result<SecretKey> Generate();
  // Invalid "seckey-bad-length" or "seckey-invalid" (zero or >= the curve order).
  static Result<SecretKey> FromBytes(ByteSpan secret);

  SecretKey(const SecretKey&) = delete;
  SecretKey& operator=(const SecretKey&) = delete;
  SecretKey(SecretKey&& other) noexcept;
  SecretKey& operator=(SecretKey&& other) noexcept;
  ~SecretKey();

  SecretKey Clone() const;
  const PublicKey& public_key() const { return m_public; }
  Address address() const { return m_public.address(); }

  // The raw 32 secret bytes, for encrypting them into a key file. Whoever
  // copies them out must wipe the copy.
  std::span<const std::uint8_t, kSize> UnsafeSecretBytes() const { return m_secret; }

 private:
  friend Result<Signature> SignWithAux(const SecretKey& key, ByteSpan message,
                                       std::span<const std::uint8_t, 32> aux_rand);
  SecretKey() = default;
  void Wipe() noexcept;

  std::array<std::uint8_t, kSize> m_secret{};
  // libsecp256k1's secp256k1_keypair (holds the secret too), so that signing
  // does not recompute the public key.
  std::array<unsigned char, 96> m_keypair{};
  PublicKey m_public;
};

std::ostream& operator<<(std::ostream& os, const SecretKey& key);

// BIP-340 signature of `message` (any length) with 32 bytes of fresh OS
// randomness as aux_rand. Error "os-random-failed" or "sign-failed".
Result<Signature> Sign(const SecretKey& key, ByteSpan message);
// Deterministic BIP-340 signature with the given aux_rand (the BIP-340 test
// vectors; all-zero aux for reproducible tests). Every signature is verified
// before it is returned, as Bitcoin Core does, so that a fault during signing
// cannot leak a bad signature; a failure is Error "sign-failed".
Result<Signature> SignWithAux(const SecretKey& key, ByteSpan message,
                              std::span<const std::uint8_t, 32> aux_rand);

// BIP-340 verification of a signature over `message` (any length).
bool Verify(const PublicKey& key, ByteSpan message, const Signature& sig);
// The same from raw bytes as they arrive from a peer: false when the key is
// not a valid x-only key or a length is wrong.
bool VerifyBytes(ByteSpan public_key, ByteSpan message, ByteSpan signature);

// Canonical encodings (common/encoding.h): the raw fixed-size bytes, no
// prefix. Decoding a PublicKey also checks that it is a valid x-only key
// ("pubkey-invalid"); a Signature is only checked by Verify.
void Encode(Writer& w, const Address& a);
Result<Address> Decode(Reader& r, DecodeAs<Address>);
void Encode(Writer& w, const PublicKey& key);
Result<PublicKey> Decode(Reader& r, DecodeAs<PublicKey>);
void Encode(Writer& w, const Signature& sig);
Result<Signature> Decode(Reader& r, DecodeAs<Signature>);

}  // namespace vt::crypto
