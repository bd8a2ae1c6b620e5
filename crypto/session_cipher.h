#pragma once
// Transport encryption primitives for P2P sessions (net/session.h,
// docs/net.md "Frame encryption"), thin wrappers over OpenSSL:
//
// * X25519 (RFC 7748) ephemeral keys: a fresh key per connection, so a
//   session key never outlives its connection (forward secrecy);
// * ChaCha20-Poly1305 (RFC 8439) in one direction of a session: a 32-byte
//   key and a 64-bit counter; the nonce of the n-th sealed message is
//   4 zero bytes ‖ u64 LE n. Each message is sealed and opened exactly once,
//   in order, so a dropped, replayed, reordered or altered message fails to
//   open.

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "common/bytes.h"
#include "common/result.h"

namespace vt::crypto {

inline constexpr std::size_t kX25519Bytes = 32;
inline constexpr std::size_t kAeadKeyBytes = 32;
inline constexpr std::size_t kAeadTagBytes = 16;

using X25519Public = std::array<std::uint8_t, kX25519Bytes>;
using SharedSecret = std::array<std::uint8_t, kX25519Bytes>;
using AeadKey = std::array<std::uint8_t, kAeadKeyBytes>;

// An ephemeral X25519 key pair. The private half is wiped on destruction.
class X25519Key {
 public:
  // Error "x25519-keygen-failed" without OS randomness.
  static Result<X25519Key> Generate();
  X25519Key(X25519Key&& other) noexcept;
  X25519Key& operator=(X25519Key&& other) noexcept;
  X25519Key(const X25519Key&) = delete;
  X25519Key& operator=(const X25519Key&) = delete;
  ~X25519Key();

  const X25519Public& public_key() const { return m_public; }
  // X25519(ours, peer). Invalid "ecdh-bad-point" when the result is all
  // zeros (a low-order peer point: the peer would know the secret alone).
  Result<SharedSecret> Agree(const X25519Public& peer) const;

 private:
  X25519Key() = default;
  std::array<std::uint8_t, kX25519Bytes> m_private{};
  X25519Public m_public{};
};

// One direction of a session: seals (or opens) messages in order.
class SessionCipher {
 public:
  // Error "aead-init-failed" if OpenSSL lacks ChaCha20-Poly1305.
  static Result<SessionCipher> Create(const AeadKey& key);
  SessionCipher(SessionCipher&&) noexcept;
  SessionCipher& operator=(SessionCipher&&) noexcept;
  ~SessionCipher();

  // Appends ciphertext ‖ 16-byte tag of `plaintext` (with `aad`
  // authenticated, not encrypted) to `out`, under the next counter.
  // Error "aead-counter-exhausted" after 2^64 - 1 messages.
  Status Seal(ByteSpan aad, ByteSpan plaintext, Bytes& out);
  // The plaintext of the next message, or Invalid "aead-bad-tag" (the
  // counter does not advance; the session must end).
  Result<Bytes> Open(ByteSpan aad, ByteSpan sealed);
  std::uint64_t counter() const { return m_counter; }

 private:
  struct Ctx;
  explicit SessionCipher(std::unique_ptr<Ctx> ctx);
  std::unique_ptr<Ctx> m_ctx;
  std::uint64_t m_counter = 0;
};

}  // namespace vt::crypto
