#pragma once
// SHA-256 through OpenSSL's EVP interface (which uses the SHA extensions or
// AVX2 code paths where the CPU has them) and BIP-340 style tagged hashing:
//
//   TaggedHash(tag, data) = SHA256(SHA256(tag) || SHA256(tag) || data)
//
// The 64-byte prefix is exactly one SHA-256 block, so a TaggedHasher absorbs
// it once and every later hash starts from that midstate.

#include <cstddef>
#include <initializer_list>
#include <string>
#include <string_view>

#include "common/bytes.h"

// Opaque OpenSSL type; kept out of this header so users do not see OpenSSL.
struct evp_md_ctx_st;

namespace vt::crypto {

// Streaming SHA-256. Construction is cheap (the EVP_MD is fetched once per
// process). Copying clones the running state, which is how midstates are
// shared. Finalize() returns the digest and resets the object to the empty
// state, so one Sha256 can hash many messages.
class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256& other);
  Sha256& operator=(const Sha256& other);
  Sha256(Sha256&& other) noexcept;
  Sha256& operator=(Sha256&& other) noexcept;

  Sha256& Update(ByteSpan data);
  Sha256& Update(std::string_view data) { return Update(AsBytes(data)); }
  // The digest of everything since construction or the last Reset/Finalize.
  Hash256 Finalize();
  // Back to the empty message.
  void Reset();

 private:
  friend class TaggedHasher;
  evp_md_ctx_st* m_ctx;
};

// One-shot SHA-256 of `data` (reuses a per-thread EVP context).
Hash256 Sha256Digest(ByteSpan data);
inline Hash256 Sha256Digest(std::string_view data) { return Sha256Digest(AsBytes(data)); }

// Tagged hashing with a fixed tag and a precomputed midstate. Hash() is const
// and may be called from several threads at once.
class TaggedHasher {
 public:
  explicit TaggedHasher(std::string_view tag);

  const std::string& tag() const { return m_tag; }
  // TaggedHash(tag, data).
  Hash256 Hash(ByteSpan data) const;
  // TaggedHash(tag, parts[0] || parts[1] || ...), without concatenating.
  Hash256 Hash(std::initializer_list<ByteSpan> parts) const;
  // A streaming hasher that has already absorbed the tag prefix.
  Sha256 Start() const { return m_primed; }

 private:
  std::string m_tag;
  Sha256 m_primed;
};

// TaggedHash(tag, data) for a tag used once; prefer a static TaggedHasher for
// tags on hot paths.
Hash256 TaggedHash(std::string_view tag, ByteSpan data);

}  // namespace vt::crypto
