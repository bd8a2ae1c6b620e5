#include "referee/records.h"

#include <algorithm>

#include "common/detmath.h"
#include "contract_vm/vm.h"

namespace vt::referee {
namespace {

constexpr std::size_t kMaxWalkReveals = 64;  // a walk has at most 62 rounds

template <std::size_t N>
Result<std::array<std::uint8_t, N>> GetArray(Reader& r) {
  VT_ASSIGN_OR_RETURN(ByteSpan view, r.GetFixed(N));
  std::array<std::uint8_t, N> out{};
  std::copy(view.begin(), view.end(), out.begin());
  return out;
}

void PutPair(Writer& w, const std::array<Hash256, 2>& p) {
  w.PutHash(p[0]);
  w.PutHash(p[1]);
}
Status GetPair(Reader& r, std::array<Hash256, 2>& p) {
  VT_ASSIGN_OR_RETURN(p[0], r.GetHash());
  VT_ASSIGN_OR_RETURN(p[1], r.GetHash());
  return Status::Ok();
}
void PutBools(Writer& w, const std::array<bool, 2>& p) {
  w.PutBool(p[0]);
  w.PutBool(p[1]);
}
Status GetBools(Reader& r, std::array<bool, 2>& p) {
  VT_ASSIGN_OR_RETURN(p[0], r.GetBool());
  VT_ASSIGN_OR_RETURN(p[1], r.GetBool());
  return Status::Ok();
}

void PutBigEndian(Bytes& k, std::uint64_t id) {
  for (int i = 7; i >= 0; --i) k.push_back(static_cast<std::uint8_t>(id >> (8 * i)));  // big-endian: ordered by id
}
Bytes Key(char kind, std::uint64_t id) {
  Bytes k{static_cast<std::uint8_t>(kind), '/'};
  PutBigEndian(k, id);
  return k;
}
Bytes Name(std::string_view prefix, std::uint64_t id, std::string_view suffix) {
  std::string s(prefix);
  s += std::to_string(id);
  s += suffix;
  return Bytes(s.begin(), s.end());
}

template <typename T>
Result<T> ReadRecord(const vm::StateStore& state, const Bytes& key, std::string_view absent) noexcept {
  VT_ASSIGN_OR_RETURN(std::optional<Bytes> v, state.Get(vm::ContractKey(kRefereeContractId, key)));
  if (!v) return Status::Invalid(absent);
  auto rec = DecodeExact<T>(*v);
  if (!rec.ok()) return Status::Error("state-corrupt", rec.status().ToString());
  return rec;
}

}  // namespace

void Encode(Writer& w, const Bounty& b) {
  w.PutU64(b.id);
  crypto::Encode(w, b.client);
  w.PutHash(b.job_hash);
  w.PutHash(b.initial_state);
  w.PutHash(b.initial_blob);
  w.PutU64(b.reward);
  w.PutU64(b.solver_bond);
  w.PutU64(b.challenger_bond);
  w.PutU64(b.min_bond);
  w.PutU64(b.arbitration_allowance);
  w.PutU64(b.posted_height);
  w.PutU64(b.solve_deadline);
  w.PutU64(b.challenge_window);
  w.PutU64(b.clock_budget);
  w.PutU64(b.num_steps);
  w.PutU64(b.checkpoint_interval);
  w.PutU8(b.mode);
  w.PutEnum(b.state);
  crypto::Encode(w, b.solver);
  w.PutFixed(b.solver_key);
  protocol::Encode(w, b.commitment);
  w.PutHash(b.checkpoint_top);
  w.PutHash(b.log_bundle);
  w.PutHash(b.state_blob);
  w.PutU64(b.challenge_deadline);
  w.PutU64(b.open_games);
}

Result<Bounty> Decode(Reader& r, DecodeAs<Bounty>) {
  Bounty b;
  VT_ASSIGN_OR_RETURN(b.id, r.GetU64());
  VT_ASSIGN_OR_RETURN(b.client, crypto::Decode(r, DecodeAs<crypto::Address>{}));
  VT_ASSIGN_OR_RETURN(b.job_hash, r.GetHash());
  VT_ASSIGN_OR_RETURN(b.initial_state, r.GetHash());
  VT_ASSIGN_OR_RETURN(b.initial_blob, r.GetHash());
  VT_ASSIGN_OR_RETURN(b.reward, r.GetU64());
  VT_ASSIGN_OR_RETURN(b.solver_bond, r.GetU64());
  VT_ASSIGN_OR_RETURN(b.challenger_bond, r.GetU64());
  VT_ASSIGN_OR_RETURN(b.min_bond, r.GetU64());
  VT_ASSIGN_OR_RETURN(b.arbitration_allowance, r.GetU64());
  VT_ASSIGN_OR_RETURN(b.posted_height, r.GetU64());
  VT_ASSIGN_OR_RETURN(b.solve_deadline, r.GetU64());
  VT_ASSIGN_OR_RETURN(b.challenge_window, r.GetU64());
  VT_ASSIGN_OR_RETURN(b.clock_budget, r.GetU64());
  VT_ASSIGN_OR_RETURN(b.num_steps, r.GetU64());
  VT_ASSIGN_OR_RETURN(b.checkpoint_interval, r.GetU64());
  VT_ASSIGN_OR_RETURN(b.mode, r.GetU8());
  VT_ASSIGN_OR_RETURN(b.state, r.GetEnum(BountyState::kRefunded));
  VT_ASSIGN_OR_RETURN(b.solver, crypto::Decode(r, DecodeAs<crypto::Address>{}));
  VT_ASSIGN_OR_RETURN(b.solver_key, GetArray<32>(r));
  VT_ASSIGN_OR_RETURN(b.commitment, protocol::Decode(r, DecodeAs<protocol::Commitment>{}));
  VT_ASSIGN_OR_RETURN(b.checkpoint_top, r.GetHash());
  VT_ASSIGN_OR_RETURN(b.log_bundle, r.GetHash());
  VT_ASSIGN_OR_RETURN(b.state_blob, r.GetHash());
  VT_ASSIGN_OR_RETURN(b.challenge_deadline, r.GetU64());
  VT_ASSIGN_OR_RETURN(b.open_games, r.GetU64());
  return b;
}

void Encode(Writer& w, const Game& g) {
  w.PutU64(g.id);
  w.PutU64(g.bounty_id);
  crypto::Encode(w, g.challenger);
  w.PutHash(g.challenger_root);
  w.PutEnum(g.phase);
  w.PutEnum(g.result);
  w.PutString(g.reason);
  for (const Clock& c : g.clocks) {
    w.PutBool(c.owes);
    w.PutU64(c.owes_since);
    w.PutU64(c.left);
  }
  w.PutU64(g.opened_height);
  w.PutU64(g.resolved_height);
  w.PutU64(g.reimbursement);
  for (std::uint32_t n : g.rounds) w.PutU32(n);
  w.PutU64(g.checkpoint_index);
  PutPair(w, g.checkpoint_leaf);
  PutBools(w, g.step_posted);
  PutPair(w, g.step_root);
  PutPair(w, g.step_top);
  w.PutHash(g.start_state);
  w.PutU64(g.step);
  PutPair(w, g.step_leaf);
  w.PutU64(g.node_count);
  PutBools(w, g.node_posted);
  PutPair(w, g.node_root);
  PutPair(w, g.node_top);
  w.PutHash(g.agreed_state);
  w.PutU64(g.node_index);
  PutPair(w, g.node_leaf);
  for (const auto& rec : g.records)
    w.PutOptional(rec, [](Writer& out, const protocol::NodeRecord& n) { protocol::Encode(out, n); });
}

Result<Game> Decode(Reader& r, DecodeAs<Game>) {
  Game g;
  VT_ASSIGN_OR_RETURN(g.id, r.GetU64());
  VT_ASSIGN_OR_RETURN(g.bounty_id, r.GetU64());
  VT_ASSIGN_OR_RETURN(g.challenger, crypto::Decode(r, DecodeAs<crypto::Address>{}));
  VT_ASSIGN_OR_RETURN(g.challenger_root, r.GetHash());
  VT_ASSIGN_OR_RETURN(g.phase, r.GetEnum(GamePhase::kOpenElement));
  VT_ASSIGN_OR_RETURN(g.result, r.GetEnum(GameResult::kNoContest));
  VT_ASSIGN_OR_RETURN(g.reason, r.GetString(64));
  for (Clock& c : g.clocks) {
    VT_ASSIGN_OR_RETURN(c.owes, r.GetBool());
    VT_ASSIGN_OR_RETURN(c.owes_since, r.GetU64());
    VT_ASSIGN_OR_RETURN(c.left, r.GetU64());
  }
  VT_ASSIGN_OR_RETURN(g.opened_height, r.GetU64());
  VT_ASSIGN_OR_RETURN(g.resolved_height, r.GetU64());
  VT_ASSIGN_OR_RETURN(g.reimbursement, r.GetU64());
  for (std::uint32_t& n : g.rounds) {
    VT_ASSIGN_OR_RETURN(n, r.GetU32());
  }
  VT_ASSIGN_OR_RETURN(g.checkpoint_index, r.GetU64());
  VT_TRY(GetPair(r, g.checkpoint_leaf));
  VT_TRY(GetBools(r, g.step_posted));
  VT_TRY(GetPair(r, g.step_root));
  VT_TRY(GetPair(r, g.step_top));
  VT_ASSIGN_OR_RETURN(g.start_state, r.GetHash());
  VT_ASSIGN_OR_RETURN(g.step, r.GetU64());
  VT_TRY(GetPair(r, g.step_leaf));
  VT_ASSIGN_OR_RETURN(g.node_count, r.GetU64());
  VT_TRY(GetBools(r, g.node_posted));
  VT_TRY(GetPair(r, g.node_root));
  VT_TRY(GetPair(r, g.node_top));
  VT_ASSIGN_OR_RETURN(g.agreed_state, r.GetHash());
  VT_ASSIGN_OR_RETURN(g.node_index, r.GetU64());
  VT_TRY(GetPair(r, g.node_leaf));
  for (auto& rec : g.records) {
    VT_ASSIGN_OR_RETURN(rec, r.GetOptional<protocol::NodeRecord>([](Reader& in) {
      return protocol::Decode(in, DecodeAs<protocol::NodeRecord>{});
    }));
  }
  return g;
}

namespace {

constexpr std::size_t kMaxRank = 16;  // dims of a declared shape

void PutFloats(Writer& w, const std::array<float, 2>& p) {
  for (float f : p) w.PutU32(detmath::FloatBits(f));
}
Status GetFloats(Reader& r, std::array<float, 2>& p) {
  for (float& f : p) {
    VT_ASSIGN_OR_RETURN(std::uint32_t bits, r.GetU32());
    f = detmath::BitsFloat(bits);
  }
  return Status::Ok();
}
void PutLeaves(Writer& w, const std::array<verify::PartialLeaf, 2>& p) {
  for (const verify::PartialLeaf& leaf : p) verify::Encode(w, leaf);
}
Status GetLeaves(Reader& r, std::array<verify::PartialLeaf, 2>& p) {
  for (verify::PartialLeaf& leaf : p) {
    VT_ASSIGN_OR_RETURN(leaf, verify::Decode(r, DecodeAs<verify::PartialLeaf>{}));
  }
  return Status::Ok();
}
void PutShape(Writer& w, const std::vector<std::int64_t>& s) { w.PutVector(s, &Writer::PutI64); }
Result<std::vector<std::int64_t>> GetShape(Reader& r) { return r.GetVector<std::int64_t>(&Reader::GetI64, kMaxRank); }
Result<crypto::MerkleProof> GetMerkleProof(Reader& r) { return crypto::Decode(r, DecodeAs<crypto::MerkleProof>{}); }

}  // namespace

void Encode(Writer& w, const ElementGame& e) {
  w.PutU32(e.slot);
  w.PutU32(e.num_state_tensors);
  w.PutVector(e.input_shapes, PutShape);
  PutShape(w, e.output_shape);
  w.PutVector(e.output_shapes, PutShape);
  w.PutU64(e.chunks);
  PutBools(w, e.chunk_posted);
  PutPair(w, e.chunk_root);
  PutPair(w, e.chunk_top);
  w.PutU64(e.chunk);
  for (const auto& o : e.chunk_opening) w.PutOptional(o, verify::EncodeChunk);
  w.PutI64(e.value);
  PutFloats(w, e.y);
  w.PutEnum(e.kind);
  w.PutU64(e.k);
  PutBools(w, e.partials_posted);
  PutPair(w, e.partials_root);
  PutPair(w, e.partials_top);
  PutLeaves(w, e.p_k);
  w.PutU64(e.step_leaf);
  PutBools(w, e.step_revealed);
  PutLeaves(w, e.p_m);
  PutLeaves(w, e.next);
  // A proof is stored once revealed (an empty one does not decode).
  for (std::size_t q = 0; q < 2; ++q) {
    if (!e.step_revealed[q]) continue;
    crypto::Encode(w, e.p_m_proof[q]);
    crypto::Encode(w, e.next_proof[q]);
  }
  for (std::uint32_t n : e.rounds) w.PutU32(n);
  PutPair(w, e.leaf);
  w.PutHash(e.log_hash);
  w.PutU32(e.tau_q16);
}

Result<ElementGame> Decode(Reader& r, DecodeAs<ElementGame>) {
  ElementGame e;
  VT_ASSIGN_OR_RETURN(e.slot, r.GetU32());
  VT_ASSIGN_OR_RETURN(e.num_state_tensors, r.GetU32());
  VT_ASSIGN_OR_RETURN(e.input_shapes, r.GetVector<std::vector<std::int64_t>>(GetShape, protocol::kMaxNodeInputs));
  VT_ASSIGN_OR_RETURN(e.output_shape, GetShape(r));
  VT_ASSIGN_OR_RETURN(e.output_shapes, r.GetVector<std::vector<std::int64_t>>(GetShape, protocol::kMaxNodeOutputs));
  VT_ASSIGN_OR_RETURN(e.chunks, r.GetU64());
  VT_TRY(GetBools(r, e.chunk_posted));
  VT_TRY(GetPair(r, e.chunk_root));
  VT_TRY(GetPair(r, e.chunk_top));
  VT_ASSIGN_OR_RETURN(e.chunk, r.GetU64());
  for (auto& o : e.chunk_opening) {
    VT_ASSIGN_OR_RETURN(o, r.GetOptional<verify::ChunkOpening>(verify::DecodeChunk));
  }
  VT_ASSIGN_OR_RETURN(e.value, r.GetI64());
  VT_TRY(GetFloats(r, e.y));
  VT_ASSIGN_OR_RETURN(e.kind, r.GetEnum(verify::ElementKind::kState));
  VT_ASSIGN_OR_RETURN(e.k, r.GetU64());
  VT_TRY(GetBools(r, e.partials_posted));
  VT_TRY(GetPair(r, e.partials_root));
  VT_TRY(GetPair(r, e.partials_top));
  VT_TRY(GetLeaves(r, e.p_k));
  VT_ASSIGN_OR_RETURN(e.step_leaf, r.GetU64());
  VT_TRY(GetBools(r, e.step_revealed));
  VT_TRY(GetLeaves(r, e.p_m));
  VT_TRY(GetLeaves(r, e.next));
  for (std::size_t q = 0; q < 2; ++q) {
    if (!e.step_revealed[q]) continue;
    VT_ASSIGN_OR_RETURN(e.p_m_proof[q], GetMerkleProof(r));
    VT_ASSIGN_OR_RETURN(e.next_proof[q], GetMerkleProof(r));
  }
  for (std::uint32_t& n : e.rounds) {
    VT_ASSIGN_OR_RETURN(n, r.GetU32());
  }
  VT_TRY(GetPair(r, e.leaf));
  VT_ASSIGN_OR_RETURN(e.log_hash, r.GetHash());
  VT_ASSIGN_OR_RETURN(e.tau_q16, r.GetU32());
  return e;
}

void Encode(Writer& w, const WalkTranscript& t) {
  w.PutU64(t.leaf_count);
  PutPair(w, t.root);
  PutPair(w, t.top);
  for (const auto& list : t.reveals) {
    w.PutVector(list, [](Writer& out, const crypto::NodeReveal& rv) {
      out.PutHash(rv.left);
      out.PutHash(rv.right);
    });
  }
}

Result<WalkTranscript> Decode(Reader& r, DecodeAs<WalkTranscript>) {
  WalkTranscript t;
  VT_ASSIGN_OR_RETURN(t.leaf_count, r.GetU64());
  VT_TRY(GetPair(r, t.root));
  VT_TRY(GetPair(r, t.top));
  for (auto& list : t.reveals) {
    VT_ASSIGN_OR_RETURN(list, r.GetVector<crypto::NodeReveal>(
                                  [](Reader& in) -> Result<crypto::NodeReveal> {
                                    crypto::NodeReveal rv;
                                    VT_ASSIGN_OR_RETURN(rv.left, in.GetHash());
                                    VT_ASSIGN_OR_RETURN(rv.right, in.GetHash());
                                    return rv;
                                  },
                                  kMaxWalkReveals));
  }
  return t;
}

Bytes BountyKey(std::uint64_t id) { return Key('b', id); }
Bytes JobKey(std::uint64_t bounty_id) { return Key('j', bounty_id); }
Bytes GameKey(std::uint64_t id) { return Key('g', id); }
Bytes WalkKey(std::uint64_t game_id) { return Key('w', game_id); }
Bytes ElementKey(std::uint64_t game_id) { return Key('e', game_id); }
Bytes BountyGameKey(std::uint64_t bounty_id, std::uint64_t game_id) {
  Bytes k = Key('G', bounty_id);
  PutBigEndian(k, game_id);
  return k;
}
Bytes RewardEscrow(std::uint64_t bounty_id) { return Name("bounty/", bounty_id, "/reward"); }
Bytes SolverBondEscrow(std::uint64_t bounty_id) { return Name("bounty/", bounty_id, "/bond"); }
Bytes ChallengerBondEscrow(std::uint64_t game_id) { return Name("game/", game_id, "/bond"); }

Result<Bounty> ReadBounty(const vm::StateStore& state, std::uint64_t id) noexcept {
  return ReadRecord<Bounty>(state, BountyKey(id), "bounty-unknown");
}

Result<Game> ReadGame(const vm::StateStore& state, std::uint64_t id) noexcept {
  return ReadRecord<Game>(state, GameKey(id), "game-unknown");
}

Result<protocol::JobSpec> ReadJob(const vm::StateStore& state, std::uint64_t bounty_id) noexcept {
  VT_ASSIGN_OR_RETURN(std::optional<Bytes> v, state.Get(vm::ContractKey(kRefereeContractId, JobKey(bounty_id))));
  if (!v) return Status::Invalid("bounty-unknown");
  auto job = protocol::DecodeJobSpec(*v);
  if (!job.ok()) return Status::Error("state-corrupt", job.status().ToString());
  return job;
}

Result<std::vector<std::uint64_t>> ReadBountyGames(const vm::StateStore& state, std::uint64_t bounty_id) noexcept {
  const Bytes prefix = vm::ContractKey(kRefereeContractId, Key('G', bounty_id));
  std::vector<std::uint64_t> ids;
  bool bad = false;
  VT_TRY(state.Scan(prefix, [&](ByteSpan key, ByteSpan) {
    if (key.size() != prefix.size() + 8) {
      bad = true;
      return false;
    }
    std::uint64_t id = 0;
    for (std::size_t i = prefix.size(); i < key.size(); ++i) id = (id << 8) | key[i];
    ids.push_back(id);
    return true;
  }));
  if (bad) return Status::Error("state-corrupt", "a bounty's game entry");
  return ids;
}

Result<std::optional<WalkTranscript>> ReadWalk(const vm::StateStore& state, std::uint64_t game_id) noexcept {
  VT_ASSIGN_OR_RETURN(std::optional<Bytes> v, state.Get(vm::ContractKey(kRefereeContractId, WalkKey(game_id))));
  if (!v) return std::optional<WalkTranscript>();
  auto t = DecodeExact<WalkTranscript>(*v);
  if (!t.ok()) return Status::Error("state-corrupt", t.status().ToString());
  return std::optional<WalkTranscript>(std::move(t).value());
}

Result<std::optional<ElementGame>> ReadElementGame(const vm::StateStore& state, std::uint64_t game_id) noexcept {
  VT_ASSIGN_OR_RETURN(std::optional<Bytes> v, state.Get(vm::ContractKey(kRefereeContractId, ElementKey(game_id))));
  if (!v) return std::optional<ElementGame>();
  auto e = DecodeExact<ElementGame>(*v);
  if (!e.ok()) return Status::Error("state-corrupt", e.status().ToString());
  return std::optional<ElementGame>(std::move(e).value());
}

Result<crypto::MerkleWalk> ReplayWalk(const WalkTranscript& t) noexcept {
  using P = crypto::MerkleWalk::Party;
  VT_ASSIGN_OR_RETURN(crypto::MerkleWalk walk, crypto::MerkleWalk::Start(t.leaf_count, t.root[0], t.root[1]));
  VT_TRY(walk.RevealTop(P::kA, t.top[0]));
  VT_TRY(walk.RevealTop(P::kB, t.top[1]));
  const std::size_t rounds = std::max(t.reveals[0].size(), t.reveals[1].size());
  for (std::size_t k = 0; k < rounds; ++k) {
    if (k < t.reveals[0].size()) VT_TRY(walk.RevealChildren(P::kA, t.reveals[0][k]));
    if (k < t.reveals[1].size()) VT_TRY(walk.RevealChildren(P::kB, t.reveals[1][k]));
  }
  return walk;
}

}  // namespace vt::referee
