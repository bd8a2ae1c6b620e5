#pragma once
// ConsensusDriver: runs the BFT state machine (consensus/state_machine.h)
// over the P2P layer for one node — signs, persists, broadcasts, keeps the
// round timers, catches up on final blocks with their certificates — and
// leaves blocks to a FinalityApp (the chain; a toy app in tests). It fulfils
// the machine's driver contract (docs/node.md, "BFT finality"):
//
// * every proposal and vote is signature-checked before the machine sees it;
// * before a vote or proposal is sent, the safety state and the signed
//   messages of the height are written to `state_file` (write, fsync,
//   rename, fsync the folder), and fed back after a restart;
// * ToResend() is broadcast every `resend` interval (a peer that was cut off
//   gets the round again when its link comes back);
// * a consensus message from a higher height, or a peer announcing one,
//   makes the driver fetch the final blocks (FinalBlock: block + commit
//   certificate) and apply them after VerifyCertificate. (The machine
//   decides only a block it was told is valid, which the driver then holds;
//   a node that refused the block — its blobs missing — stays at the height
//   and catches up by sync like this.)
//
// Threads: everything runs on the io thread of the P2PNode (its callbacks
// and this driver's timers); Start() and Stop() too.

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string_view>
#include <utility>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include "common/result.h"
#include "consensus/commit.h"
#include "consensus/state_machine.h"
#include "consensus/wire.h"
#include "crypto/keys.h"
#include "net/p2p.h"
#include "node/evidence_pool.h"
#include "node/evidence_rules.h"

namespace vt::node {

// What the driver needs from the chain. Called on the io thread.
class FinalityApp {
 public:
  static constexpr std::string_view kNotDue = "block-not-due";
  virtual ~FinalityApp() = default;
  virtual std::uint64_t FinalHeight() const = 0;
  // A new block for `height` on the last final block: its hash and bytes.
  // Invalid kNotDue when it is too early (the driver asks again every
  // kBuildRetry while the round is in its propose step).
  virtual Result<std::pair<Hash256, Bytes>> BuildBlock(std::uint64_t height) = 0;
  // The hash of `block` if it is a valid block for `height` on the last
  // final block; Invalid otherwise (the reason is logged). `certified`: the
  // block comes with a verified-to-be-checked commit certificate (sync), so
  // local policy (its blobs being here, its time against our clock) does
  // not apply, only the chain's rules.
  virtual Result<Hash256> CheckBlock(std::uint64_t height, ByteSpan block, bool certified) = 0;
  // Appends the decided block with its certificate, durably, in one write.
  virtual Status CommitBlock(std::uint64_t height, ByteSpan block, const consensus::CommitCertificate& cert) = 0;
  // Whether a final block recorded `offence` (the driver then drops its
  // evidence, node/evidence_pool.h). Apps without evidence record none.
  virtual bool EvidenceRecorded(const vm::Offence& /*offence*/) const { return false; }
};

// TEST-ONLY misbehaviour of a validator, for the Byzantine tests
// (tests/testnet/byzantine_test.cpp); vt-node honours it only when started
// by a test (docs/node.md "Evidence and slashing").
enum class TestAdversary : std::uint8_t {
  kNone = 0,
  // Signs a second, conflicting vote (for a block that does not exist) for
  // every vote it casts, and, after kGarbageAfter double-signs, sends
  // garbage under the consensus message type (which gets it banned).
  kEquivocate = 1,
};
// "none" | "equivocate"; Invalid "adversary-bad-spec" otherwise.
Result<TestAdversary> ParseTestAdversary(std::string_view spec);

struct DriverConfig {
  std::string name = "node";
  std::uint64_t chain_id = 0;
  std::vector<crypto::PublicKey> validators;
  const crypto::SecretKey* key = nullptr;  // null: a node that follows without voting
  consensus::Timeouts timeouts;
  std::filesystem::path state_file;  // the validator's safety state (unused by followers)
  std::chrono::milliseconds resend{500};
  TestAdversary adversary = TestAdversary::kNone;  // TEST-ONLY
};

struct DriverStats {
  std::uint64_t committed = 0;        // blocks decided by votes here
  std::uint64_t synced = 0;           // final blocks applied from certificates
  std::uint64_t rejected = 0;         // messages refused (bad signature, malformed)
  std::uint64_t evidence = 0;         // distinct equivocations seen
  std::uint32_t highest_round = 0;    // of any decision
};

class ConsensusDriver {
 public:
  static Result<std::unique_ptr<ConsensusDriver>> Create(boost::asio::io_context& io, net::P2PNode& p2p,
                                                         FinalityApp& app, DriverConfig config);
  ~ConsensusDriver();

  // io thread: loads the persisted state (a validator) and starts the machine.
  Status Start();
  // io thread: cancels the timers; nothing runs after it.
  void Stop();

  // io thread: a `consensus` gossip payload.
  net::Verdict OnMessage(net::PeerId from, ByteSpan payload);
  // io thread: final blocks from sync, at first_height, first_height + 1, …
  net::Verdict OnFinalBlocks(net::PeerId from, const std::vector<Bytes>& items);

  DriverStats stats() const { return m_stats; }
  // Evidence seen here that no final block recorded yet, of offences at
  // most vm::kEvidenceMaxAge blocks old (node/evidence_pool.h), oldest
  // first: what this node puts in the blocks it proposes (Node::BuildBlock).
  const std::vector<HeldEvidence>& evidence() const { return m_evidence.items(); }

 private:
  ConsensusDriver(boost::asio::io_context& io, net::P2PNode& p2p, FinalityApp& app, DriverConfig config,
                  consensus::ValidatorSet set);
  void Apply(consensus::Actions actions);
  void OnCommit(const consensus::action::Commit& c);
  Status Persist();
  void Feed(const consensus::ProposalMsg& m);
  void CatchUp(net::PeerId from);
  void ScheduleResend();
  // Asks the app for a block for (height, round); retries while not due.
  void TryBuild(std::uint64_t height, std::uint32_t round);
  void Resend();
  // TEST-ONLY (TestAdversary::kEquivocate): a second vote conflicting with `v`.
  void Equivocate(const consensus::Vote& v);

  boost::asio::io_context& m_io;
  net::P2PNode& m_p2p;
  FinalityApp& m_app;
  DriverConfig m_config;
  consensus::ValidatorSet m_set;
  std::optional<std::uint32_t> m_self;
  std::unique_ptr<consensus::Machine> m_machine;
  std::map<Hash256, Bytes> m_blocks;                  // blocks proposed at the current height
  std::set<std::uint32_t> m_proposal_rounds;          // rounds whose proposal we took
  std::vector<consensus::ProposalMsg> m_own_proposals;  // signed, this height (persisted)
  std::vector<consensus::Vote> m_own_votes;             // signed, this height (persisted)
  std::vector<consensus::ProposalMsg> m_early;          // proposals for the next height
  std::set<std::shared_ptr<boost::asio::steady_timer>> m_timers;
  boost::asio::steady_timer m_resend_timer;
  std::uint32_t m_resends = 0;
  bool m_catching_up = false;
  std::chrono::steady_clock::time_point m_last_catch_up{};
  bool m_stopped = false;
  VoteEvidenceRules m_rules;  // what a double vote proves (the offence)
  EvidencePool m_evidence;
  DriverStats m_stats;
  std::uint64_t m_double_signed = 0;  // TEST-ONLY adversary
};

}  // namespace vt::node
