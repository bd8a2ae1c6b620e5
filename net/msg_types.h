#pragma once
// The one table of P2P message types (docs/formats.md, "P2P wire format").
// Each row is one message: its MsgType enumerator, its wire number, its name
// in logs, the largest payload a frame of it may carry, when it is allowed,
// and the P2PNode member that handles it. The enum, MaxPayload, MsgTypeName,
// the phase check and the dispatch are all generated from this list, so
// adding a message is one row here plus its handler.
//
// Wire numbers are append-only: never renumber or reuse one. Ranges: 1-15
// session, 16-31 gossip, 32-47 sync, 48-63 blobs; new groups take the next
// free range of 16.
//
// Phases: kHandshake before the peer proved its node key (a second one after
// that is a violation), kEstablished only after it, kAny at any time.

#include <cstdint>

#include "common/limits.h"

// clang-format off
#define VT_NET_MSG_TYPES(X)                                                                                  \
  /* enumerator      wire  name              max payload bytes                      phase         handler */ \
  /* Session */                                                                                              \
  X(kHello,          1,    "hello",          std::uint32_t{1} << 10,                kHandshake,   HandleHello)      \
  X(kDisconnect,     2,    "disconnect",     512,                                   kAny,         HandleDisconnect) \
  X(kPing,           3,    "ping",           8,                                     kEstablished, HandlePing)       \
  X(kPong,           4,    "pong",           8,                                     kEstablished, HandlePong)       \
  X(kAuth,           5,    "auth",           64,                                    kHandshake,   HandleAuth)       \
  /* Gossip: opaque payloads, content id = SHA-256 of the payload; the chain's own caps */                  \
  X(kTx,             16,   "tx",             ::vt::limits::kMaxTxBytes,             kEstablished, HandleGossip)     \
  X(kBlock,          17,   "block",          ::vt::limits::kMaxBlockBytes,          kEstablished, HandleGossip)     \
  /* a signed BFT proposal with its block, or a signed vote (consensus/wire.h); block cap + 1 KiB */       \
  X(kConsensus,      18,   "consensus",      ::vt::limits::kMaxBlockBytes + 1024,   kEstablished, HandleGossip)     \
  /* Sync */                                                                                                 \
  X(kGetHeaders,     32,   "get-headers",    64,                                    kEstablished, HandleGetItems)   \
  X(kHeaders,        33,   "headers",        std::uint32_t{4} << 20,                kEstablished, HandleItems)      \
  X(kGetBlocks,      34,   "get-blocks",     64,                                    kEstablished, HandleGetItems)   \
  X(kBlocks,         35,   "blocks",         ::vt::net::kMaxFramePayload,           kEstablished, HandleItems)      \
  /* Content-addressed blobs */                                                                              \
  X(kGetBlob,        48,   "get-blob",       128,                                   kEstablished, HandleGetBlob)    \
  X(kBlobChunk,      49,   "blob-chunk",     ::vt::net::kMaxFramePayload,           kEstablished, HandleBlobChunk)  \
  X(kBlobNotFound,   50,   "blob-not-found", 64,                                    kEstablished, HandleBlobNotFound)
// clang-format on
