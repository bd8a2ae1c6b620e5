#include "crypto/keys.h"

#include <secp256k1.h>
#include <secp256k1_extrakeys.h>
#include <secp256k1_schnorrsig.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ostream>

#include "crypto/random.h"
#include "crypto/sha256.h"
#include "crypto/tags.h"

namespace vt::crypto {
namespace {

static_assert(sizeof(secp256k1_xonly_pubkey) == 64, "PublicKey::m_parsed size");
static_assert(sizeof(secp256k1_keypair) == 96, "SecretKey::m_keypair size");

// One process-wide context. Signing and verification take it as const and
// are thread safe; it is randomized once (blinding against side channels)
// before anyone can use it.
const secp256k1_context* Ctx() {
  static const secp256k1_context* ctx = [] {
    secp256k1_context* c = secp256k1_context_create(SECP256K1_CONTEXT_NONE);
    if (c == nullptr) {
      std::fprintf(stderr, "fatal: secp256k1_context_create failed\n");
      std::abort();
    }
    std::array<std::uint8_t, 32> seed{};
    // Randomization only hardens against side channels; without OS
    // randomness the context is still correct, so a failure is not fatal.
    if (FillOsRandom(seed).ok() && secp256k1_context_randomize(c, seed.data()) != 1) {
      std::fprintf(stderr, "fatal: secp256k1_context_randomize failed\n");
      std::abort();
    }
    SecureWipe(seed.data(), seed.size());
    return c;
  }();
  return ctx;
}

secp256k1_xonly_pubkey* Parsed(std::array<unsigned char, 64>& raw) {
  return reinterpret_cast<secp256k1_xonly_pubkey*>(raw.data());
}
const secp256k1_xonly_pubkey* Parsed(const std::array<unsigned char, 64>& raw) {
  return reinterpret_cast<const secp256k1_xonly_pubkey*>(raw.data());
}
secp256k1_keypair* Keypair(std::array<unsigned char, 96>& raw) {
  return reinterpret_cast<secp256k1_keypair*>(raw.data());
}
const secp256k1_keypair* Keypair(const std::array<unsigned char, 96>& raw) {
  return reinterpret_cast<const secp256k1_keypair*>(raw.data());
}

}  // namespace

// ---- Address / Signature -------------------------------------------------------

Address Address::Of(const PublicKey& key) {
  static const TaggedHasher hasher(tags::kAddress);
  const Hash256 h = hasher.Hash(key.span());
  Address a;
  std::copy_n(h.bytes.begin(), kSize, a.bytes.begin());
  return a;
}

Result<Address> Address::FromBytes(ByteSpan bytes) {
  if (bytes.size() != kSize) return Status::Invalid("address-bad-length", "an address is 20 bytes");
  Address a;
  std::copy(bytes.begin(), bytes.end(), a.bytes.begin());
  return a;
}

Result<Address> Address::FromHex(std::string_view hex) {
  auto bytes = vt::FromHex(hex);
  if (!bytes.ok()) return Status::Invalid("address-bad-hex", bytes.status().detail());
  return FromBytes(*bytes);
}

Result<Signature> Signature::FromBytes(ByteSpan bytes) {
  if (bytes.size() != kSize) return Status::Invalid("sig-bad-length", "a signature is 64 bytes");
  Signature s;
  std::copy(bytes.begin(), bytes.end(), s.bytes.begin());
  return s;
}

Result<Signature> Signature::FromHex(std::string_view hex) {
  auto bytes = vt::FromHex(hex);
  if (!bytes.ok()) return Status::Invalid("sig-bad-hex", bytes.status().detail());
  return FromBytes(*bytes);
}

// ---- PublicKey -----------------------------------------------------------------

Result<PublicKey> PublicKey::FromBytes(ByteSpan bytes) {
  if (bytes.size() != kSize) return Status::Invalid("pubkey-bad-length", "an x-only public key is 32 bytes");
  PublicKey key;
  if (secp256k1_xonly_pubkey_parse(Ctx(), Parsed(key.m_parsed), bytes.data()) != 1) {
    return Status::Invalid("pubkey-invalid", "not the x coordinate of a curve point");
  }
  std::copy(bytes.begin(), bytes.end(), key.m_bytes.begin());
  return key;
}

Result<PublicKey> PublicKey::FromHex(std::string_view hex) {
  auto bytes = vt::FromHex(hex);
  if (!bytes.ok()) return Status::Invalid("pubkey-bad-hex", bytes.status().detail());
  return FromBytes(*bytes);
}

// ---- SecretKey -----------------------------------------------------------------

Result<SecretKey> SecretKey::FromBytes(ByteSpan secret) {
  if (secret.size() != kSize) return Status::Invalid("seckey-bad-length", "a secret key is 32 bytes");
  SecretKey key;
  std::copy(secret.begin(), secret.end(), key.m_secret.begin());
  if (secp256k1_keypair_create(Ctx(), Keypair(key.m_keypair), key.m_secret.data()) != 1) {
    return Status::Invalid("seckey-invalid", "secret key is zero or not below the curve order");
  }
  if (secp256k1_keypair_xonly_pub(Ctx(), Parsed(key.m_public.m_parsed), nullptr, Keypair(key.m_keypair)) !=
          1 ||
      secp256k1_xonly_pubkey_serialize(Ctx(), key.m_public.m_bytes.data(), Parsed(key.m_public.m_parsed)) !=
          1) {
    return Status::Error("seckey-derive-failed", "could not derive the public key");
  }
  return key;
}

Result<SecretKey> SecretKey::Generate() {
  std::array<std::uint8_t, kSize> secret{};
  // A uniformly random 32-byte string is invalid with probability ~2^-128;
  // the loop is for correctness, not expected to iterate.
  for (;;) {
    Status st = FillOsRandom(secret);
    if (!st.ok()) return st;
    auto key = FromBytes(secret);
    SecureWipe(secret.data(), secret.size());
    if (key.ok()) return key;
    if (key.status().is_error()) return key.status();
  }
}

SecretKey::SecretKey(SecretKey&& other) noexcept
    : m_secret(other.m_secret), m_keypair(other.m_keypair), m_public(other.m_public) {
  other.Wipe();
}

SecretKey& SecretKey::operator=(SecretKey&& other) noexcept {
  if (this != &other) {
    m_secret = other.m_secret;
    m_keypair = other.m_keypair;
    m_public = other.m_public;
    other.Wipe();
  }
  return *this;
}

SecretKey::~SecretKey() { Wipe(); }

void SecretKey::Wipe() noexcept {
  SecureWipe(m_secret.data(), m_secret.size());
  SecureWipe(m_keypair.data(), m_keypair.size());
}

SecretKey SecretKey::Clone() const {
  SecretKey copy;
  copy.m_secret = m_secret;
  copy.m_keypair = m_keypair;
  copy.m_public = m_public;
  return copy;
}

std::ostream& operator<<(std::ostream& os, const SecretKey& key) {
  return os << "SecretKey(<redacted>, pub=" << key.public_key().Hex() << ")";
}

// ---- signatures ----------------------------------------------------------------

Result<Signature> SignWithAux(const SecretKey& key, ByteSpan message,
                              std::span<const std::uint8_t, 32> aux_rand) {
  secp256k1_schnorrsig_extraparams params = SECP256K1_SCHNORRSIG_EXTRAPARAMS_INIT;
  // libsecp256k1 takes ndata as non-const void* but only reads it.
  params.ndata = const_cast<std::uint8_t*>(aux_rand.data());
  Signature sig;
  if (secp256k1_schnorrsig_sign_custom(Ctx(), sig.bytes.data(), message.data(), message.size(),
                                       Keypair(key.m_keypair), &params) != 1) {
    return Status::Error("sign-failed", "secp256k1_schnorrsig_sign_custom failed");
  }
  if (!Verify(key.public_key(), message, sig)) {
    return Status::Error("sign-failed", "signature failed its self-check");
  }
  return sig;
}

Result<Signature> Sign(const SecretKey& key, ByteSpan message) {
  std::array<std::uint8_t, 32> aux{};
  VT_TRY(FillOsRandom(aux));
  auto sig = SignWithAux(key, message, aux);
  SecureWipe(aux.data(), aux.size());
  return sig;
}

bool Verify(const PublicKey& key, ByteSpan message, const Signature& sig) {
  return secp256k1_schnorrsig_verify(Ctx(), sig.bytes.data(), message.data(), message.size(),
                                     Parsed(key.m_parsed)) == 1;
}

bool VerifyBytes(ByteSpan public_key, ByteSpan message, ByteSpan signature) {
  auto key = PublicKey::FromBytes(public_key);
  auto sig = Signature::FromBytes(signature);
  return key.ok() && sig.ok() && Verify(*key, message, *sig);
}

// ---- encodings -----------------------------------------------------------------

void Encode(Writer& w, const Address& a) { w.PutFixed(a.bytes); }
Result<Address> Decode(Reader& r, DecodeAs<Address>) {
  VT_ASSIGN_OR_RETURN(ByteSpan bytes, r.GetFixed(Address::kSize));
  return Address::FromBytes(bytes);
}

void Encode(Writer& w, const PublicKey& key) { w.PutFixed(key.bytes()); }
Result<PublicKey> Decode(Reader& r, DecodeAs<PublicKey>) {
  VT_ASSIGN_OR_RETURN(ByteSpan bytes, r.GetFixed(PublicKey::kSize));
  return PublicKey::FromBytes(bytes);
}

void Encode(Writer& w, const Signature& sig) { w.PutFixed(sig.bytes); }
Result<Signature> Decode(Reader& r, DecodeAs<Signature>) {
  VT_ASSIGN_OR_RETURN(ByteSpan bytes, r.GetFixed(Signature::kSize));
  return Signature::FromBytes(bytes);
}

}  // namespace vt::crypto
