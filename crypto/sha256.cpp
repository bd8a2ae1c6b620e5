#include "crypto/sha256.h"

#include <openssl/evp.h>

#include <cassert>
#include <cstdio>
#include <cstdlib>

namespace vt::crypto {
namespace {

// Abort on an OpenSSL failure in SHA-256: with a fetched, valid EVP_MD the
// calls below fail only on memory exhaustion or a broken OpenSSL install,
// and a wrong hash would be far worse than stopping.
void Check(int ok, const char* what) {
  if (ok != 1) {
    std::fprintf(stderr, "fatal: OpenSSL %s failed in SHA-256\n", what);
    std::abort();
  }
}

// Fetched once: EVP_sha256() would do an implicit provider fetch on every
// EVP_DigestInit_ex, which costs more than hashing a small message. It is
// deliberately never freed: OpenSSL tears its providers down in an atexit
// handler and the ordering against static destructors is not ours to rely on.
const EVP_MD* Md() {
  static const EVP_MD* md = [] {
    EVP_MD* fetched = EVP_MD_fetch(nullptr, "SHA256", nullptr);
    if (fetched == nullptr) {
      std::fprintf(stderr, "fatal: OpenSSL has no SHA256 digest\n");
      std::abort();
    }
    return fetched;
  }();
  return md;
}

EVP_MD_CTX* NewCtx() {
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  if (ctx == nullptr) {
    std::fprintf(stderr, "fatal: EVP_MD_CTX_new failed\n");
    std::abort();
  }
  return ctx;
}

// A per-thread scratch context for one-shot and tagged hashing, so that hot
// paths allocate nothing per hash. Thread-local destructors run before
// OpenSSL's atexit cleanup, so freeing here is safe.
struct ScratchCtx {
  EVP_MD_CTX* ctx = NewCtx();
  ScratchCtx() = default;
  ScratchCtx(const ScratchCtx&) = delete;
  ScratchCtx& operator=(const ScratchCtx&) = delete;
  ~ScratchCtx() { EVP_MD_CTX_free(ctx); }
};

EVP_MD_CTX* Scratch() {
  thread_local ScratchCtx scratch;
  return scratch.ctx;
}

Hash256 Final(EVP_MD_CTX* ctx) {
  Hash256 out;
  unsigned int len = 0;
  Check(EVP_DigestFinal_ex(ctx, out.bytes.data(), &len), "EVP_DigestFinal_ex");
  assert(len == Hash256::kSize);
  return out;
}

}  // namespace

Sha256::Sha256() : m_ctx(NewCtx()) { Reset(); }

Sha256::~Sha256() { EVP_MD_CTX_free(m_ctx); }

Sha256::Sha256(const Sha256& other) : m_ctx(NewCtx()) {
  Check(EVP_MD_CTX_copy_ex(m_ctx, other.m_ctx), "EVP_MD_CTX_copy_ex");
}

Sha256& Sha256::operator=(const Sha256& other) {
  if (this != &other) Check(EVP_MD_CTX_copy_ex(m_ctx, other.m_ctx), "EVP_MD_CTX_copy_ex");
  return *this;
}

// A moved-from Sha256 gets a fresh context so it stays usable.
Sha256::Sha256(Sha256&& other) noexcept : m_ctx(other.m_ctx) {
  other.m_ctx = NewCtx();
  other.Reset();
}

Sha256& Sha256::operator=(Sha256&& other) noexcept {
  if (this != &other) {
    EVP_MD_CTX* old = m_ctx;
    m_ctx = other.m_ctx;
    other.m_ctx = old;
    other.Reset();
  }
  return *this;
}

Sha256& Sha256::Update(ByteSpan data) {
  Check(EVP_DigestUpdate(m_ctx, data.data(), data.size()), "EVP_DigestUpdate");
  return *this;
}

Hash256 Sha256::Finalize() {
  Hash256 out = Final(m_ctx);
  Reset();
  return out;
}

void Sha256::Reset() { Check(EVP_DigestInit_ex(m_ctx, Md(), nullptr), "EVP_DigestInit_ex"); }

Hash256 Sha256Digest(ByteSpan data) {
  EVP_MD_CTX* ctx = Scratch();
  Check(EVP_DigestInit_ex(ctx, Md(), nullptr), "EVP_DigestInit_ex");
  Check(EVP_DigestUpdate(ctx, data.data(), data.size()), "EVP_DigestUpdate");
  return Final(ctx);
}

TaggedHasher::TaggedHasher(std::string_view tag) : m_tag(tag) {
  const Hash256 tag_hash = Sha256Digest(AsBytes(tag));
  m_primed.Update(tag_hash.span()).Update(tag_hash.span());
}

Hash256 TaggedHasher::Hash(ByteSpan data) const {
  EVP_MD_CTX* ctx = Scratch();
  Check(EVP_MD_CTX_copy_ex(ctx, m_primed.m_ctx), "EVP_MD_CTX_copy_ex");
  Check(EVP_DigestUpdate(ctx, data.data(), data.size()), "EVP_DigestUpdate");
  return Final(ctx);
}

Hash256 TaggedHasher::Hash(std::initializer_list<ByteSpan> parts) const {
  EVP_MD_CTX* ctx = Scratch();
  Check(EVP_MD_CTX_copy_ex(ctx, m_primed.m_ctx), "EVP_MD_CTX_copy_ex");
  for (ByteSpan part : parts) {
    Check(EVP_DigestUpdate(ctx, part.data(), part.size()), "EVP_DigestUpdate");
  }
  return Final(ctx);
}

Hash256 TaggedHash(std::string_view tag, ByteSpan data) { return TaggedHasher(tag).Hash(data); }

}  // namespace vt::crypto
