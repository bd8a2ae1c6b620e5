#include "node/json_view.h"

#include "common/encoding.h"
#include "consensus/commit.h"
#include "kernels/mode.h"

namespace vt::node {

std::string_view BountyStateName(referee::BountyState s) {
  switch (s) {
    case referee::BountyState::kOpen: return "open";
    case referee::BountyState::kClaimed: return "claimed";
    case referee::BountyState::kCommitted: return "committed";
    case referee::BountyState::kFinalized: return "finalized";
    case referee::BountyState::kFailed: return "failed";
    case referee::BountyState::kRefunded: return "refunded";
  }
  return "?";
}

std::string_view GamePhaseName(referee::GamePhase p) {
  switch (p) {
    case referee::GamePhase::kCheckpointWalk: return "checkpoint-walk";
    case referee::GamePhase::kStepRoots: return "step-roots";
    case referee::GamePhase::kStepWalk: return "step-walk";
    case referee::GamePhase::kNodeRoots: return "node-roots";
    case referee::GamePhase::kNodeWalk: return "node-walk";
    case referee::GamePhase::kRevealRecords: return "reveal-records";
    case referee::GamePhase::kArbitration: return "arbitration";
    case referee::GamePhase::kResolved: return "resolved";
    case referee::GamePhase::kChunkRoots: return "chunk-roots";
    case referee::GamePhase::kChunkWalk: return "chunk-walk";
    case referee::GamePhase::kChunkReveal: return "chunk-reveal";
    case referee::GamePhase::kPartialsRoots: return "partials-roots";
    case referee::GamePhase::kPartialsWalk: return "partials-walk";
    case referee::GamePhase::kStepReveal: return "step-reveal";
    case referee::GamePhase::kOpenElement: return "open-element";
  }
  return "?";
}

std::string_view MethodName(std::uint16_t method) { return referee::MethodName(method); }

Json HeaderToJson(const vm::BlockHeader& h) {
  return Json{{"height", h.height},
              {"hash", vm::BlockHash(h).Hex()},
              {"parent", h.parent_hash.Hex()},
              {"state_root", h.state_root.Hex()},
              {"tx_root", h.tx_root.Hex()},
              {"receipt_root", h.receipt_root.Hex()},
              {"evidence_root", h.evidence_root.Hex()},
              {"time", h.time},
              {"chain_id", h.chain_id},
              {"proposer", ToHex(h.proposer)}};
}

Json TxToJson(const vm::Transaction& tx) {
  Json j{{"id", vm::TxId(tx).Hex()},
         {"chain_id", tx.chain_id},
         {"nonce", tx.nonce},
         {"gas_limit", tx.gas_limit},
         {"gas_price", tx.gas_price},
         {"sender_key", ToHex(tx.sender)}};
  if (auto from = vm::TxSenderAddress(tx); from.ok()) j["from"] = from->Hex();
  if (const auto* t = std::get_if<vm::TransferPayload>(&tx.payload)) {
    j["kind"] = "transfer";
    j["to"] = t->to.Hex();
    j["amount"] = t->amount;
  } else {
    const auto& c = std::get<vm::CallPayload>(tx.payload);
    j["kind"] = "call";
    j["contract"] = c.contract;
    j["method"] = c.method;
    if (c.contract == referee::kRefereeContractId) j["method_name"] = MethodName(c.method);
    j["args_bytes"] = c.args.size();
  }
  return j;
}

Json BlockToJson(const vm::Block& b, bool full_txs) {
  Json j = HeaderToJson(b.header);
  j["tx_count"] = b.txs.size();
  Json txs = Json::array();
  for (const vm::Transaction& tx : b.txs) txs.push_back(full_txs ? TxToJson(tx) : Json(vm::TxId(tx).Hex()));
  j["txs"] = std::move(txs);
  // Evidence items are DuplicateVotes (node/evidence_rules.h); a block
  // holds only ones that verified, so each decodes.
  Json evidence = Json::array();
  for (const Bytes& item : b.evidence) {
    Json e{{"hash", vm::EvidenceHash(item).Hex()}};
    if (auto ev = DecodeExact<consensus::DuplicateVote>(item); ev.ok()) {
      e["validator"] = ev->a.validator;
      e["height"] = ev->a.height;
      e["round"] = ev->a.round;
      e["vote"] = ev->a.type == consensus::VoteType::kPrevote ? "prevote" : "precommit";
    }
    evidence.push_back(std::move(e));
  }
  j["evidence"] = std::move(evidence);
  return j;
}

Json EventToJson(const vm::Event& e) {
  Json j{{"contract", e.contract}, {"topic", e.topic}, {"data", ToHex(e.data)}};
  if (e.contract != referee::kRefereeContractId) return j;
  namespace t = referee::topics;
  if (e.topic == t::kGameOpened) {
    if (auto ev = DecodeExact<referee::GameOpenedEvent>(e.data); ev.ok())
      j["decoded"] = {{"game_id", ev->game_id}, {"bounty_id", ev->bounty_id}};
  } else if (e.topic == t::kWalkDone) {
    if (auto ev = DecodeExact<referee::WalkDoneEvent>(e.data); ev.ok()) {
      static constexpr const char* kLevels[] = {"checkpoint", "step", "node", "chunk", "partials"};
      const auto level = static_cast<std::size_t>(ev->level);
      j["decoded"] = {{"game_id", ev->game_id},
                      {"level", level < std::size(kLevels) ? kLevels[level] : "unknown"},
                      {"index", ev->index}};
    }
  } else if (e.topic == t::kGameResolved) {
    if (auto ev = DecodeExact<referee::GameResolvedEvent>(e.data); ev.ok())
      j["decoded"] = {{"game_id", ev->game_id},
                      {"result", referee::GameResultName(ev->result)},
                      {"reason", ev->reason}};
  } else if (e.topic == t::kElementDisputed) {
    if (auto ev = DecodeExact<referee::ElementDisputedEvent>(e.data); ev.ok())
      j["decoded"] = {{"game_id", ev->game_id}, {"slot", ev->slot}, {"value", ev->value}};
  } else if (e.data.size() == 8) {
    Reader r(e.data);
    if (auto id = r.GetU64(); id.ok()) j["decoded"] = {{"bounty_id", *id}};
  }
  return j;
}

Json ReceiptToJson(const vm::Receipt& r) {
  Json events = Json::array();
  for (const vm::Event& e : r.events) events.push_back(EventToJson(e));
  return Json{{"tx_id", r.tx_id.Hex()}, {"success", r.success}, {"reason", r.reason},
              {"gas_used", r.gas_used}, {"fee", r.fee},         {"events", std::move(events)}};
}

Json TipToJson(const vm::ChainTip& t) {
  return Json{{"chain_id", t.chain_id}, {"height", t.height}, {"hash", t.hash.Hex()}, {"time", t.time}};
}

Json BountyToJson(const referee::Bounty& b) {
  Json j{{"id", b.id},
         {"state", BountyStateName(b.state)},
         {"client", b.client.Hex()},
         {"job_hash", b.job_hash.Hex()},
         {"initial_state", b.initial_state.Hex()},
         {"initial_blob", b.initial_blob.Hex()},  // zero: the job's seeded init
         {"state_blob", b.state_blob.Hex()},      // zero until committed
         {"reward", b.reward},
         {"solver_bond", b.solver_bond},
         {"challenger_bond", b.challenger_bond},
         {"min_bond", b.min_bond},
         {"arbitration_allowance", b.arbitration_allowance},
         {"posted_height", b.posted_height},
         {"solve_deadline", b.solve_deadline},
         {"challenge_window", b.challenge_window},
         {"challenge_deadline", b.challenge_deadline},
         {"clock_budget", b.clock_budget},
         {"num_steps", b.num_steps},
         {"checkpoint_interval", b.checkpoint_interval},
         {"mode", kernels::ModeName(static_cast<kernels::Mode>(b.mode))},
         {"open_games", b.open_games}};
  if (b.state != referee::BountyState::kOpen) {
    j["solver"] = b.solver.Hex();
  }
  if (b.state >= referee::BountyState::kCommitted && b.state != referee::BountyState::kRefunded) {
    j["commitment"] = {{"checkpoint_root", b.commitment.checkpoint_root.Hex()},
                       {"final_state_hash", b.commitment.final_state_hash.Hex()},
                       {"log_root", b.commitment.log_root.Hex()}};
    if (!b.log_bundle.IsZero()) j["commitment"]["log_bundle"] = b.log_bundle.Hex();
  }
  return j;
}

std::string ElementRuleName(verify::ElementKind kind) {
  switch (kind) {
    case verify::ElementKind::kDot:
      return "dot";
    case verify::ElementKind::kPlan:
      return "pointwise-row";
    case verify::ElementKind::kReduce:
      return "reduction";
    case verify::ElementKind::kState:
      return "state";
  }
  return "unknown";
}

// A partial result: an fp32 number, or an exact sum's canonical encoding in hex.
Json LeafToJson(const verify::PartialLeaf& leaf) {
  if (const float* f = std::get_if<float>(&leaf)) return *f;
  return ToHex(std::get<verify::ExactPartial>(leaf));
}

Json ElementGameToJson(const referee::ElementGame& e) {
  Json j{{"slot", e.slot},
         {"chunks", e.chunks},
         {"chunk", e.chunk},
         {"value", e.value},
         {"rule", ElementRuleName(e.kind)},
         {"terms", e.k},
         {"step_leaf", e.step_leaf},
         {"rounds", {e.rounds[0], e.rounds[1]}}};  // walk rounds: chunks, partial results
  if (e.value >= 0) j["y"] = {{"solver", e.y[0]}, {"challenger", e.y[1]}};
  for (std::size_t p = 0; p < 2; ++p) {
    const char* party = p == 0 ? "solver" : "challenger";
    if (e.step_revealed[p])
      j["step"][party] = {{"p_m", LeafToJson(e.p_m[p])}, {"next", LeafToJson(e.next[p])}};
  }
  return j;
}

Json GameToJson(const referee::Game& g) {
  Json clocks = Json::array();
  for (const referee::Clock& c : g.clocks)
    clocks.push_back({{"owes", c.owes}, {"owes_since", c.owes_since}, {"left", c.left}});
  Json j{{"id", g.id},
         {"bounty_id", g.bounty_id},
         {"challenger", g.challenger.Hex()},
         {"phase", GamePhaseName(g.phase)},
         {"result", referee::GameResultName(g.result)},
         {"reason", g.reason},
         {"opened_height", g.opened_height},
         {"resolved_height", g.resolved_height},
         {"clocks", {{"solver", clocks[0]}, {"challenger", clocks[1]}}},
         {"rounds", {g.rounds[0], g.rounds[1], g.rounds[2]}}};
  if (g.phase > referee::GamePhase::kCheckpointWalk) j["checkpoint_index"] = g.checkpoint_index;
  if (g.phase > referee::GamePhase::kStepWalk) j["step"] = g.step;
  if (g.phase > referee::GamePhase::kNodeWalk) {
    j["node_index"] = g.node_index;
    j["node_count"] = g.node_count;
  }
  for (int p = 0; p < 2; ++p) {
    if (!g.records[static_cast<std::size_t>(p)]) continue;
    const protocol::NodeRecord& r = *g.records[static_cast<std::size_t>(p)];
    Json outs = Json::array();
    for (const Hash256& h : r.output_hashes) outs.push_back(h.Hex());
    j[p == 0 ? "solver_record" : "challenger_record"] = {{"op_kind", r.op_kind}, {"outputs", outs}};
  }
  return j;
}

}  // namespace vt::node
