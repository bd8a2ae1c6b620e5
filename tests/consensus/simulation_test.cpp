// Property test of the consensus state machine in a deterministic simulated
// network (like CometBFT's e2e and Jepsen, in process): n validators, up to
// f of them Byzantine (equivocating proposals and votes to different peers,
// votes in far rounds and the next height, or silent), and before the global
// stabilisation time (GST) a network that drops, delays, duplicates and
// reorders messages, partitions the validators, and kills and restarts
// honest ones (they come back from their persisted SafetyState only).
//
// Checked on every run (seed printed; VT_TEST_SEED replays one):
// * agreement: no two honest validators ever commit different blocks at one
//   height, and every commit carries a quorum of precommits for its block;
// * validity: only valid blocks are committed;
// * no honest double-sign, across restarts;
// * evidence only ever names Byzantine validators;
// * liveness: after GST every honest validator commits new blocks within a
//   bounded simulated time. Simulated time only: nothing here reads a clock.

#include <gtest/gtest.h>

#include <cstdlib>
#include <deque>
#include <map>
#include <memory>
#include <queue>
#include <random>
#include <set>
#include <sstream>

#include "consensus/state_machine.h"
#include "tests/support/test_seed.h"

namespace vt::consensus {
namespace {

using Rng = std::mt19937_64;

bool ValidBlock(const Hash256& b) { return b.bytes[0] != 0xFF; }  // the sim's block validity rule

struct Msg {
  enum class Kind { kProposal, kVote, kCertRequest, kCert } kind = Kind::kVote;
  std::uint32_t from = 0;
  Proposal proposal;
  Vote vote;
  std::uint64_t height = 0;  // certificate request / certificate
  std::uint32_t round = 0;
  Hash256 block;
  std::vector<Vote> precommits;
};

struct Config {
  std::size_t n = 4;
  std::size_t byzantine = 1;
  bool silent_byzantine = false;
  double drop = 0.2;
  double dup = 0.1;
  std::uint64_t max_delay_ms = 400;  // before GST
  std::uint64_t gst_ms = 20'000;
  std::size_t partitions = 2;
  std::size_t crashes = 2;
  std::string Describe() const {
    std::ostringstream os;
    os << "n=" << n << " byzantine=" << byzantine << (silent_byzantine ? " (silent)" : " (equivocating)")
       << " drop=" << drop << " dup=" << dup << " delay<=" << max_delay_ms << "ms partitions=" << partitions
       << " crashes=" << crashes;
    return os.str();
  }
};

class Sim {
 public:
  Sim(Config cfg, std::uint64_t seed) : m_cfg(cfg), m_rng(seed), m_set(MakeSet(cfg.n)) {
    m_nodes.resize(cfg.n);
    for (std::uint32_t i = 0; i < cfg.n; ++i) m_nodes[i].byzantine = i < cfg.byzantine;
    // Partitions and crashes, all before GST.
    for (std::size_t k = 0; k < cfg.partitions; ++k) {
      const std::uint64_t start = Uniform(0, cfg.gst_ms - 2000);
      const std::uint64_t end = std::min<std::uint64_t>(start + Uniform(500, 8000), cfg.gst_ms);
      std::uint64_t mask = 0;
      while (mask == 0 || mask == (std::uint64_t{1} << cfg.n) - 1) mask = Uniform(0, (std::uint64_t{1} << cfg.n) - 1);
      m_partitions.push_back({start, end, mask});
    }
    for (std::size_t k = 0; k < cfg.crashes && cfg.byzantine < cfg.n; ++k) {
      const auto who = static_cast<std::uint32_t>(Uniform(cfg.byzantine, cfg.n - 1));
      const std::uint64_t at = Uniform(0, cfg.gst_ms - 4000);
      Push(at, Event{Event::Kind::kCrash, who, {}, Step::kPropose, 0, 0, 0});
      Push(at + Uniform(200, 3000), Event{Event::Kind::kRestart, who, {}, Step::kPropose, 0, 0, 0});
    }
  }

  // Runs until every honest validator has committed `extra` blocks past the
  // highest height any reached by GST, or `limit_ms` of simulated time.
  void Run(std::uint64_t extra, std::uint64_t limit_ms) {
    for (std::uint32_t i = 0; i < m_cfg.n; ++i) {
      if (m_nodes[i].byzantine) continue;
      Restart(i);
      Push(Uniform(0, kGossipMs), Event{Event::Kind::kGossip, i, {}, Step::kPropose, 0, 0, 0});
    }
    std::uint64_t target = 0;
    bool target_set = false;
    while (!m_queue.empty() && !::testing::Test::HasFatalFailure()) {
      const QueueItem item = m_queue.top();
      m_queue.pop();
      m_now = item.time;
      if (!target_set && m_now >= m_cfg.gst_ms) {
        for (const Node& nd : m_nodes) target = std::max<std::uint64_t>(target, nd.committed.size());
        target += extra;
        target_set = true;
      }
      if (m_now > limit_ms) break;
      Handle(item.event);
      if (target_set && MinHonestHeight() >= target) return;
    }
    if (::testing::Test::HasFatalFailure()) return;
    std::ostringstream state;
    for (std::uint32_t i = 0; i < m_cfg.n; ++i) {
      const Node& nd = m_nodes[i];
      if (nd.byzantine || !nd.m) continue;
      state << " v" << i << "@h" << nd.m->height() << "/r" << nd.m->round() << "/s"
            << static_cast<int>(nd.m->step()) << (nd.m->safety().locked_round ? "/locked" : "");
      if (std::getenv("VT_SIM_DEBUG") != nullptr) DumpResend(state, *nd.m);
    }
    ADD_FAILURE() << "liveness (" << state.str() << "): after GST at " << m_cfg.gst_ms << " ms the honest validators reached only height "
                  << MinHonestHeight() << " of " << target << " by " << m_now << " ms";
  }

  // VT_SIM_DEBUG=1: what a stuck validator holds (for replaying a seed).
  static void DumpResend(std::ostream& os, const Machine& m) {
    const auto round = [](const std::optional<std::uint32_t>& r) { return r ? std::to_string(*r) : "-"; };
    const auto block = [](const std::optional<Hash256>& b) { return b ? b->Hex().substr(0, 4) : "nil"; };
    const Machine::Resend rs = m.ToResend();
    for (const Proposal& p : rs.proposals)
      os << "\n  proposal r" << p.round << " vr" << round(p.valid_round) << " " << block(p.block) << " by v" << p.proposer;
    for (const Vote& v : rs.votes)
      os << "\n  " << (v.type == VoteType::kPrevote ? "prevote" : "precommit") << " r" << v.round << " v" << v.validator
         << " " << block(v.block);
    os << "\n  locked r" << round(m.safety().locked_round) << " " << block(m.safety().locked_block) << " valid r"
       << round(m.safety().valid_round) << " " << block(m.safety().valid_block) << "\n";
  }

  std::uint64_t MinHonestHeight() const {
    std::uint64_t h = ~std::uint64_t{0};
    for (const Node& nd : m_nodes)
      if (!nd.byzantine) h = std::min<std::uint64_t>(h, nd.committed.size());
    return h;
  }
  std::size_t evidence_count() const { return m_evidence.size(); }
  std::uint64_t commits() const { return m_commit_count; }
  std::uint64_t max_round() const { return m_max_round; }

 private:
  static constexpr std::uint64_t kGossipMs = 500;
  static constexpr std::uint64_t kPostGstDelayMs = 50;

  struct Committed {
    std::uint32_t round;
    Hash256 block;
    std::vector<Vote> precommits;
  };
  struct Node {
    bool byzantine = false;
    bool up = false;
    std::uint64_t incarnation = 0;
    std::unique_ptr<Machine> m;
    SafetyState saved;                // what survives kill -9, with:
    std::vector<Proposal> saved_proposals;  // our signed messages of saved.height
    std::vector<Vote> saved_votes;
    std::vector<Committed> committed; // committed[h-1]; survives too (the block store)
    std::vector<Proposal> early;      // proposals for the next height
    std::vector<Vote> cert;           // the certificate being applied (OnCommitCertificate)
    std::uint64_t last_catchup_ms = 0;
    std::set<std::pair<std::uint64_t, std::uint32_t>> byz_acted;  // (height, round)
    std::map<std::pair<std::uint64_t, std::uint32_t>, std::vector<Hash256>> byz_seen;
  };
  struct Event {
    enum class Kind { kDeliver, kTimer, kGossip, kCrash, kRestart } kind;
    std::uint32_t node;
    Msg msg;
    Step step;
    std::uint64_t height;
    std::uint32_t round;
    std::uint64_t incarnation;
  };
  struct QueueItem {
    std::uint64_t time;
    std::uint64_t seq;
    Event event;
    bool operator>(const QueueItem& o) const { return std::tie(time, seq) > std::tie(o.time, o.seq); }
  };
  struct Partition {
    std::uint64_t start, end, mask;
  };

  static ValidatorSet MakeSet(std::size_t n) {
    std::vector<crypto::PublicKey> pubs;
    for (std::size_t i = 0; i < n; ++i) {
      std::array<std::uint8_t, 32> b{};
      b[31] = static_cast<std::uint8_t>(i + 1);
      pubs.push_back(crypto::SecretKey::FromBytes(b).value().public_key());
    }
    return ValidatorSet::Create(pubs).value();
  }

  std::uint64_t Uniform(std::uint64_t lo, std::uint64_t hi) {
    return std::uniform_int_distribution<std::uint64_t>(lo, hi)(m_rng);
  }
  bool Chance(double p) { return std::uniform_real_distribution<double>(0, 1)(m_rng) < p; }
  Hash256 RandomBlock(bool valid) {
    Hash256 h;
    for (auto& b : h.bytes) b = static_cast<std::uint8_t>(Uniform(0, 255));
    h.bytes[0] = valid ? static_cast<std::uint8_t>(Uniform(0, 254)) : 0xFF;
    return h;
  }

  void Push(std::uint64_t at, Event e) { m_queue.push(QueueItem{at, m_seq++, std::move(e)}); }

  bool Partitioned(std::uint32_t a, std::uint32_t b) const {
    for (const Partition& p : m_partitions)
      if (m_now >= p.start && m_now < p.end && (((p.mask >> a) & 1) != ((p.mask >> b) & 1))) return true;
    return false;
  }

  void Send(std::uint32_t from, std::uint32_t to, Msg msg) {
    msg.from = from;
    if (m_now < m_cfg.gst_ms) {
      if (Partitioned(from, to) || Chance(m_cfg.drop)) return;
      const int copies = Chance(m_cfg.dup) ? 2 : 1;
      for (int c = 0; c < copies; ++c)
        Push(m_now + Uniform(1, m_cfg.max_delay_ms), Event{Event::Kind::kDeliver, to, msg, Step::kPropose, 0, 0, 0});
    } else {
      Push(m_now + Uniform(1, kPostGstDelayMs), Event{Event::Kind::kDeliver, to, msg, Step::kPropose, 0, 0, 0});
    }
  }
  void SendAll(std::uint32_t from, const Msg& msg) {
    for (std::uint32_t j = 0; j < m_cfg.n; ++j)
      if (j != from) Send(from, j, msg);
  }

  void Restart(std::uint32_t i) {
    Node& nd = m_nodes[i];
    nd.up = true;
    ++nd.incarnation;
    SafetyState start = nd.saved;
    if (start.height <= nd.committed.size()) {
      start = SafetyState{};
      start.height = nd.committed.size() + 1;
    }
    nd.m = std::make_unique<Machine>(m_set, i, Timeouts{1000, 500, 500, 500}, start);
    nd.early.clear();
    for (const Proposal& p : nd.saved_proposals)
      if (p.height == start.height) Apply(i, nd.m->OnProposal(p, true));
    for (const Vote& v : nd.saved_votes)
      if (v.height == start.height) Apply(i, nd.m->OnVote(v));
    Apply(i, nd.m->Start());
  }

  // The driver: carries out a machine's actions (own messages fed back).
  void Apply(std::uint32_t i, Actions first) {
    Node& nd = m_nodes[i];
    std::deque<Action> work(first.begin(), first.end());
    const auto feed = [&](Actions more) { work.insert(work.end(), more.begin(), more.end()); };
    while (!work.empty() && !::testing::Test::HasFatalFailure()) {
      const Action a = std::move(work.front());
      work.pop_front();
      if (const auto* bp = std::get_if<action::BroadcastProposal>(&a)) {
        nd.saved = nd.m->safety();  // persisted before it is sent
        nd.saved_proposals.push_back(bp->proposal);
        Msg msg;
        msg.kind = Msg::Kind::kProposal;
        msg.proposal = bp->proposal;
        SendAll(i, msg);
        feed(nd.m->OnProposal(bp->proposal, true));
      } else if (const auto* bv = std::get_if<action::BroadcastVote>(&a)) {
        nd.saved = nd.m->safety();
        nd.saved_votes.push_back(bv->vote);
        CheckNoDoubleSign(bv->vote);
        Msg msg;
        msg.kind = Msg::Kind::kVote;
        msg.vote = bv->vote;
        m_max_round = std::max<std::uint64_t>(m_max_round, bv->vote.round);
        SendAll(i, msg);
        feed(nd.m->OnVote(bv->vote));
      } else if (const auto* st = std::get_if<action::ScheduleTimeout>(&a)) {
        Push(m_now + st->delay_ms, Event{Event::Kind::kTimer, i, {}, st->step, st->height, st->round, nd.incarnation});
      } else if (const auto* bb = std::get_if<action::BuildBlock>(&a)) {
        feed(nd.m->OnBlockBuilt(bb->height, bb->round, RandomBlock(true)));
      } else if (const auto* c = std::get_if<action::Commit>(&a)) {
        RecordCommit(i, *c);
        nd.saved = nd.m->safety();
        nd.saved_proposals.clear();
        nd.saved_votes.clear();
        std::vector<Proposal> early;
        early.swap(nd.early);
        for (const Proposal& p : early) feed(nd.m->OnProposal(p, ValidBlock(p.block)));
      } else if (const auto* ev = std::get_if<action::Evidence>(&a)) {
        EXPECT_EQ(ev->first.validator, ev->second.validator);
        EXPECT_TRUE(m_nodes[ev->first.validator].byzantine) << "evidence against honest validator " << ev->first.validator;
        m_evidence.insert(ev->first.validator);
      }
    }
  }

  void CheckNoDoubleSign(const Vote& v) {
    const auto key = std::make_tuple(v.validator, v.height, v.round, v.type);
    const auto [it, inserted] = m_signed.emplace(key, v.block);
    if (!inserted) {
      ASSERT_EQ(it->second, v.block) << "honest validator " << v.validator << " double-signed at height " << v.height
                                     << " round " << v.round;
    }
  }

  void RecordCommit(std::uint32_t i, const action::Commit& c) {
    Node& nd = m_nodes[i];
    ASSERT_EQ(c.height, nd.committed.size() + 1) << "commits out of order";
    ASSERT_TRUE(ValidBlock(c.block)) << "an invalid block was committed";
    if (!c.precommits.empty()) {  // decided by votes (not from a certificate)
      std::set<std::uint32_t> signers;
      for (const Vote& v : c.precommits) {
        ASSERT_EQ(v.type, VoteType::kPrecommit);
        ASSERT_EQ(v.block, c.block);
        ASSERT_EQ(v.round, c.round);
        signers.insert(v.validator);
      }
      ASSERT_GE(signers.size(), m_set.quorum());
    }
    const auto [it, inserted] = m_decided.emplace(c.height, c.block);
    ASSERT_EQ(it->second, c.block) << "agreement violated at height " << c.height << " by validator " << i;
    nd.committed.push_back(Committed{c.round, c.block, c.precommits.empty() ? nd.cert : c.precommits});
    ++m_commit_count;
  }

  void Handle(const Event& e) {
    Node& nd = m_nodes[e.node];
    switch (e.kind) {
      case Event::Kind::kCrash:
        nd.up = false;
        nd.m.reset();
        return;
      case Event::Kind::kRestart:
        Restart(e.node);
        return;
      case Event::Kind::kTimer:
        if (nd.up && e.incarnation == nd.incarnation) Apply(e.node, nd.m->OnTimeout(e.step, e.height, e.round));
        return;
      case Event::Kind::kGossip:
        Push(m_now + kGossipMs, e);
        if (!nd.up) return;
        {
          const Machine::Resend again = nd.m->ToResend();
          for (const Proposal& p : again.proposals) {
            Msg msg;
            msg.kind = Msg::Kind::kProposal;
            msg.proposal = p;
            SendAll(e.node, msg);
          }
          for (const Vote& v : again.votes) {
            Msg msg;
            msg.kind = Msg::Kind::kVote;
            msg.vote = v;
            SendAll(e.node, msg);
          }
        }
        return;
      case Event::Kind::kDeliver:
        if (nd.byzantine) return Byzantine(e.node, e.msg);
        if (nd.up) Deliver(e.node, e.msg);
        return;
    }
  }

  void Deliver(std::uint32_t i, const Msg& msg) {
    Node& nd = m_nodes[i];
    const std::uint64_t h = nd.m->height();
    switch (msg.kind) {
      case Msg::Kind::kProposal:
        if (msg.proposal.height == h + 1 && nd.early.size() < 16) nd.early.push_back(msg.proposal);
        if (msg.proposal.height > h) CatchUp(i, msg.from);
        return Apply(i, nd.m->OnProposal(msg.proposal, ValidBlock(msg.proposal.block)));
      case Msg::Kind::kVote:
        if (msg.vote.height > h) CatchUp(i, msg.from);
        return Apply(i, nd.m->OnVote(msg.vote));
      case Msg::Kind::kCertRequest:
        if (msg.height >= 1 && msg.height <= nd.committed.size()) {
          const Committed& c = nd.committed[msg.height - 1];
          if (c.precommits.empty()) return;  // every commit keeps its votes or its certificate
          Msg reply;
          reply.kind = Msg::Kind::kCert;
          reply.height = msg.height;
          reply.round = c.round;
          reply.block = c.block;
          reply.precommits = c.precommits;
          Send(i, msg.from, reply);
        }
        return;
      case Msg::Kind::kCert: {
        // What VerifyCertificate checks with signatures: a quorum of distinct
        // precommits for this height, round and block.
        std::set<std::uint32_t> signers;
        for (const Vote& v : msg.precommits)
          if (v.type == VoteType::kPrecommit && v.height == msg.height && v.round == msg.round && v.block == msg.block)
            signers.insert(v.validator);
        if (signers.size() < m_set.quorum() || !ValidBlock(msg.block)) return;
        // A node that commits from a certificate keeps it, so that it can
        // answer others' requests as a real node serves its stored
        // certificates.
        nd.cert = msg.precommits;
        Apply(i, nd.m->OnCommitCertificate(msg.height, msg.round, msg.block));
        nd.cert.clear();
        if (msg.from < m_cfg.n) CatchUp(i, msg.from);  // more to fetch?
        return;
      }
    }
  }

  void CatchUp(std::uint32_t i, std::uint32_t peer) {
    Node& nd = m_nodes[i];
    if (m_now < nd.last_catchup_ms + 100 && nd.last_catchup_ms != 0) return;
    nd.last_catchup_ms = m_now;
    Msg req;
    req.kind = Msg::Kind::kCertRequest;
    req.height = nd.m->height();
    Send(i, peer, req);
  }

  // An equivocating validator: for every (height, round) it hears of, it
  // sends each peer its own choice of prevote and precommit (nil, a block it
  // saw proposed, a fresh valid or invalid block), proposes different blocks
  // to different peers when it is the proposer, and sprinkles votes for far
  // rounds and the next height.
  void Byzantine(std::uint32_t b, const Msg& msg) {
    Node& nd = m_nodes[b];
    if (m_cfg.silent_byzantine) return;
    std::uint64_t h = 0;
    std::uint32_t r = 0;
    if (msg.kind == Msg::Kind::kProposal) {
      h = msg.proposal.height;
      r = msg.proposal.round;
      nd.byz_seen[{h, r}].push_back(msg.proposal.block);
    } else if (msg.kind == Msg::Kind::kVote) {
      h = msg.vote.height;
      r = msg.vote.round;
      if (msg.vote.block) nd.byz_seen[{h, r}].push_back(*msg.vote.block);
    } else {
      return;
    }
    if (!nd.byz_acted.insert({h, r}).second && !Chance(0.05)) return;
    const std::vector<Hash256>& seen = nd.byz_seen[{h, r}];
    const auto pick = [&]() -> std::optional<Hash256> {
      const auto k = Uniform(0, 3);
      if (k == 0) return std::nullopt;
      if (k == 1 && !seen.empty()) return seen[Uniform(0, seen.size() - 1)];
      return RandomBlock(!Chance(0.3));
    };
    for (std::uint32_t j = 0; j < m_cfg.n; ++j) {
      if (m_nodes[j].byzantine) continue;
      for (std::uint32_t rr : {r, r + 1}) {
        if (m_set.Proposer(h, rr) == b) {
          Msg p;
          p.kind = Msg::Kind::kProposal;
          const bool reuse = !seen.empty() && Chance(0.5);
          p.proposal = Proposal{h, rr, std::nullopt, reuse ? seen[Uniform(0, seen.size() - 1)] : RandomBlock(!Chance(0.3)), b, {}};
          if (rr > 0 && Chance(0.3)) p.proposal.valid_round = static_cast<std::uint32_t>(Uniform(0, rr - 1));
          Send(b, j, p);
        }
      }
      for (VoteType t : {VoteType::kPrevote, VoteType::kPrecommit}) {
        Msg v;
        v.kind = Msg::Kind::kVote;
        v.vote = Vote{t, h, r, pick(), b, {}};
        Send(b, j, v);
        if (Chance(0.1)) {  // a far round or the next height
          Msg w = v;
          if (Chance(0.5)) w.vote.round = r + static_cast<std::uint32_t>(Uniform(2, 40));
          else w.vote.height = h + 1;
          Send(b, j, w);
        }
      }
    }
  }

  Config m_cfg;
  Rng m_rng;
  ValidatorSet m_set;
  std::vector<Node> m_nodes;
  std::vector<Partition> m_partitions;
  std::priority_queue<QueueItem, std::vector<QueueItem>, std::greater<>> m_queue;
  std::uint64_t m_seq = 0;
  std::uint64_t m_now = 0;
  std::map<std::uint64_t, Hash256> m_decided;  // height → the block every honest commit must equal
  std::map<std::tuple<std::uint32_t, std::uint64_t, std::uint32_t, VoteType>, std::optional<Hash256>> m_signed;
  std::set<std::uint32_t> m_evidence;
  std::uint64_t m_commit_count = 0;
  std::uint64_t m_max_round = 0;
};

std::size_t Runs() {
  const char* env = std::getenv("VT_SIM_RUNS");  // longer campaigns: VT_SIM_RUNS=2000
  return env != nullptr ? static_cast<std::size_t>(std::strtoull(env, nullptr, 10)) : 500;
}

TEST(ConsensusSimulation, SafeUnderFaultsAndLiveAfterGst) {
  const std::uint64_t base = test::TestSeed();
  std::uint64_t commits = 0, evidence_runs = 0, max_round = 0;
  const std::size_t runs = Runs();
  for (std::size_t run = 0; run < runs; ++run) {
    const std::uint64_t seed = base + run;
    Rng pick(seed ^ 0x9e3779b97f4a7c15ULL);
    Config cfg;
    cfg.n = (run % 4 == 3) ? 7 : 4;
    const std::size_t f = (cfg.n - 1) / 3;
    cfg.byzantine = std::uniform_int_distribution<std::size_t>(0, f)(pick);
    cfg.silent_byzantine = pick() % 3 == 0;
    cfg.drop = std::uniform_real_distribution<double>(0, 0.5)(pick);
    cfg.dup = std::uniform_real_distribution<double>(0, 0.3)(pick);
    cfg.max_delay_ms = std::uniform_int_distribution<std::uint64_t>(10, 3000)(pick);
    cfg.partitions = pick() % 4;
    cfg.crashes = pick() % 4;
    SCOPED_TRACE("seed " + std::to_string(seed) + " (VT_TEST_SEED=" + std::to_string(seed) +
                 " VT_SIM_RUNS=1 replays it): " + cfg.Describe());
    Sim sim(cfg, seed);
    sim.Run(/*extra=*/3, /*limit_ms=*/cfg.gst_ms + 300'000);
    if (::testing::Test::HasFailure()) return;
    commits += sim.commits();
    if (sim.evidence_count() > 0) ++evidence_runs;
    max_round = std::max(max_round, sim.max_round());
  }
  std::printf("[sim] %zu runs, %llu honest commits, equivocation detected in %llu runs, highest round %llu\n", runs,
              static_cast<unsigned long long>(commits), static_cast<unsigned long long>(evidence_runs),
              static_cast<unsigned long long>(max_round));
  EXPECT_GT(commits, runs * 3);
}

// Without a Byzantine validator or faults, every height is decided in round 0.
TEST(ConsensusSimulation, HappyPathDecidesEveryHeightInRoundZero) {
  Config cfg;
  cfg.byzantine = 0;
  cfg.drop = 0;
  cfg.dup = 0;
  cfg.max_delay_ms = 20;
  cfg.partitions = 0;
  cfg.crashes = 0;
  cfg.gst_ms = 1;
  Sim sim(cfg, test::TestSeed());
  sim.Run(20, 60'000);
  EXPECT_EQ(sim.max_round(), 0u);
  EXPECT_GE(sim.MinHonestHeight(), 20u);
}

}  // namespace
}  // namespace vt::consensus
