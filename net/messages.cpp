#include "net/messages.h"

#include <string>

#include "net/frame.h"

namespace vt::net {

void Encode(Writer& w, const Hello& v) {
  w.PutU32(v.protocol_version);
  w.PutString(v.chain_id);
  w.PutHash(v.genesis_hash);
  w.PutHash(v.node_id);
  w.PutHash(v.challenge);
  w.PutHash(v.ephemeral);
  w.PutU16(v.listen_port);
  w.PutU64(v.best_height);
  w.PutString(v.user_agent);
}

Result<Hello> Decode(Reader& r, DecodeAs<Hello>) {
  Hello v;
  VT_ASSIGN_OR_RETURN(v.protocol_version, r.GetU32());
  VT_ASSIGN_OR_RETURN(v.chain_id, r.GetString(kMaxChainIdBytes));
  VT_ASSIGN_OR_RETURN(v.genesis_hash, r.GetHash());
  VT_ASSIGN_OR_RETURN(v.node_id, r.GetHash());
  VT_ASSIGN_OR_RETURN(v.challenge, r.GetHash());
  VT_ASSIGN_OR_RETURN(v.ephemeral, r.GetHash());
  VT_ASSIGN_OR_RETURN(v.listen_port, r.GetU16());
  VT_ASSIGN_OR_RETURN(v.best_height, r.GetU64());
  VT_ASSIGN_OR_RETURN(v.user_agent, r.GetString(kMaxUserAgentBytes));
  return v;
}

void Encode(Writer& w, const AuthMsg& v) { crypto::Encode(w, v.signature); }

Result<AuthMsg> Decode(Reader& r, DecodeAs<AuthMsg>) {
  AuthMsg v;
  VT_ASSIGN_OR_RETURN(v.signature, crypto::Decode(r, DecodeAs<crypto::Signature>{}));
  return v;
}

void Encode(Writer& w, const DisconnectMsg& v) { w.PutString(v.reason); }

Result<DisconnectMsg> Decode(Reader& r, DecodeAs<DisconnectMsg>) {
  DisconnectMsg v;
  VT_ASSIGN_OR_RETURN(v.reason, r.GetString(kMaxReasonBytes));
  return v;
}

void Encode(Writer& w, const PingMsg& v) { w.PutU64(v.nonce); }

Result<PingMsg> Decode(Reader& r, DecodeAs<PingMsg>) {
  PingMsg v;
  VT_ASSIGN_OR_RETURN(v.nonce, r.GetU64());
  return v;
}

void Encode(Writer& w, const GetItems& v) {
  w.PutU64(v.request_id);
  w.PutU64(v.from_height);
  w.PutU32(v.max_count);
}

Result<GetItems> Decode(Reader& r, DecodeAs<GetItems>) {
  GetItems v;
  VT_ASSIGN_OR_RETURN(v.request_id, r.GetU64());
  VT_ASSIGN_OR_RETURN(v.from_height, r.GetU64());
  VT_ASSIGN_OR_RETURN(v.max_count, r.GetU32());
  if (v.max_count == 0 || v.max_count > kMaxItemsPerResponse) {
    return Status::Invalid("msg-bad-count", "max_count " + std::to_string(v.max_count));
  }
  return v;
}

void Encode(Writer& w, const Items& v) {
  w.PutU64(v.request_id);
  w.PutU64(v.first_height);
  w.PutVector(v.items, [](Writer& wr, const Bytes& item) { wr.PutBytes(item); });
}

Result<Items> Decode(Reader& r, DecodeAs<Items>) {
  Items v;
  VT_ASSIGN_OR_RETURN(v.request_id, r.GetU64());
  VT_ASSIGN_OR_RETURN(v.first_height, r.GetU64());
  VT_ASSIGN_OR_RETURN(v.items, r.GetVector<Bytes>([](Reader& rd) { return rd.GetBytes(kMaxSyncItemBytes); },
                                                  kMaxItemsPerResponse));
  return v;
}

void Encode(Writer& w, const GetBlob& v) {
  w.PutU64(v.request_id);
  w.PutHash(v.hash);
  w.PutU64(v.offset);
  w.PutU32(v.max_len);
}

Result<GetBlob> Decode(Reader& r, DecodeAs<GetBlob>) {
  GetBlob v;
  VT_ASSIGN_OR_RETURN(v.request_id, r.GetU64());
  VT_ASSIGN_OR_RETURN(v.hash, r.GetHash());
  VT_ASSIGN_OR_RETURN(v.offset, r.GetU64());
  VT_ASSIGN_OR_RETURN(v.max_len, r.GetU32());
  if (v.max_len == 0 || v.max_len > kMaxBlobChunk) {
    return Status::Invalid("msg-bad-count", "max_len " + std::to_string(v.max_len));
  }
  return v;
}

void Encode(Writer& w, const BlobChunk& v) {
  w.PutU64(v.request_id);
  w.PutHash(v.hash);
  w.PutU64(v.total_size);
  w.PutU64(v.offset);
  w.PutBytes(v.data);
}

Result<BlobChunk> Decode(Reader& r, DecodeAs<BlobChunk>) {
  BlobChunk v;
  VT_ASSIGN_OR_RETURN(v.request_id, r.GetU64());
  VT_ASSIGN_OR_RETURN(v.hash, r.GetHash());
  VT_ASSIGN_OR_RETURN(v.total_size, r.GetU64());
  VT_ASSIGN_OR_RETURN(v.offset, r.GetU64());
  VT_ASSIGN_OR_RETURN(v.data, r.GetBytes(kMaxBlobChunk));
  return v;
}

void Encode(Writer& w, const BlobNotFound& v) {
  w.PutU64(v.request_id);
  w.PutHash(v.hash);
}

Result<BlobNotFound> Decode(Reader& r, DecodeAs<BlobNotFound>) {
  BlobNotFound v;
  VT_ASSIGN_OR_RETURN(v.request_id, r.GetU64());
  VT_ASSIGN_OR_RETURN(v.hash, r.GetHash());
  return v;
}

}  // namespace vt::net
