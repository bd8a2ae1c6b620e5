#include "verify/wire.h"

namespace vt::verify {
namespace {

Result<crypto::MerkleProof> GetProof(Reader& r) { return crypto::Decode(r, DecodeAs<crypto::MerkleProof>{}); }

}  // namespace

void Encode(Writer& w, const InputOpening& in) {
  w.PutBytes(in.tensor);
  w.PutHash(in.tensor_hash);
  w.PutOptional(in.proof, [](Writer& out, const crypto::MerkleProof& p) { crypto::Encode(out, p); });
  w.PutOptional(in.producer, [](Writer& out, const protocol::NodeRecord& rec) { protocol::Encode(out, rec); });
}

Result<InputOpening> Decode(Reader& r, DecodeAs<InputOpening>) {
  InputOpening in;
  VT_ASSIGN_OR_RETURN(in.tensor, r.GetBytes(kMaxTensorBytes));
  VT_ASSIGN_OR_RETURN(in.tensor_hash, r.GetHash());
  VT_ASSIGN_OR_RETURN(in.proof, r.GetOptional<crypto::MerkleProof>(GetProof));
  VT_ASSIGN_OR_RETURN(in.producer, r.GetOptional<protocol::NodeRecord>(
                                       [](Reader& rr) { return protocol::Decode(rr, DecodeAs<protocol::NodeRecord>{}); }));
  return in;
}

void Encode(Writer& w, const ExampleOpening& ex) {
  w.PutBytes(ex.leaf);
  crypto::Encode(w, ex.proof);
}

Result<ExampleOpening> Decode(Reader& r, DecodeAs<ExampleOpening>) {
  ExampleOpening ex;
  VT_ASSIGN_OR_RETURN(ex.leaf, r.GetBytes(kMaxTensorBytes));
  VT_ASSIGN_OR_RETURN(ex.proof, GetProof(r));
  return ex;
}

void Encode(Writer& w, const ArbitrationPayload& p) {
  protocol::Encode(w, p.header);
  crypto::Encode(w, p.header_proof);
  w.PutVector(p.inputs);
  w.PutVector(p.examples);
  w.PutBytes(p.log);
}

Result<ArbitrationPayload> Decode(Reader& r, DecodeAs<ArbitrationPayload>) {
  ArbitrationPayload p;
  VT_ASSIGN_OR_RETURN(p.header, protocol::Decode(r, DecodeAs<protocol::StateHeader>{}));
  VT_ASSIGN_OR_RETURN(p.header_proof, GetProof(r));
  VT_ASSIGN_OR_RETURN(p.inputs, r.GetVector<InputOpening>(protocol::kMaxNodeInputs));
  VT_ASSIGN_OR_RETURN(p.examples, r.GetVector<ExampleOpening>(kMaxExamples));
  VT_ASSIGN_OR_RETURN(p.log, r.GetBytes(kMaxTensorBytes));
  return p;
}

void Encode(Writer& w, const LogChain& c) {
  crypto::Encode(w, c.node_in_step);
  w.PutHash(c.step_log_root);
  crypto::Encode(w, c.step_in_interval);
  w.PutHash(c.interval_log_hash);
  crypto::Encode(w, c.interval_in_root);
}

Result<LogChain> Decode(Reader& r, DecodeAs<LogChain>) {
  LogChain c;
  VT_ASSIGN_OR_RETURN(c.node_in_step, GetProof(r));
  VT_ASSIGN_OR_RETURN(c.step_log_root, r.GetHash());
  VT_ASSIGN_OR_RETURN(c.step_in_interval, GetProof(r));
  VT_ASSIGN_OR_RETURN(c.interval_log_hash, r.GetHash());
  VT_ASSIGN_OR_RETURN(c.interval_in_root, GetProof(r));
  return c;
}

}  // namespace vt::verify
