#include "crypto/session_cipher.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include <algorithm>
#include <limits>

namespace vt::crypto {

namespace {
struct PkeyFree {
  void operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); }
};
struct PkeyCtxFree {
  void operator()(EVP_PKEY_CTX* p) const { EVP_PKEY_CTX_free(p); }
};
using Pkey = std::unique_ptr<EVP_PKEY, PkeyFree>;
using PkeyCtx = std::unique_ptr<EVP_PKEY_CTX, PkeyCtxFree>;

std::array<std::uint8_t, 12> Nonce(std::uint64_t counter) {
  std::array<std::uint8_t, 12> n{};
  for (int i = 0; i < 8; ++i) n[4 + i] = static_cast<std::uint8_t>(counter >> (8 * i));
  return n;
}
}  // namespace

// ---- X25519 -------------------------------------------------------------------------

Result<X25519Key> X25519Key::Generate() {
  PkeyCtx ctx(EVP_PKEY_CTX_new_id(EVP_PKEY_X25519, nullptr));
  EVP_PKEY* raw = nullptr;
  if (!ctx || EVP_PKEY_keygen_init(ctx.get()) != 1 || EVP_PKEY_keygen(ctx.get(), &raw) != 1) {
    return Status::Error("x25519-keygen-failed");
  }
  Pkey pkey(raw);
  X25519Key key;
  std::size_t priv_len = key.m_private.size(), pub_len = key.m_public.size();
  if (EVP_PKEY_get_raw_private_key(pkey.get(), key.m_private.data(), &priv_len) != 1 ||
      EVP_PKEY_get_raw_public_key(pkey.get(), key.m_public.data(), &pub_len) != 1 || priv_len != kX25519Bytes ||
      pub_len != kX25519Bytes) {
    return Status::Error("x25519-keygen-failed");
  }
  return key;
}

X25519Key::X25519Key(X25519Key&& other) noexcept : m_private(other.m_private), m_public(other.m_public) {
  OPENSSL_cleanse(other.m_private.data(), other.m_private.size());
}

X25519Key& X25519Key::operator=(X25519Key&& other) noexcept {
  if (this != &other) {
    m_private = other.m_private;
    m_public = other.m_public;
    OPENSSL_cleanse(other.m_private.data(), other.m_private.size());
  }
  return *this;
}

X25519Key::~X25519Key() { OPENSSL_cleanse(m_private.data(), m_private.size()); }

Result<SharedSecret> X25519Key::Agree(const X25519Public& peer) const {
  Pkey ours(EVP_PKEY_new_raw_private_key(EVP_PKEY_X25519, nullptr, m_private.data(), m_private.size()));
  Pkey theirs(EVP_PKEY_new_raw_public_key(EVP_PKEY_X25519, nullptr, peer.data(), peer.size()));
  if (!ours || !theirs) return Status::Error("x25519-failed");
  PkeyCtx ctx(EVP_PKEY_CTX_new(ours.get(), nullptr));
  SharedSecret secret{};
  std::size_t len = secret.size();
  // OpenSSL refuses an all-zero result itself; the check below keeps the
  // rule visible and independent of the library version.
  if (!ctx || EVP_PKEY_derive_init(ctx.get()) != 1 || EVP_PKEY_derive_set_peer(ctx.get(), theirs.get()) != 1 ||
      EVP_PKEY_derive(ctx.get(), secret.data(), &len) != 1 || len != secret.size()) {
    return Status::Invalid("ecdh-bad-point");
  }
  if (std::all_of(secret.begin(), secret.end(), [](std::uint8_t b) { return b == 0; })) {
    return Status::Invalid("ecdh-bad-point");
  }
  return secret;
}

// ---- ChaCha20-Poly1305 --------------------------------------------------------------

struct SessionCipher::Ctx {
  EVP_CIPHER_CTX* enc = nullptr;  // keyed once; the nonce is set per message
  EVP_CIPHER_CTX* dec = nullptr;
  ~Ctx() {
    EVP_CIPHER_CTX_free(enc);
    EVP_CIPHER_CTX_free(dec);
  }
};

SessionCipher::SessionCipher(std::unique_ptr<Ctx> ctx) : m_ctx(std::move(ctx)) {}
SessionCipher::SessionCipher(SessionCipher&&) noexcept = default;
SessionCipher& SessionCipher::operator=(SessionCipher&&) noexcept = default;
SessionCipher::~SessionCipher() = default;

Result<SessionCipher> SessionCipher::Create(const AeadKey& key) {
  auto ctx = std::make_unique<Ctx>();
  ctx->enc = EVP_CIPHER_CTX_new();
  ctx->dec = EVP_CIPHER_CTX_new();
  if (ctx->enc == nullptr || ctx->dec == nullptr ||
      EVP_EncryptInit_ex(ctx->enc, EVP_chacha20_poly1305(), nullptr, key.data(), nullptr) != 1 ||
      EVP_DecryptInit_ex(ctx->dec, EVP_chacha20_poly1305(), nullptr, key.data(), nullptr) != 1) {
    return Status::Error("aead-init-failed");
  }
  return SessionCipher(std::move(ctx));
}

Status SessionCipher::Seal(ByteSpan aad, ByteSpan plaintext, Bytes& out) {
  if (m_counter == std::numeric_limits<std::uint64_t>::max()) return Status::Error("aead-counter-exhausted");
  EVP_CIPHER_CTX* c = m_ctx->enc;
  const auto nonce = Nonce(m_counter);
  const std::size_t base = out.size();
  out.resize(base + plaintext.size() + kAeadTagBytes);
  int len = 0;
  if (EVP_EncryptInit_ex(c, nullptr, nullptr, nullptr, nonce.data()) != 1 ||
      (!aad.empty() && EVP_EncryptUpdate(c, nullptr, &len, aad.data(), static_cast<int>(aad.size())) != 1) ||
      (!plaintext.empty() &&
       EVP_EncryptUpdate(c, out.data() + base, &len, plaintext.data(), static_cast<int>(plaintext.size())) != 1) ||
      EVP_EncryptFinal_ex(c, out.data() + base + plaintext.size(), &len) != 1 ||
      EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_AEAD_GET_TAG, static_cast<int>(kAeadTagBytes),
                          out.data() + base + plaintext.size()) != 1) {
    out.resize(base);
    return Status::Error("aead-seal-failed");
  }
  ++m_counter;
  return Status::Ok();
}

Result<Bytes> SessionCipher::Open(ByteSpan aad, ByteSpan sealed) {
  if (sealed.size() < kAeadTagBytes || m_counter == std::numeric_limits<std::uint64_t>::max()) {
    return Status::Invalid("aead-bad-tag");
  }
  EVP_CIPHER_CTX* c = m_ctx->dec;
  const auto nonce = Nonce(m_counter);
  const std::size_t n = sealed.size() - kAeadTagBytes;
  Bytes plain(n);
  std::array<std::uint8_t, kAeadTagBytes> tag{};
  std::copy(sealed.begin() + static_cast<std::ptrdiff_t>(n), sealed.end(), tag.begin());
  int len = 0;
  if (EVP_DecryptInit_ex(c, nullptr, nullptr, nullptr, nonce.data()) != 1 ||
      (!aad.empty() && EVP_DecryptUpdate(c, nullptr, &len, aad.data(), static_cast<int>(aad.size())) != 1) ||
      (n > 0 && EVP_DecryptUpdate(c, plain.data(), &len, sealed.data(), static_cast<int>(n)) != 1) ||
      EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_AEAD_SET_TAG, static_cast<int>(kAeadTagBytes), tag.data()) != 1 ||
      EVP_DecryptFinal_ex(c, plain.data() + n, &len) != 1) {
    OPENSSL_cleanse(plain.data(), plain.size());
    return Status::Invalid("aead-bad-tag");
  }
  ++m_counter;
  return plain;
}

}  // namespace vt::crypto
