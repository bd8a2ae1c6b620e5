#include "referee/messages.h"

#include "common/detmath.h"
#include "verify/reduce_rule.h"

namespace vt::referee {
namespace {

using crypto::MerkleProof;

Result<MerkleProof> GetProof(Reader& r) { return crypto::Decode(r, DecodeAs<MerkleProof>{}); }
Result<protocol::NodeRecord> GetRecord(Reader& r) { return protocol::Decode(r, DecodeAs<protocol::NodeRecord>{}); }

constexpr std::size_t kMaxPayloadBytes = std::size_t{1} << 30;

}  // namespace

std::string_view MethodName(std::uint16_t method) {
  switch (static_cast<Method>(method)) {
#define VT_REFEREE_METHOD_NAME(enumerator, id, name, ...) \
  case Method::enumerator:                                \
    return name;
    VT_REFEREE_METHODS(VT_REFEREE_METHOD_NAME)
#undef VT_REFEREE_METHOD_NAME
  }
  return "unknown";
}

std::string_view GameResultName(GameResult r) {
  switch (r) {
    case GameResult::kOpen: return "open";
    case GameResult::kSolverWon: return "solver-won";
    case GameResult::kChallengerWon: return "challenger-won";
    case GameResult::kBothLost: return "both-lost";
    case GameResult::kNoContest: return "no-contest";
  }
  return "unknown";
}

void Encode(Writer& w, const PostBountyArgs& v) {
  protocol::Encode(w, v.job);
  w.PutHash(v.initial_state);
  w.PutU64(v.reward);
  w.PutU64(v.solver_bond);
  w.PutU64(v.challenger_bond);
  w.PutU64(v.solve_window);
  w.PutU64(v.challenge_window);
  w.PutU64(v.clock_budget);
  w.PutHash(v.initial_blob);
  w.PutU64(v.initial_blob_bytes);
}
Result<PostBountyArgs> Decode(Reader& r, DecodeAs<PostBountyArgs>) {
  PostBountyArgs v;
  VT_ASSIGN_OR_RETURN(v.job, protocol::Decode(r, DecodeAs<protocol::JobSpec>{}));
  VT_ASSIGN_OR_RETURN(v.initial_state, r.GetHash());
  VT_ASSIGN_OR_RETURN(v.reward, r.GetU64());
  VT_ASSIGN_OR_RETURN(v.solver_bond, r.GetU64());
  VT_ASSIGN_OR_RETURN(v.challenger_bond, r.GetU64());
  VT_ASSIGN_OR_RETURN(v.solve_window, r.GetU64());
  VT_ASSIGN_OR_RETURN(v.challenge_window, r.GetU64());
  VT_ASSIGN_OR_RETURN(v.clock_budget, r.GetU64());
  VT_ASSIGN_OR_RETURN(v.initial_blob, r.GetHash());
  VT_ASSIGN_OR_RETURN(v.initial_blob_bytes, r.GetU64());
  return v;
}

void Encode(Writer& w, const BountyIdArgs& v) { w.PutU64(v.bounty_id); }
Result<BountyIdArgs> Decode(Reader& r, DecodeAs<BountyIdArgs>) {
  BountyIdArgs v;
  VT_ASSIGN_OR_RETURN(v.bounty_id, r.GetU64());
  return v;
}

void Encode(Writer& w, const CommitArgs& v) {
  w.PutU64(v.bounty_id);
  protocol::Encode(w, v.commitment);
  w.PutHash(v.checkpoint_top);
  crypto::Encode(w, v.first_proof);
  crypto::Encode(w, v.last_proof);
  w.PutHash(v.log_bundle);
  w.PutHash(v.state_blob);
  w.PutU64(v.log_bundle_bytes);
  w.PutU64(v.state_blob_bytes);
}
Result<CommitArgs> Decode(Reader& r, DecodeAs<CommitArgs>) {
  CommitArgs v;
  VT_ASSIGN_OR_RETURN(v.bounty_id, r.GetU64());
  VT_ASSIGN_OR_RETURN(v.commitment, protocol::Decode(r, DecodeAs<protocol::Commitment>{}));
  VT_ASSIGN_OR_RETURN(v.checkpoint_top, r.GetHash());
  VT_ASSIGN_OR_RETURN(v.first_proof, GetProof(r));
  VT_ASSIGN_OR_RETURN(v.last_proof, GetProof(r));
  VT_ASSIGN_OR_RETURN(v.log_bundle, r.GetHash());
  VT_ASSIGN_OR_RETURN(v.state_blob, r.GetHash());
  VT_ASSIGN_OR_RETURN(v.log_bundle_bytes, r.GetU64());
  VT_ASSIGN_OR_RETURN(v.state_blob_bytes, r.GetU64());
  return v;
}

void Encode(Writer& w, const OpenGameArgs& v) {
  w.PutU64(v.bounty_id);
  w.PutHash(v.checkpoint_root);
  w.PutHash(v.checkpoint_top);
  crypto::Encode(w, v.first_proof);
}
Result<OpenGameArgs> Decode(Reader& r, DecodeAs<OpenGameArgs>) {
  OpenGameArgs v;
  VT_ASSIGN_OR_RETURN(v.bounty_id, r.GetU64());
  VT_ASSIGN_OR_RETURN(v.checkpoint_root, r.GetHash());
  VT_ASSIGN_OR_RETURN(v.checkpoint_top, r.GetHash());
  VT_ASSIGN_OR_RETURN(v.first_proof, GetProof(r));
  return v;
}

void Encode(Writer& w, const RevealChildrenArgs& v) {
  w.PutU64(v.game_id);
  w.PutHash(v.reveal.left);
  w.PutHash(v.reveal.right);
}
Result<RevealChildrenArgs> Decode(Reader& r, DecodeAs<RevealChildrenArgs>) {
  RevealChildrenArgs v;
  VT_ASSIGN_OR_RETURN(v.game_id, r.GetU64());
  VT_ASSIGN_OR_RETURN(v.reveal.left, r.GetHash());
  VT_ASSIGN_OR_RETURN(v.reveal.right, r.GetHash());
  return v;
}

void Encode(Writer& w, const StepRootArgs& v) {
  w.PutU64(v.game_id);
  w.PutHash(v.root);
  w.PutHash(v.top);
  w.PutHash(v.start_state);
  crypto::Encode(w, v.start_proof);
  crypto::Encode(w, v.first_proof);
  crypto::Encode(w, v.last_proof);
}
Result<StepRootArgs> Decode(Reader& r, DecodeAs<StepRootArgs>) {
  StepRootArgs v;
  VT_ASSIGN_OR_RETURN(v.game_id, r.GetU64());
  VT_ASSIGN_OR_RETURN(v.root, r.GetHash());
  VT_ASSIGN_OR_RETURN(v.top, r.GetHash());
  VT_ASSIGN_OR_RETURN(v.start_state, r.GetHash());
  VT_ASSIGN_OR_RETURN(v.start_proof, GetProof(r));
  VT_ASSIGN_OR_RETURN(v.first_proof, GetProof(r));
  VT_ASSIGN_OR_RETURN(v.last_proof, GetProof(r));
  return v;
}

void Encode(Writer& w, const NodeRootArgs& v) {
  w.PutU64(v.game_id);
  w.PutHash(v.root);
  w.PutHash(v.top);
  w.PutHash(v.agreed_state);
  crypto::Encode(w, v.agreed_proof);
  protocol::Encode(w, v.assemble);
  crypto::Encode(w, v.assemble_proof);
}
Result<NodeRootArgs> Decode(Reader& r, DecodeAs<NodeRootArgs>) {
  NodeRootArgs v;
  VT_ASSIGN_OR_RETURN(v.game_id, r.GetU64());
  VT_ASSIGN_OR_RETURN(v.root, r.GetHash());
  VT_ASSIGN_OR_RETURN(v.top, r.GetHash());
  VT_ASSIGN_OR_RETURN(v.agreed_state, r.GetHash());
  VT_ASSIGN_OR_RETURN(v.agreed_proof, GetProof(r));
  VT_ASSIGN_OR_RETURN(v.assemble, GetRecord(r));
  VT_ASSIGN_OR_RETURN(v.assemble_proof, GetProof(r));
  return v;
}

void Encode(Writer& w, const RevealRecordArgs& v) {
  w.PutU64(v.game_id);
  protocol::Encode(w, v.record);
}
Result<RevealRecordArgs> Decode(Reader& r, DecodeAs<RevealRecordArgs>) {
  RevealRecordArgs v;
  VT_ASSIGN_OR_RETURN(v.game_id, r.GetU64());
  VT_ASSIGN_OR_RETURN(v.record, GetRecord(r));
  return v;
}

void Encode(Writer& w, const ArbitrateArgs& v) {
  w.PutU64(v.game_id);
  w.PutU8(v.node_root_of);
  w.PutBytes(v.payload);
  w.PutOptional(v.log_proofs, [](Writer& out, const LogProofs& p) { Encode(out, p); });
}
Result<ArbitrateArgs> Decode(Reader& r, DecodeAs<ArbitrateArgs>) {
  ArbitrateArgs v;
  VT_ASSIGN_OR_RETURN(v.game_id, r.GetU64());
  VT_ASSIGN_OR_RETURN(v.node_root_of, r.GetU8());
  VT_ASSIGN_OR_RETURN(v.payload, r.GetBytes(kMaxPayloadBytes));
  VT_ASSIGN_OR_RETURN(v.log_proofs,
                      r.GetOptional<LogProofs>([](Reader& in) { return Decode(in, DecodeAs<LogProofs>{}); }));
  return v;
}

namespace {

Result<verify::InputHashOpening> GetInputHash(Reader& r) {
  return verify::Decode(r, DecodeAs<verify::InputHashOpening>{});
}
Result<verify::ValueOpening> GetValue(Reader& r) { return verify::Decode(r, DecodeAs<verify::ValueOpening>{}); }
void PutInputHashes(Writer& w, const std::vector<verify::InputHashOpening>& v) {
  w.PutVector(v, [](Writer& out, const verify::InputHashOpening& o) { verify::Encode(out, o); });
}
Result<std::vector<verify::InputHashOpening>> GetInputHashes(Reader& r) {
  return r.GetVector<verify::InputHashOpening>(GetInputHash, kMaxElementInputs);
}

}  // namespace

void Encode(Writer& w, const ElementDisputedEvent& e) {
  w.PutU64(e.game_id);
  w.PutU32(e.slot);
  w.PutI64(e.value);
}
Result<ElementDisputedEvent> Decode(Reader& r, DecodeAs<ElementDisputedEvent>) {
  ElementDisputedEvent e;
  VT_ASSIGN_OR_RETURN(e.game_id, r.GetU64());
  VT_ASSIGN_OR_RETURN(e.slot, r.GetU32());
  VT_ASSIGN_OR_RETURN(e.value, r.GetI64());
  return e;
}

void Encode(Writer& w, const ChunkRootArgs& v) {
  w.PutU64(v.game_id);
  w.PutHash(v.root);
  w.PutHash(v.top);
  w.PutOptional(v.log, [](Writer& out, const NodeLogProof& p) {
    out.PutHash(p.log_hash);
    Encode(out, p.chain);
  });
}
Result<ChunkRootArgs> Decode(Reader& r, DecodeAs<ChunkRootArgs>) {
  ChunkRootArgs v;
  VT_ASSIGN_OR_RETURN(v.game_id, r.GetU64());
  VT_ASSIGN_OR_RETURN(v.root, r.GetHash());
  VT_ASSIGN_OR_RETURN(v.top, r.GetHash());
  VT_ASSIGN_OR_RETURN(v.log, r.GetOptional<NodeLogProof>([](Reader& in) -> Result<NodeLogProof> {
    NodeLogProof p;
    VT_ASSIGN_OR_RETURN(p.log_hash, in.GetHash());
    VT_ASSIGN_OR_RETURN(p.chain, Decode(in, DecodeAs<LogProofs>{}));
    return p;
  }));
  return v;
}

void Encode(Writer& w, const RevealChunkArgs& v) {
  w.PutU64(v.game_id);
  verify::EncodeChunk(w, v.chunk);
}
Result<RevealChunkArgs> Decode(Reader& r, DecodeAs<RevealChunkArgs>) {
  RevealChunkArgs v;
  VT_ASSIGN_OR_RETURN(v.game_id, r.GetU64());
  VT_ASSIGN_OR_RETURN(v.chunk, verify::DecodeChunk(r));
  return v;
}

void Encode(Writer& w, const PartialsRootArgs& v) {
  w.PutU64(v.game_id);
  w.PutHash(v.root);
  w.PutHash(v.top);
  verify::Encode(w, v.p_k);
  crypto::Encode(w, v.first);
  crypto::Encode(w, v.last);
}
Result<PartialsRootArgs> Decode(Reader& r, DecodeAs<PartialsRootArgs>) {
  PartialsRootArgs v;
  VT_ASSIGN_OR_RETURN(v.game_id, r.GetU64());
  VT_ASSIGN_OR_RETURN(v.root, r.GetHash());
  VT_ASSIGN_OR_RETURN(v.top, r.GetHash());
  VT_ASSIGN_OR_RETURN(v.p_k, verify::Decode(r, DecodeAs<verify::PartialLeaf>{}));
  VT_ASSIGN_OR_RETURN(v.first, GetProof(r));
  VT_ASSIGN_OR_RETURN(v.last, GetProof(r));
  return v;
}

namespace {

// A final move's batch opening (verify/batch_opening.h), when it reads the batch.
void PutBatch(Writer& w, const std::optional<verify::BatchOpening>& b) {
  w.PutOptional(b, [](Writer& out, const verify::BatchOpening& v) { verify::Encode(out, v); });
}
Result<std::optional<verify::BatchOpening>> GetBatch(Reader& r) {
  return r.GetOptional<verify::BatchOpening>(
      [](Reader& rr) { return verify::Decode(rr, DecodeAs<verify::BatchOpening>{}); });
}

// A dot step's factor: its value opening, or none — a padding tap (+0) or
// a factor of the batch (its example travels in `batch`) opens nothing.
void PutFactor(Writer& w, const verify::ValueOpening& v) {
  const std::optional<verify::ValueOpening> opened =
      v.chunk.values.empty() ? std::nullopt : std::optional<verify::ValueOpening>(v);
  w.PutOptional(opened, [](Writer& out, const verify::ValueOpening& o) { verify::Encode(out, o); });
}
Result<verify::ValueOpening> GetFactor(Reader& r) {
  VT_ASSIGN_OR_RETURN(std::optional<verify::ValueOpening> v, r.GetOptional<verify::ValueOpening>(GetValue));
  return v.value_or(verify::ValueOpening{});
}

}  // namespace

void Encode(Writer& w, const RevealStepArgs& v) {
  w.PutU64(v.game_id);
  w.PutU8(v.node_root_of);
  verify::Encode(w, v.p_m);
  verify::Encode(w, v.next);
  crypto::Encode(w, v.p_m_proof);
  crypto::Encode(w, v.next_proof);
  PutFactor(w, v.a);
  PutFactor(w, v.b);
  PutInputHashes(w, v.inputs);
  PutBatch(w, v.batch);
}
Result<RevealStepArgs> Decode(Reader& r, DecodeAs<RevealStepArgs>) {
  RevealStepArgs v;
  VT_ASSIGN_OR_RETURN(v.game_id, r.GetU64());
  VT_ASSIGN_OR_RETURN(v.node_root_of, r.GetU8());
  VT_ASSIGN_OR_RETURN(v.p_m, verify::Decode(r, DecodeAs<verify::PartialLeaf>{}));
  VT_ASSIGN_OR_RETURN(v.next, verify::Decode(r, DecodeAs<verify::PartialLeaf>{}));
  VT_ASSIGN_OR_RETURN(v.p_m_proof, GetProof(r));
  VT_ASSIGN_OR_RETURN(v.next_proof, GetProof(r));
  VT_ASSIGN_OR_RETURN(v.a, GetFactor(r));
  VT_ASSIGN_OR_RETURN(v.b, GetFactor(r));
  VT_ASSIGN_OR_RETURN(v.inputs, GetInputHashes(r));
  VT_ASSIGN_OR_RETURN(v.batch, GetBatch(r));
  return v;
}

namespace {

// A partial result with its proof (verify::LeafOpening), optional.
void PutLeafOpening(Writer& w, const std::optional<verify::LeafOpening>& opening) {
  w.PutOptional(opening, [](Writer& out, const verify::LeafOpening& o) {
    verify::Encode(out, o.first);
    crypto::Encode(out, o.second);
  });
}
Result<std::optional<verify::LeafOpening>> GetLeafOpening(Reader& r) {
  return r.GetOptional<verify::LeafOpening>([](Reader& in) -> Result<verify::LeafOpening> {
    VT_ASSIGN_OR_RETURN(verify::PartialLeaf leaf, verify::Decode(in, DecodeAs<verify::PartialLeaf>{}));
    VT_ASSIGN_OR_RETURN(crypto::MerkleProof p, GetProof(in));
    return verify::LeafOpening{leaf, std::move(p)};
  });
}

}  // namespace

void Encode(Writer& w, const OpenElementArgs& v) {
  w.PutU64(v.game_id);
  w.PutU8(v.node_root_of);
  PutInputHashes(w, v.inputs);
  w.PutVector(v.slices, [](Writer& out, const std::vector<verify::ChunkOpening>& chunks) {
    out.PutVector(chunks, [](Writer& o, const verify::ChunkOpening& c) { verify::EncodeChunk(o, c); });
  });
  PutBatch(w, v.batch);
  w.PutOptional(v.log, [](Writer& out, const verify::LogOpening& o) { Encode(out, o); });
  PutLeafOpening(w, v.value_leaf);
}
Result<OpenElementArgs> Decode(Reader& r, DecodeAs<OpenElementArgs>) {
  OpenElementArgs v;
  VT_ASSIGN_OR_RETURN(v.game_id, r.GetU64());
  VT_ASSIGN_OR_RETURN(v.node_root_of, r.GetU8());
  VT_ASSIGN_OR_RETURN(v.inputs, GetInputHashes(r));
  VT_ASSIGN_OR_RETURN(v.slices, r.GetVector<std::vector<verify::ChunkOpening>>(
                                    [](Reader& rr) {
                                      return rr.GetVector<verify::ChunkOpening>(verify::DecodeChunk, kMaxSliceChunks);
                                    },
                                    kMaxElementInputs));
  VT_ASSIGN_OR_RETURN(v.batch, GetBatch(r));
  VT_ASSIGN_OR_RETURN(v.log, r.GetOptional<verify::LogOpening>(
                                 [](Reader& in) { return Decode(in, DecodeAs<verify::LogOpening>{}); }));
  VT_ASSIGN_OR_RETURN(v.value_leaf, GetLeafOpening(r));
  return v;
}

void Encode(Writer& w, const RevealReduceStepArgs& v) {
  w.PutU64(v.game_id);
  w.PutU8(v.node_root_of);
  verify::Encode(w, v.next);
  crypto::Encode(w, v.next_proof);
  verify::Encode(w, v.left);
  crypto::Encode(w, v.left_proof);
  PutLeafOpening(w, v.right);
  w.PutVector(v.reads, [](Writer& out, const verify::ValueOpening& o) { verify::Encode(out, o); });
  PutInputHashes(w, v.inputs);
  PutBatch(w, v.batch);
}
Result<RevealReduceStepArgs> Decode(Reader& r, DecodeAs<RevealReduceStepArgs>) {
  RevealReduceStepArgs v;
  VT_ASSIGN_OR_RETURN(v.game_id, r.GetU64());
  VT_ASSIGN_OR_RETURN(v.node_root_of, r.GetU8());
  VT_ASSIGN_OR_RETURN(v.next, verify::Decode(r, DecodeAs<verify::PartialLeaf>{}));
  VT_ASSIGN_OR_RETURN(v.next_proof, GetProof(r));
  VT_ASSIGN_OR_RETURN(v.left, verify::Decode(r, DecodeAs<verify::PartialLeaf>{}));
  VT_ASSIGN_OR_RETURN(v.left_proof, GetProof(r));
  VT_ASSIGN_OR_RETURN(v.right, GetLeafOpening(r));
  // A step reads at most kMaxStepReads values, from as many inputs.
  VT_ASSIGN_OR_RETURN(v.reads, r.GetVector<verify::ValueOpening>(GetValue, verify::kMaxStepReads));
  VT_ASSIGN_OR_RETURN(v.inputs, r.GetVector<verify::InputHashOpening>(GetInputHash, verify::kMaxStepReads));
  VT_ASSIGN_OR_RETURN(v.batch, GetBatch(r));
  return v;
}

void Encode(Writer& w, const GameIdArgs& v) { w.PutU64(v.game_id); }
Result<GameIdArgs> Decode(Reader& r, DecodeAs<GameIdArgs>) {
  GameIdArgs v;
  VT_ASSIGN_OR_RETURN(v.game_id, r.GetU64());
  return v;
}

void Encode(Writer& w, const GameOpenedEvent& e) {
  w.PutU64(e.game_id);
  w.PutU64(e.bounty_id);
}
Result<GameOpenedEvent> Decode(Reader& r, DecodeAs<GameOpenedEvent>) {
  GameOpenedEvent e;
  VT_ASSIGN_OR_RETURN(e.game_id, r.GetU64());
  VT_ASSIGN_OR_RETURN(e.bounty_id, r.GetU64());
  return e;
}

void Encode(Writer& w, const WalkDoneEvent& e) {
  w.PutU64(e.game_id);
  w.PutEnum(e.level);
  w.PutU64(e.index);
}
Result<WalkDoneEvent> Decode(Reader& r, DecodeAs<WalkDoneEvent>) {
  WalkDoneEvent e;
  VT_ASSIGN_OR_RETURN(e.game_id, r.GetU64());
  VT_ASSIGN_OR_RETURN(e.level, r.GetEnum(Level::kPartials));
  VT_ASSIGN_OR_RETURN(e.index, r.GetU64());
  return e;
}

void Encode(Writer& w, const GameResolvedEvent& e) {
  w.PutU64(e.game_id);
  w.PutEnum(e.result);
  w.PutString(e.reason);
}
Result<GameResolvedEvent> Decode(Reader& r, DecodeAs<GameResolvedEvent>) {
  GameResolvedEvent e;
  VT_ASSIGN_OR_RETURN(e.game_id, r.GetU64());
  VT_ASSIGN_OR_RETURN(e.result, r.GetEnum(GameResult::kNoContest));
  VT_ASSIGN_OR_RETURN(e.reason, r.GetString(64));
  return e;
}

}  // namespace vt::referee
