#pragma once
// Internal to crypto/chunk_hash.cpp: the SHA-256 compression function of 16
// independent messages at once, one message per 32-bit lane of a 512-bit
// AVX-512 register (multi-buffer SHA-256). Rotations are single vprord,
// Ch/Maj/the three-way XORs of Σ and σ single vpternlogd: a round of 16
// messages is 19 vector instructions, a schedule word 11 — about 600 cycles
// per block of all 16 lanes on the development machine (Zen 5, where these
// instructions have a latency of 2 cycles and rotations issue two per
// cycle), against 64 cycles per block of one message for the SHA
// extensions' SHA256RNDS2 (crypto/chunk_hash.h gives the measured speeds).
//
// Only the kernel is compiled for AVX-512 (function target attributes); the
// rest of the library stays baseline x86-64, and callers check
// Sha256x16Available() first.

#include <cstdint>

namespace vt::crypto::detail {

// The SHA-256 round constants K (FIPS 180-4 §4.2.2), shared by every
// compression path of crypto/chunk_hash.cpp. Aligned for vector loads.
alignas(64) inline constexpr std::uint32_t kSha256Round[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

constexpr int kX16Lanes = 16;

// 16 chaining states, word-major as the kernel holds them in registers:
// word i (a..h) of lane l is h[i][l].
struct alignas(64) Sha256x16State {
  std::uint32_t h[8][kX16Lanes];
};

// Whether this CPU and OS run the kernel (AVX-512 F and BW: vpshufb on zmm
// for the byte swap; the OS saves zmm state).
bool Sha256x16Available();

// Compresses one 64-byte block into each lane's state: block[l] points at
// lane l's block (any alignment). Precondition: Sha256x16Available().
void Sha256x16Compress(Sha256x16State& state, const unsigned char* const (&block)[kX16Lanes]);

}  // namespace vt::crypto::detail
