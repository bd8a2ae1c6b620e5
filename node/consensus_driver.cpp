#include "node/consensus_driver.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <deque>
#include <fstream>

#include "common/log.h"
#include "contract_vm/evidence.h"
#include "crypto/sha256.h"

namespace vt::node {
namespace {

spdlog::logger& Log() { return log::Get("consensus"); }

// At most this many next-height proposals are held until this height ends.
constexpr std::size_t kMaxEarlyProposals = 8;
// Final blocks asked for per catch-up request.
constexpr std::uint32_t kCatchUpBatch = 32;
constexpr std::chrono::milliseconds kCatchUpEvery{200};
constexpr std::uint32_t kProposalResendEvery = 2;
// How often a proposer asks again for a block that was not due yet.
constexpr std::chrono::milliseconds kBuildRetry{20};
// TEST-ONLY adversary: garbage only after this many double-signs, so that
// its peers hold evidence of several offences before they ban it.
constexpr std::uint64_t kGarbageAfter = 16;

// The persisted validator state: SafetyState ‖ vector<Proposal ‖ bytes block> ‖ vector<Vote>.
Bytes EncodeState(const consensus::SafetyState& s, const std::vector<consensus::ProposalMsg>& proposals,
                  const std::vector<consensus::Vote>& votes) {
  Writer w;
  Encode(w, s);
  w.PutVector(proposals, [](Writer& ww, const consensus::ProposalMsg& p) {
    Encode(ww, p.proposal);
    ww.PutBytes(p.block);
  });
  w.PutVector(votes);
  return std::move(w).Take();
}

struct LoadedState {
  consensus::SafetyState safety;
  std::vector<consensus::ProposalMsg> proposals;
  std::vector<consensus::Vote> votes;
};

Result<LoadedState> DecodeState(ByteSpan bytes) {
  Reader r(bytes);
  LoadedState st;
  VT_ASSIGN_OR_RETURN(st.safety, Decode(r, DecodeAs<consensus::SafetyState>{}));
  VT_ASSIGN_OR_RETURN(st.proposals, r.GetVector<consensus::ProposalMsg>([](Reader& rr) -> Result<consensus::ProposalMsg> {
    consensus::ProposalMsg m;
    VT_ASSIGN_OR_RETURN(m.proposal, Decode(rr, DecodeAs<consensus::Proposal>{}));
    VT_ASSIGN_OR_RETURN(m.block, rr.GetBytes(consensus::kMaxBlockPayload));
    return m;
  }));
  VT_ASSIGN_OR_RETURN(st.votes, r.GetVector<consensus::Vote>());
  VT_TRY(r.Finish());
  return st;
}

// Durable replace: write a temporary file, fsync it, rename it over the
// old one, fsync the folder (a crash leaves the old state or the new one).
Status WriteDurably(const std::filesystem::path& path, const Bytes& bytes) {
  const std::filesystem::path tmp = path.string() + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return Status::Error("consensus-state-write", tmp.string());
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n <= 0) {
      ::close(fd);
      return Status::Error("consensus-state-write", tmp.string());
    }
    done += static_cast<std::size_t>(n);
  }
  const bool synced = ::fsync(fd) == 0;
  ::close(fd);
  if (!synced || std::rename(tmp.c_str(), path.c_str()) != 0)
    return Status::Error("consensus-state-write", path.string());
  const int dir = ::open(path.parent_path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir >= 0) {
    (void)::fsync(dir);
    ::close(dir);
  }
  return Status::Ok();
}

std::optional<Bytes> ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  return Bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

}  // namespace

Result<TestAdversary> ParseTestAdversary(std::string_view spec) {
  if (spec.empty() || spec == "none") return TestAdversary::kNone;
  if (spec == "equivocate") return TestAdversary::kEquivocate;
  return Status::Invalid("adversary-bad-spec", "unknown test adversary '" + std::string(spec) + "'");
}

Result<std::unique_ptr<ConsensusDriver>> ConsensusDriver::Create(boost::asio::io_context& io, net::P2PNode& p2p,
                                                                 FinalityApp& app, DriverConfig config) {
  VT_ASSIGN_OR_RETURN(consensus::ValidatorSet set, consensus::ValidatorSet::Create(config.validators));
  return std::unique_ptr<ConsensusDriver>(new ConsensusDriver(io, p2p, app, std::move(config), std::move(set)));
}

ConsensusDriver::ConsensusDriver(boost::asio::io_context& io, net::P2PNode& p2p, FinalityApp& app, DriverConfig config,
                                 consensus::ValidatorSet set)
    : m_io(io), m_p2p(p2p), m_app(app), m_config(std::move(config)), m_set(std::move(set)), m_resend_timer(io),
      m_rules(m_config.chain_id, m_set),
      m_evidence(m_set.size()) {
  if (m_config.key) m_self = m_set.IndexOf(m_config.key->public_key());
}

ConsensusDriver::~ConsensusDriver() = default;

Status ConsensusDriver::Start() {
  consensus::SafetyState start;
  start.height = m_app.FinalHeight() + 1;
  LoadedState loaded;
  if (m_self) {
    if (auto bytes = ReadFile(m_config.state_file)) {
      auto st = DecodeState(*bytes);
      if (!st.ok()) return Status::Error("consensus-state-corrupt", st.status().ToString());
      loaded = std::move(*st);
      // A state of an older height is spent (that height is final here).
      if (loaded.safety.height == start.height) start = loaded.safety;
      if (loaded.safety.height > start.height)
        return Status::Error("consensus-state-ahead", "the state file is ahead of the chain");
    }
  }
  m_machine = std::make_unique<consensus::Machine>(m_set, m_self, m_config.timeouts, start);
  // Our signed messages of this height go back in first: sent before, maybe lost.
  if (loaded.safety.height == start.height) {
    m_own_proposals = loaded.proposals;
    m_own_votes = loaded.votes;
    for (const consensus::ProposalMsg& p : loaded.proposals) {
      m_blocks[p.proposal.block] = p.block;
      Apply(m_machine->OnProposal(p.proposal, true));
    }
    for (const consensus::Vote& v : loaded.votes) Apply(m_machine->OnVote(v));
  }
  Log().info("{} consensus starts at height={} round={} validator={}", m_config.name, start.height, start.round,
             m_self ? std::to_string(*m_self) : "no");
  Apply(m_machine->Start());
  ScheduleResend();
  return Status::Ok();
}

void ConsensusDriver::Stop() {
  m_stopped = true;
  for (const auto& t : m_timers) t->cancel();
  m_timers.clear();
  m_resend_timer.cancel();
}

Status ConsensusDriver::Persist() {
  if (!m_self) return Status::Ok();
  return WriteDurably(m_config.state_file, EncodeState(m_machine->safety(), m_own_proposals, m_own_votes));
}

void ConsensusDriver::Apply(consensus::Actions actions) {
  std::deque<consensus::Action> work(actions.begin(), actions.end());
  const auto more = [&](consensus::Actions next) { work.insert(work.end(), next.begin(), next.end()); };
  while (!work.empty() && !m_stopped) {
    const consensus::Action a = std::move(work.front());
    work.pop_front();
    if (const auto* bp = std::get_if<consensus::action::BroadcastProposal>(&a)) {
      consensus::ProposalMsg m{bp->proposal, {}};
      const auto block = m_blocks.find(m.proposal.block);
      if (block == m_blocks.end() || !consensus::SignProposal(m_config.chain_id, *m_config.key, m.proposal).ok()) {
        Log().error("{} cannot propose at height={} round={}", m_config.name, m.proposal.height, m.proposal.round);
        continue;
      }
      m.block = block->second;
      m_own_proposals.push_back(m);
      if (Status s = Persist(); !s.ok()) {
        Log().error("{} not proposing: {}", m_config.name, s.ToString());  // never send what is not on disk
        continue;
      }
      (void)m_p2p.Broadcast(net::GossipKind::kConsensus, consensus::EncodeMsg(m));
      more(m_machine->OnProposal(m.proposal, true));
    } else if (const auto* bv = std::get_if<consensus::action::BroadcastVote>(&a)) {
      consensus::Vote v = bv->vote;
      if (!consensus::SignVote(m_config.chain_id, *m_config.key, v).ok()) continue;
      m_own_votes.push_back(v);
      if (Status s = Persist(); !s.ok()) {
        Log().error("{} not voting: {}", m_config.name, s.ToString());
        continue;
      }
      (void)m_p2p.Broadcast(net::GossipKind::kConsensus, consensus::EncodeMsg(v));
      if (m_config.adversary == TestAdversary::kEquivocate) Equivocate(v);
      more(m_machine->OnVote(v));
    } else if (const auto* st = std::get_if<consensus::action::ScheduleTimeout>(&a)) {
      auto timer = std::make_shared<boost::asio::steady_timer>(m_io, std::chrono::milliseconds(st->delay_ms));
      m_timers.insert(timer);
      timer->async_wait([this, timer, t = *st](const boost::system::error_code& ec) {
        m_timers.erase(timer);
        if (ec || m_stopped) return;
        Apply(m_machine->OnTimeout(t.step, t.height, t.round));
      });
    } else if (const auto* bb = std::get_if<consensus::action::BuildBlock>(&a)) {
      TryBuild(bb->height, bb->round);
    } else if (const auto* c = std::get_if<consensus::action::Commit>(&a)) {
      OnCommit(*c);
      std::vector<consensus::ProposalMsg> early;
      early.swap(m_early);
      for (const consensus::ProposalMsg& p : early) Feed(p);
    } else if (const auto* ev = std::get_if<consensus::action::Evidence>(&a)) {
      const consensus::DuplicateVote d = consensus::MakeEvidence(ev->first, ev->second);
      const std::optional<vm::Offence> o = m_rules.OffenceOf(d);
      if (o && m_evidence.Add(*o, EncodeEvidence(d))) {
        ++m_stats.evidence;
        Log().warn("{} validator {} signed two votes at height={} round={}", m_config.name, d.a.validator, d.a.height,
                   d.a.round);
      }
    }
  }
}

void ConsensusDriver::TryBuild(std::uint64_t height, std::uint32_t round) {
  if (m_stopped || m_machine->height() != height || m_machine->round() != round ||
      m_machine->step() != consensus::Step::kPropose)
    return;
  auto built = m_app.BuildBlock(height);
  if (!built.ok() && built.status().reason() == FinalityApp::kNotDue) {
    auto timer = std::make_shared<boost::asio::steady_timer>(m_io, kBuildRetry);
    m_timers.insert(timer);
    timer->async_wait([this, timer, height, round](const boost::system::error_code& ec) {
      m_timers.erase(timer);
      if (!ec) TryBuild(height, round);
    });
    return;
  }
  if (!built.ok()) {
    Log().error("{} could not build block {}: {}", m_config.name, height, built.status().ToString());
    return;  // the round's propose timeout moves everyone on
  }
  m_blocks[built->first] = std::move(built->second);
  Apply(m_machine->OnBlockBuilt(height, round, built->first));
}

void ConsensusDriver::OnCommit(const consensus::action::Commit& c) {
  if (c.height <= m_app.FinalHeight()) {
    // Decided from a certificate already applied (OnFinalBlocks).
  } else {
    const auto block = m_blocks.find(c.block);
    const consensus::CommitCertificate cert = consensus::MakeCertificate(c.height, c.round, c.block, c.precommits);
    Status s = block == m_blocks.end() ? Status::Error("consensus-block-missing")
                                       : m_app.CommitBlock(c.height, block->second, cert);
    if (!s.ok()) {
      // The block is final (a quorum signed it); a local store failure must
      // not make us vote on at the next height with a chain that lacks it.
      Log().critical("{} could not store final block {}: {}", m_config.name, c.height, s.ToString());
      Stop();
      return;
    }
    ++m_stats.committed;
    m_stats.highest_round = std::max(m_stats.highest_round, c.round);
  }
  m_blocks.clear();
  m_proposal_rounds.clear();
  m_own_proposals.clear();
  m_own_votes.clear();
  // What a final block recorded is refused by the state from now on:
  // holding it would only take the place of new evidence.
  m_evidence.Forget(c.height + 1, [this](const vm::Offence& o) { return m_app.EvidenceRecorded(o); });
  if (Status s = Persist(); !s.ok()) Log().error("{} {}", m_config.name, s.ToString());
}

void ConsensusDriver::Equivocate(const consensus::Vote& v) {
  // A block nobody proposed, different for each vote: the honest vote and
  // this one name different blocks, so together they are evidence.
  Writer w;
  Encode(w, v);
  consensus::Vote twin = v;
  twin.block = crypto::TaggedHash("veritrain/test/equivocation", w.bytes());
  if (!consensus::SignVote(m_config.chain_id, *m_config.key, twin).ok()) return;
  (void)m_p2p.Broadcast(net::GossipKind::kConsensus, consensus::EncodeMsg(twin));
  if (++m_double_signed % kGarbageAfter == 0) {
    Bytes junk{0xff, 0x00, 0x13, 0x37};  // kind 0xff: no such consensus message
    (void)m_p2p.Broadcast(net::GossipKind::kConsensus, std::move(junk));
  }
  Log().warn("{} TEST-ONLY adversary: double-signed {} at height={} round={}", m_config.name,
             v.type == consensus::VoteType::kPrevote ? "prevote" : "precommit", v.height, v.round);
}

void ConsensusDriver::Feed(const consensus::ProposalMsg& m) {
  const std::uint64_t h = m_machine->height();
  if (m.proposal.height == h + 1) {
    if (m_early.size() < kMaxEarlyProposals) m_early.push_back(m);
    return;
  }
  if (m.proposal.height != h || m.proposal.round > m_machine->round() + consensus::kRoundWindow) return;
  // The machine keeps the first proposal of each round only; so do we with
  // the blocks (an equivocating proposer cannot make us hold more).
  if (!m_proposal_rounds.insert(m.proposal.round).second) return;
  auto hash = m_app.CheckBlock(h, m.block, false);
  if (hash.ok() && *hash != m.proposal.block) hash = Status::Invalid("consensus-block-mismatch");
  if (hash.ok()) m_blocks[m.proposal.block] = m.block;
  if (!hash.ok())
    Log().info("{} proposal h={} r={} refused: {}", m_config.name, h, m.proposal.round, hash.status().ToString());
  Apply(m_machine->OnProposal(m.proposal, hash.ok()));
}

net::Verdict ConsensusDriver::OnMessage(net::PeerId from, ByteSpan payload) {
  if (m_stopped || !m_machine) return net::Verdict::Ignore("consensus-stopped");
  auto msg = consensus::DecodeMsg(payload);
  if (!msg.ok()) {
    ++m_stats.rejected;
    return net::Verdict::Reject(msg.status().reason(), net::penalty::kGarbage);
  }
  const std::uint64_t h = m_machine->height();
  if (const auto* p = std::get_if<consensus::ProposalMsg>(&*msg)) {
    if (Status s = consensus::VerifyProposal(m_config.chain_id, m_set, p->proposal); !s.ok()) {
      ++m_stats.rejected;
      return net::Verdict::Reject(s.reason());
    }
    if (p->proposal.height > h) CatchUp(from);
    Feed(*p);
  } else {
    const consensus::Vote& v = std::get<consensus::Vote>(*msg);
    if (Status s = consensus::VerifyVote(m_config.chain_id, m_set, v); !s.ok()) {
      ++m_stats.rejected;
      return net::Verdict::Reject(s.reason());
    }
    if (v.height > h) CatchUp(from);  // one behind too: the others stopped re-sending our height
    Apply(m_machine->OnVote(v));
  }
  // Not relayed by gossip: every validator re-sends what matters (Resend).
  return net::Verdict::Ignore();
}

net::Verdict ConsensusDriver::OnFinalBlocks(net::PeerId from, const std::vector<Bytes>& items) {
  (void)from;
  if (m_stopped || !m_machine) return net::Verdict::Ignore("consensus-stopped");
  for (const Bytes& item : items) {
    auto fb = DecodeExact<consensus::FinalBlock>(item);
    if (!fb.ok()) return net::Verdict::Reject("final-block-malformed", net::penalty::kGarbage);
    const std::uint64_t h = fb->cert.height;
    if (h <= m_app.FinalHeight()) continue;
    if (h != m_app.FinalHeight() + 1) return net::Verdict::Ignore("final-block-gap");
    auto hash = m_app.CheckBlock(h, fb->block, true);
    if (!hash.ok()) return net::Verdict::Reject(hash.status().reason());
    if (Status s = consensus::VerifyCertificate(m_config.chain_id, m_set, fb->cert, h, *hash); !s.ok())
      return net::Verdict::Reject(s.reason());
    if (Status s = m_app.CommitBlock(h, fb->block, fb->cert); !s.ok()) return net::Verdict::FromStatus(s);
    ++m_stats.synced;
    Apply(m_machine->OnCommitCertificate(h, fb->cert.round, *hash));
  }
  return net::Verdict::Accept();
}

void ConsensusDriver::CatchUp(net::PeerId from) {
  const auto now = std::chrono::steady_clock::now();
  if (m_catching_up || now < m_last_catch_up + kCatchUpEvery) return;
  m_catching_up = true;
  m_last_catch_up = now;
  m_p2p.RequestBlocks(from, m_app.FinalHeight() + 1, kCatchUpBatch, [this, from](Result<net::ItemsResponse> r) {
    m_catching_up = false;
    if (m_stopped || !r.ok()) return;
    (void)OnFinalBlocks(from, r->items);
  });
}

void ConsensusDriver::ScheduleResend() {
  m_resend_timer.expires_after(m_config.resend);
  m_resend_timer.async_wait([this](const boost::system::error_code& ec) {
    if (ec || m_stopped) return;
    Resend();
    ScheduleResend();
  });
}

void ConsensusDriver::Resend() {
  const std::uint32_t count = ++m_resends;
  const consensus::Machine::Resend again = m_machine->ToResend();
  // Proposals carry whole blocks: every kProposalResendEvery-th time only.
  if (count % kProposalResendEvery == 0) {
    for (const consensus::Proposal& p : again.proposals) {
      const auto block = m_blocks.find(p.block);
      if (block != m_blocks.end())
        (void)m_p2p.Broadcast(net::GossipKind::kConsensus,
                              consensus::EncodeMsg(consensus::ProposalMsg{p, block->second}, count));
    }
  }
  for (const consensus::Vote& v : again.votes)
    (void)m_p2p.Broadcast(net::GossipKind::kConsensus, consensus::EncodeMsg(v, count));
}

}  // namespace vt::node
