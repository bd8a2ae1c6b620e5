// The explorer's read-only RPC methods (docs/node.md, "Explorer"). They read
// the node's stored blocks, receipts and referee records; nothing here writes
// or asks peers for anything. A dispute's history is rebuilt from the moves
// on chain (the referee keeps only the walk in progress): each level's walk
// is replayed with crypto::MerkleWalk, the same code the referee runs, so the
// ranges drawn are the ones the referee narrowed.

#include "node/explorer_rpc.h"

#include <algorithm>
#include <array>
#include <optional>
#include <string>
#include <type_traits>

#include "common/encoding.h"
#include "contract_vm/node_spec.h"
#include "kernels/ops/registry.h"
#include "net/rpc.h"
#include "node/explorer_assets.h"
#include "node/json_view.h"
#include "referee/messages.h"
#include "referee/records.h"
#include "verify/element_game.h"
#include "verify/graph_source.h"
#include "worker/log_bundle.h"

namespace vt::node {
namespace {

using net::Json;
using referee::Method;

// A referee call in a block, with its receipt.
struct RefereeCall {
  std::uint64_t height = 0;
  std::uint64_t time = 0;
  const vm::Transaction* tx = nullptr;
  const vm::CallPayload* call = nullptr;
  const vm::Receipt* receipt = nullptr;
  Method method() const { return static_cast<Method>(call->method); }
};

// Calls `fn(RefereeCall)` for every referee call in blocks [from, to];
// returns the first height not scanned.
template <typename Fn>
Result<std::uint64_t> ScanRefereeCalls(const Chain& chain, std::uint64_t from, std::uint64_t to, Fn&& fn) {
  std::uint64_t h = std::max<std::uint64_t>(from, 1);
  for (; h <= to; ++h) {
    VT_ASSIGN_OR_RETURN(auto block, chain.db().BlockAt(h));
    VT_ASSIGN_OR_RETURN(auto receipts, chain.db().ReceiptsAt(h));
    if (!block || !receipts) break;  // beyond the stored chain (a reorg under us)
    for (std::size_t i = 0; i < block->txs.size() && i < receipts->size(); ++i) {
      const auto* call = std::get_if<vm::CallPayload>(&block->txs[i].payload);
      if (call == nullptr || call->contract != referee::kRefereeContractId) continue;
      fn(RefereeCall{h, block->header.time, &block->txs[i], call, &(*receipts)[i]});
    }
  }
  return h;
}

template <typename T>
std::optional<T> DecodeArgs(const RefereeCall& c) {
  auto v = DecodeExact<T>(c.call->args);
  if (!v.ok()) return std::nullopt;
  return std::move(v).value();
}

// `get` of a call's arguments, decoded as its method's type from the
// referee's method table, when that type has what `get` reads (nullopt
// otherwise, or when the arguments do not decode).
template <class Get>
std::optional<std::uint64_t> FromArgs(const RefereeCall& c, Get get) {
  switch (c.method()) {
#define VT_FROM_ARGS(enumerator, id, name, Args, handler)                  \
  case Method::enumerator:                                                  \
    if constexpr (std::is_invocable_v<Get, const referee::Args&>) {         \
      if (auto a = DecodeArgs<referee::Args>(c)) return get(*a);            \
    }                                                                       \
    return std::nullopt;
    VT_REFEREE_METHODS(VT_FROM_ARGS)
#undef VT_FROM_ARGS
  }
  return std::nullopt;
}

// The game a call moves in, if it is a game move (its arguments name one).
std::optional<std::uint64_t> GameOfCall(const RefereeCall& c) {
  return FromArgs(c, [](const auto& a) -> decltype(a.game_id) { return a.game_id; });
}

// The bounty a call names in its arguments (post-bounty names none: its id
// is in its event).
std::optional<std::uint64_t> BountyOfCall(const RefereeCall& c) {
  return FromArgs(c, [](const auto& a) -> decltype(a.bounty_id) { return a.bounty_id; });
}

Json CallSummary(const RefereeCall& c) {
  Json j{{"height", c.height},
         {"time", c.time},
         {"tx_id", c.receipt->tx_id.Hex()},
         {"method", MethodName(c.call->method)},
         {"success", c.receipt->success},
         {"gas_used", c.receipt->gas_used},
         {"fee", c.receipt->fee},
         {"bytes", vm::EncodeTransaction(*c.tx).size()}};
  if (!c.receipt->success) j["reason"] = c.receipt->reason;
  if (auto from = vm::TxSenderAddress(*c.tx); from.ok()) j["from"] = from->Hex();
  return j;
}

std::string OpName(std::uint16_t op_kind) {
  if (op_kind == vm::kAssembleOpKind) return "assemble";
  return std::string(kernels::OpKindName(static_cast<kernels::OpKind>(op_kind)));
}

// ---- a dispute, level by level ---------------------------------------------------

constexpr const char* kPartyNames[] = {"solver", "challenger"};
// Levels 1-3, then the element level's two walks: the disputed output's
// chunks (level 4; the assemble node: h_{t+1}'s leaves) and the disputed
// value's partial results (level 5b).
constexpr const char* kLevelNames[] = {"checkpoint", "step", "node", "chunk", "partials"};
constexpr int kChunkLevel = 3, kPartialsLevel = 4;

// One level's walk as the moves on chain drove it.
struct LevelReplay {
  int level = 0;
  std::uint64_t leaf_count = 0;
  std::array<std::optional<Hash256>, 2> root, top;
  std::optional<crypto::MerkleWalk> walk;
  Json posts = Json::array();   // level 2 and 3: each party's root post
  Json rounds = Json::array();  // completed rounds
  Json round;                   // the round in progress (one party revealed)
  std::optional<std::uint64_t> disputed;
  bool agreed = false;          // both roots equal: nothing to walk (level 5b's partial results agree)
  std::string inconsistent;     // a move the replay could not follow (should not happen)
};

// The disputed node as the referee sees it, for drawing the element level:
// the referee's own functions over the job's step graph at the disputed
// step (built on first use), since no move carries the chunk walk's leaf
// count or the rule.
class DisputedNode {
 public:
  DisputedNode(const Chain& chain, const referee::Game& g) : m_chain(chain), m_game(g) {}

  // verify::StartDescent: the disputed slot and the chunk walk's leaf count.
  Result<verify::DescentStart> Descent(const protocol::NodeRecord& solver,
                                       const protocol::NodeRecord& challenger) {
    VT_TRY(LoadGraph());
    return verify::StartDescent(m_job.mode, m_graph, m_game.node_index, solver, challenger);
  }

  // The rule that judges value e of output `slot` (verify::ChooseElementRule).
  std::string RuleAt(std::uint32_t slot, std::int64_t e) {
    if (!LoadGraph().ok()) return "unknown";
    if (m_game.node_index >= m_graph.nodes.size()) return ElementRuleName(verify::ElementKind::kState);
    const verify::NodeSpec& node = m_graph.nodes[m_game.node_index];
    auto shapes = verify::NodeInputShapes(m_graph, node);
    if (!shapes.ok()) return "unknown";
    auto choice =
        verify::ChooseElementRule(m_job.mode, node.op_kind, node.attrs, slot, e, node.inputs, *shapes);
    return choice.ok() ? ElementRuleName(choice->kind) : "unknown";
  }

 private:
  Status LoadGraph() {
    if (m_loaded) return Status::Ok();
    VT_ASSIGN_OR_RETURN(m_job, referee::ReadJob(m_chain.db(), m_game.bounty_id));
    VT_ASSIGN_OR_RETURN(m_graph, verify::KernelsGraphSource().Build(m_job, m_game.step));
    m_loaded = true;
    return Status::Ok();
  }

  const Chain& m_chain;
  const referee::Game& m_game;
  bool m_loaded = false;
  protocol::JobSpec m_job;
  verify::StepGraph m_graph;
};

class GameReplay {
 public:
  GameReplay(const referee::Bounty& b, DisputedNode& node) : m_bounty(b), m_node(node) {}

  void Apply(const RefereeCall& c, std::optional<referee::Party> party) {
    Json move = CallSummary(c);
    move["party"] = party ? kPartyNames[referee::Idx(*party)] : "other";
    m_moves.push_back(move);
    if (!c.receipt->success || !party) return;
    const std::size_t p = referee::Idx(*party);
    switch (c.method()) {
      case Method::kOpenGame:
        if (auto a = DecodeArgs<referee::OpenGameArgs>(c)) {
          LevelReplay& l = NewLevel(0, a->first_proof.leaf_count);
          l.root = {m_bounty.commitment.checkpoint_root, a->checkpoint_root};
          l.top = {m_bounty.checkpoint_top, a->checkpoint_top};
          StartWalk(l);
        }
        break;
      case Method::kPostStepRoot:
        if (auto a = DecodeArgs<referee::StepRootArgs>(c)) {
          LevelReplay& l = LevelAt(1, a->first_proof.leaf_count);
          PostRoot(l, p, a->root, a->top, move);
        }
        break;
      case Method::kPostNodeRoot:
        if (auto a = DecodeArgs<referee::NodeRootArgs>(c)) {
          LevelReplay& l = LevelAt(2, a->assemble_proof.leaf_count);
          PostRoot(l, p, a->root, a->top, move);
        }
        break;
      case Method::kRevealChildren:
        if (auto a = DecodeArgs<referee::RevealChildrenArgs>(c)) Reveal(p, a->reveal, move);
        break;
      case Method::kPostChunkRoot:
        if (auto a = DecodeArgs<referee::ChunkRootArgs>(c)) {
          StartElement();
          LevelReplay& l = LevelAt(kChunkLevel, m_element.value("chunks", std::uint64_t{0}));
          PostRoot(l, p, a->root, a->top, move);
        }
        break;
      case Method::kRevealChunk:
        if (auto a = DecodeArgs<referee::RevealChunkArgs>(c)) {
          m_chunk_values[p] = a->chunk.values;
          ElementDisputed(*c.receipt);
        }
        break;
      case Method::kPostPartialsRoot:
        if (auto a = DecodeArgs<referee::PartialsRootArgs>(c)) {
          LevelReplay& l = LevelAt(kPartialsLevel, a->first.leaf_count);
          m_element["terms"] = a->first.leaf_count - 1;
          PostRoot(l, p, a->root, a->top, move);
        }
        break;
      case Method::kRevealRecord:
        if (auto a = DecodeArgs<referee::RevealRecordArgs>(c)) {
          m_node_records[p] = a->record;
          Json outs = Json::array();
          for (const Hash256& h : a->record.output_hashes) outs.push_back(h.Hex());
          m_records.push_back({{"party", kPartyNames[p]}, {"height", c.height}, {"op", OpName(a->record.op_kind)},
                               {"op_kind", a->record.op_kind}, {"outputs", outs}});
        }
        break;
      default: break;
    }
  }

  Json ToJson() const {
    Json levels = Json::array();
    for (const LevelReplay& l : m_levels) levels.push_back(LevelJson(l));
    Json j{{"levels", levels}, {"moves", m_moves}, {"records", m_records}};
    if (!m_element.is_null()) {
      // The same fields as get_dispute's live view of the element level (ElementGameToJson).
      Json e = m_element;
      e["rounds"] = Json::array();
      for (int level : {kChunkLevel, kPartialsLevel}) {
        const LevelReplay* l = LevelNumbered(level);
        e["rounds"].push_back(l ? l->rounds.size() : 0);
        if (level == kChunkLevel && l && l->disputed) e["chunk"] = *l->disputed;
      }
      j["element"] = std::move(e);
    }
    return j;
  }

 private:
  // The descent starts (a party's first chunk root): its slot and chunk count.
  void StartElement() {
    if (!m_element.is_null()) return;
    m_element = Json::object();
    if (!m_node_records[0] || !m_node_records[1]) return;
    auto d = m_node.Descent(*m_node_records[0], *m_node_records[1]);
    if (!d.ok()) {
      m_element["inconsistent"] = d.status().ToString();
      return;
    }
    m_element["chunks"] = d->chunks;
    if (d->assemble) {
      m_element["rule"] = ElementRuleName(verify::ElementKind::kState);
    } else {
      m_element["slot"] = d->slot;
    }
  }

  // Level 4's end: the referee names the disputed value in an event of the
  // second chunk reveal; each party's value there is in its revealed chunk.
  void ElementDisputed(const vm::Receipt& receipt) {
    for (const vm::Event& e : receipt.events) {
      auto ev = DecodeExact<referee::ElementDisputedEvent>(e.data);
      if (e.topic != referee::topics::kElementDisputed || !ev.ok()) continue;
      m_element["slot"] = ev->slot;
      m_element["value"] = ev->value;
      const auto at = static_cast<std::size_t>(ev->value % verify::kChunkValues);
      for (std::size_t p = 0; p < 2; ++p)
        if (at < m_chunk_values[p].size()) m_element["y"][kPartyNames[p]] = m_chunk_values[p][at];
      if (!m_element.contains("rule")) m_element["rule"] = m_node.RuleAt(ev->slot, ev->value);
    }
  }

  const LevelReplay* LevelNumbered(int level) const {
    for (const LevelReplay& l : m_levels)
      if (l.level == level) return &l;
    return nullptr;
  }

  LevelReplay& NewLevel(int level, std::uint64_t leaf_count) {
    m_levels.push_back(LevelReplay{});
    m_levels.back().level = level;
    m_levels.back().leaf_count = leaf_count;
    return m_levels.back();
  }

  LevelReplay& LevelAt(int level, std::uint64_t leaf_count) {
    if (m_levels.empty() || m_levels.back().level != level) return NewLevel(level, leaf_count);
    return m_levels.back();
  }

  void PostRoot(LevelReplay& l, std::size_t p, const Hash256& root, const Hash256& top, const Json& move) {
    l.root[p] = root;
    l.top[p] = top;
    Json post = move;
    post["root"] = root.Hex();
    l.posts.push_back(post);
    if (!l.root[0] || !l.root[1]) return;
    if (*l.root[0] == *l.root[1]) {
      l.agreed = true;
    } else {
      StartWalk(l);
    }
  }

  void StartWalk(LevelReplay& l) {
    referee::WalkTranscript t;
    t.leaf_count = l.leaf_count;
    t.root = {*l.root[0], *l.root[1]};
    t.top = {*l.top[0], *l.top[1]};
    auto walk = referee::ReplayWalk(t);
    if (!walk.ok()) {
      l.inconsistent = walk.status().ToString();
      return;
    }
    l.walk.emplace(std::move(walk).value());
    Settle(l);
  }

  void Reveal(std::size_t p, const crypto::NodeReveal& reveal, const Json& move) {
    if (m_levels.empty() || !m_levels.back().walk) return;
    LevelReplay& l = m_levels.back();
    crypto::MerkleWalk& walk = *l.walk;
    if (walk.phase() != crypto::MerkleWalk::Phase::kRevealChildren) return;
    const crypto::MerkleNodeId node = walk.current();
    const unsigned before = walk.moves();
    const auto party = p == 0 ? crypto::MerkleWalk::Party::kA : crypto::MerkleWalk::Party::kB;
    if (Status s = walk.RevealChildren(party, reveal); !s.ok()) {
      l.inconsistent = s.ToString();
      return;
    }
    if (l.round.is_null()) l.round = RangeJson(l, node);
    l.round[kPartyNames[p]] = {{"left", reveal.left.Hex()}, {"right", reveal.right.Hex()},
                               {"height", move["height"]}, {"tx_id", move["tx_id"]}};
    if (walk.moves() == before) return;  // the other party has yet to reveal
    // Both revealed: the walk went into the left child if the left hashes
    // differed, else the right one (crypto/merkle.h); the left child's range
    // starts where its parent's does.
    const std::uint64_t first = walk.shape().LeafRange(node).first;
    l.round["went"] = walk.shape().LeafRange(walk.current()).first == first ? "left" : "right";
    l.rounds.push_back(std::move(l.round));
    l.round = Json();
    Settle(l);
  }

  void Settle(LevelReplay& l) {
    if (l.walk && l.walk->phase() == crypto::MerkleWalk::Phase::kDone) l.disputed = l.walk->disputed_leaf();
  }

  // The interval of steps a leaf range stands for, so the page can say
  // "steps 0–12" instead of "leaves 0–3".
  Json RangeJson(const LevelReplay& l, crypto::MerkleNodeId node) const {
    const auto [lo, hi] = l.walk->shape().LeafRange(node);
    Json j{{"node", {{"level", node.level}, {"index", node.index}}}, {"range", {lo, hi}}};
    if (l.level == 0) {
      j["steps"] = {CheckpointStep(lo), CheckpointStep(hi - 1)};
    } else if (l.level == 1) {
      const std::uint64_t s0 = FirstStepOfInterval();
      j["steps"] = {s0 + lo, s0 + hi - 1};
    }
    return j;
  }

  std::uint64_t CheckpointStep(std::uint64_t i) const {
    return protocol::CheckpointStepAt(m_bounty.num_steps, m_bounty.checkpoint_interval, i);
  }

  // Level 2's leaf 0 is the state at the checkpoint before the disputed one.
  std::uint64_t FirstStepOfInterval() const {
    if (m_levels.empty() || !m_levels.front().disputed || *m_levels.front().disputed == 0) return 0;
    return CheckpointStep(*m_levels.front().disputed - 1);
  }

  Json LevelJson(const LevelReplay& l) const {
    Json j{{"level", kLevelNames[l.level]}, {"leaf_count", l.leaf_count}, {"posts", l.posts}, {"rounds", l.rounds}};
    for (std::size_t p = 0; p < 2; ++p)
      if (l.root[p]) j["roots"][kPartyNames[p]] = l.root[p]->Hex();
    if (!l.round.is_null()) j["round_in_progress"] = l.round;
    if (l.walk && !l.disputed && l.walk->phase() == crypto::MerkleWalk::Phase::kRevealChildren)
      j["current"] = RangeJson(l, l.walk->current());
    if (l.level == 1) j["first_step"] = FirstStepOfInterval();
    if (l.disputed) {
      j["disputed"] = *l.disputed;
      j["leaf_hashes"] = {{"solver", l.walk->leaf_hash(crypto::MerkleWalk::Party::kA).Hex()},
                          {"challenger", l.walk->leaf_hash(crypto::MerkleWalk::Party::kB).Hex()}};
      if (l.level == 0) j["disputed_step"] = CheckpointStep(*l.disputed);
      if (l.level == 1) j["disputed_step"] = FirstStepOfInterval() + *l.disputed - 1;  // the step producing it
    }
    if (l.agreed) j["agreed"] = true;
    if (!l.inconsistent.empty()) j["inconsistent"] = l.inconsistent;
    return j;
  }

  const referee::Bounty& m_bounty;
  DisputedNode& m_node;
  std::array<std::optional<protocol::NodeRecord>, 2> m_node_records;
  std::array<std::vector<float>, 2> m_chunk_values;  // each party's revealed chunk (level 4's end)
  Json m_element;                                    // null until a party descends
  std::vector<LevelReplay> m_levels;
  Json m_moves = Json::array();
  Json m_records = Json::array();
};

// The clock as of `height` (records.h, Clock: the block after the turn is
// free; the clock runs out past owes_since + left + 1).
Json ClockNow(const referee::Clock& c, std::uint64_t height) {
  std::uint64_t left = c.left;
  if (c.owes && height > c.owes_since + 1) left -= std::min(left, height - c.owes_since - 1);
  return Json{{"owes", c.owes}, {"owes_since", c.owes_since}, {"left", c.left}, {"left_now", left}};
}

bool EventNamesBounty(const Json& ev, std::uint64_t bounty, const std::vector<std::uint64_t>& games) {
  if (!ev.contains("decoded")) return false;
  const Json& d = ev["decoded"];
  if (d.contains("bounty_id")) return d["bounty_id"] == bounty;
  if (d.contains("game_id")) {
    return std::find(games.begin(), games.end(), d["game_id"].get<std::uint64_t>()) != games.end();
  }
  return false;
}

}  // namespace

void RegisterExplorerRpc(net::RpcServer& rpc, Chain& chain, BlobFetcher fetch_blob) {
  // Newest first: blocks below `before` (default: above the tip).
  rpc.Register("list_blocks", [&chain](const Json& params) -> Result<Json> {
    const std::uint64_t tip = chain.tip().height;
    VT_ASSIGN_OR_RETURN(std::uint64_t before, net::OptU64Param(params, 0, "before", tip + 1));
    VT_ASSIGN_OR_RETURN(std::uint64_t limit, net::OptU64Param(params, 1, "limit", 20));
    limit = std::min(limit, kExplorerMaxBlocks);
    Json blocks = Json::array();
    std::uint64_t h = std::min(before, tip + 1);
    for (; h > 1 && blocks.size() < limit; --h) {
      VT_ASSIGN_OR_RETURN(auto block, chain.db().BlockAt(h - 1));
      if (!block) break;
      Json j = HeaderToJson(block->header);
      j["tx_count"] = block->txs.size();
      blocks.push_back(std::move(j));
    }
    return Json{{"blocks", blocks}, {"height", tip}, {"next_before", h > 1 ? Json(h) : Json()}};
  });

  // The genesis accounts (named in the genesis file) with their balances now.
  rpc.Register("list_accounts", [&chain](const Json& params) -> Result<Json> {
    VT_ASSIGN_OR_RETURN(std::uint64_t from, net::OptU64Param(params, 0, "from", 0));
    VT_ASSIGN_OR_RETURN(std::uint64_t limit, net::OptU64Param(params, 1, "limit", kExplorerMaxAccounts));
    limit = std::min(limit, kExplorerMaxAccounts);
    const auto& named = chain.genesis().accounts;
    Json out = Json::array();
    for (std::uint64_t i = from; i < named.size() && out.size() < limit; ++i) {
      VT_ASSIGN_OR_RETURN(vm::Account a, vm::ReadAccount(chain.db(), named[i].address));
      out.push_back({{"name", named[i].name}, {"address", named[i].address.Hex()}, {"balance", a.balance},
                     {"nonce", a.nonce}});
    }
    return Json{{"accounts", out}, {"total", named.size()}, {"height", chain.tip().height}};
  });

  // The bounty's life on chain: its calls (also failed ones) and the events
  // about it or its games, from `from_height` (default: its posting), at
  // most kExplorerScanBlocks blocks per call; ask again from next_height
  // until it passes `height`.
  rpc.Register("get_bounty_timeline", [&chain](const Json& params) -> Result<Json> {
    VT_ASSIGN_OR_RETURN(std::uint64_t id, net::GetU64Param(params, 0, "bounty_id"));
    VT_ASSIGN_OR_RETURN(referee::Bounty b, referee::ReadBounty(chain.db(), id));
    VT_ASSIGN_OR_RETURN(const std::vector<std::uint64_t> games, referee::ReadBountyGames(chain.db(), id));
    VT_ASSIGN_OR_RETURN(std::uint64_t from, net::OptU64Param(params, 1, "from_height", b.posted_height));
    from = std::max(from, b.posted_height);
    const std::uint64_t tip = chain.tip().height;
    const std::uint64_t to = std::min(tip, from + kExplorerScanBlocks - 1);
    Json entries = Json::array();
    VT_ASSIGN_OR_RETURN(std::uint64_t next, ScanRefereeCalls(chain, from, to, [&](const RefereeCall& c) {
      Json events = Json::array();
      for (const vm::Event& e : c.receipt->events) {
        Json ev = EventToJson(e);
        if (EventNamesBounty(ev, id, games)) events.push_back({{"topic", ev["topic"]}, {"decoded", ev["decoded"]}});
      }
      const bool names_it = BountyOfCall(c) == id;
      if (!names_it && events.empty()) return;
      Json j = CallSummary(c);
      j["events"] = std::move(events);
      entries.push_back(std::move(j));
    }));
    return Json{{"bounty", BountyToJson(b)}, {"entries", entries}, {"next_height", next}, {"height", tip}};
  });

  // One dispute level by level: each walk's rounds with both parties'
  // reveals, the range of checkpoints / steps / nodes still in dispute, the
  // posts, the records, every move with its gas; clocks now and bonds.
  rpc.Register("get_game_moves", [&chain](const Json& params) -> Result<Json> {
    VT_ASSIGN_OR_RETURN(std::uint64_t id, net::GetU64Param(params, 0, "game_id"));
    VT_ASSIGN_OR_RETURN(referee::Game g, referee::ReadGame(chain.db(), id));
    VT_ASSIGN_OR_RETURN(referee::Bounty b, referee::ReadBounty(chain.db(), g.bounty_id));
    const std::uint64_t tip = chain.tip().height;
    const std::uint64_t end = g.phase == referee::GamePhase::kResolved ? g.resolved_height : tip;
    const std::uint64_t to = std::min(end, g.opened_height + kExplorerGameScanBlocks - 1);
    DisputedNode disputed(chain, g);
    GameReplay replay(b, disputed);
    VT_ASSIGN_OR_RETURN(std::uint64_t next, ScanRefereeCalls(chain, g.opened_height, to, [&](const RefereeCall& c) {
      bool ours = GameOfCall(c) == id;
      if (c.method() == Method::kOpenGame && c.receipt->success) {
        for (const vm::Event& e : c.receipt->events) {
          auto ev = DecodeExact<referee::GameOpenedEvent>(e.data);
          if (e.topic == referee::topics::kGameOpened && ev.ok() && ev->game_id == id) ours = true;
        }
      }
      if (!ours) return;
      std::optional<referee::Party> party;
      if (auto from = vm::TxSenderAddress(*c.tx); from.ok()) {
        if (*from == b.solver) party = referee::Party::kSolver;
        if (*from == g.challenger) party = referee::Party::kChallenger;
      }
      replay.Apply(c, party);
    }));
    Json j = replay.ToJson();
    j["game"] = GameToJson(g);
    j["game"]["clocks"] = {{"solver", ClockNow(g.clocks[0], tip)}, {"challenger", ClockNow(g.clocks[1], tip)}};
    if (g.records[0] || g.records[1]) {
      for (std::size_t p = 0; p < 2; ++p)
        if (g.records[p]) j["game"][std::string(kPartyNames[p]) + "_record"]["op"] = OpName(g.records[p]->op_kind);
    }
    j["bounty"] = BountyToJson(b);
    j["bonds"] = {{"solver", b.solver_bond}, {"challenger", b.challenger_bond}};
    j["solver"] = b.solver.Hex();
    j["truncated"] = next <= end;
    j["height"] = tip;
    return j;
  });

  // The per-step losses the solver reports in its run manifest, inside the
  // log bundle it publishes in rounded mode (fetched from peers when this
  // node lacks it; the page asks again). Not
  // committed and not checked by the referee: shown as the solver's claim.
  rpc.Register("get_loss_curve", [&chain, fetch_blob](const Json& params) -> Result<Json> {
    VT_ASSIGN_OR_RETURN(std::uint64_t id, net::GetU64Param(params, 0, "bounty_id"));
    VT_ASSIGN_OR_RETURN(referee::Bounty b, referee::ReadBounty(chain.db(), id));
    Json out{{"bounty_id", id}, {"source", "solver-log-bundle"}, {"verified", false}};
    if (b.log_bundle.IsZero()) {
      out["available"] = false;
      out["why"] = "the solver published no run manifest for this bounty (only rounded-mode runs carry one)";
      return out;
    }
    out["log_bundle"] = b.log_bundle.Hex();
    VT_ASSIGN_OR_RETURN(auto blob, chain.db().GetBlob(b.log_bundle));
    if (!blob) {
      VT_TRY(fetch_blob(b.log_bundle));
      out["available"] = false;
      out["pending"] = true;
      out["why"] = "this node is fetching the solver's log bundle from its peers; ask again";
      return out;
    }
    auto manifest = worker::ReadLogBundleManifest(*blob);
    if (!manifest.ok()) {
      out["available"] = false;
      out["why"] = manifest.status().ToString();
      return out;
    }
    const std::vector<float>& losses = manifest->losses;
    const std::uint64_t n = losses.size();
    const std::uint64_t stride = n <= kExplorerMaxLossPoints ? 1 : (n + kExplorerMaxLossPoints - 1) / kExplorerMaxLossPoints;
    Json steps = Json::array(), values = Json::array();
    for (std::uint64_t s = 0; s < n; s += stride) {
      steps.push_back(s);
      values.push_back(losses[s]);
    }
    if (n > 0 && steps.back() != n - 1) {
      steps.push_back(n - 1);
      values.push_back(losses[n - 1]);
    }
    out["available"] = true;
    out["num_steps"] = n;
    out["steps"] = steps;
    out["losses"] = values;
    return out;
  });
}

void ServeExplorer(net::RpcServer& rpc) {
  for (const ExplorerAsset& a : ExplorerAssets()) {
    net::StaticFile file{std::string(a.content_type), std::string(a.body)};
    if (a.path == "/static/index.html") rpc.ServeStatic("/", file);
    rpc.ServeStatic(std::string(a.path), std::move(file));
  }
}

}  // namespace vt::node
