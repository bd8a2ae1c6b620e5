#pragma once
// The Tendermint consensus algorithm (Buchman, Kwon, Milosevic, "The latest
// gossip on BFT consensus", 2018, Algorithm 1) as a pure state machine: no
// clock, no sockets, no disk. A driver (the node, or the simulation in
// tests/consensus) feeds it events — a proposal, a vote, a timeout, a block
// it built, a commit certificate from sync — and carries out the actions it
// returns: broadcast, schedule a timeout, build a block, commit, report
// evidence. The same code therefore runs in the node and in a deterministic
// simulation of lossy, partitioned networks with Byzantine validators.
//
// Driver contract (safety depends on it):
// * Proposals and votes are fed only after their signatures were verified
//   (consensus/messages.h VerifyVote / VerifyProposal); a proposal comes with
//   the driver's verdict on the block (valid: it applies on the last decided
//   block and its blobs are here).
// * Before sending a vote or proposal the machine emitted, the driver
//   persists safety() (synced). A validator restarted from that state never
//   signs two different votes for one height, round and type, and keeps
//   its lock (tests/consensus: RestartedValidatorNeverDoubleSigns).
// * The machine's own votes and proposals count once the driver has signed
//   them and fed them back (OnVote / OnProposal), like anyone else's. The
//   driver persists the signed ones of the current height with safety() and,
//   after a restart, feeds them back before Start(): a vote that was sent
//   but lost must still reach the others (the algorithm's liveness assumes
//   every message of a correct validator is eventually delivered), and
//   ToResend() then keeps sending it.
// * Messages for a height above height() mean the driver is behind: it
//   fetches the decided blocks with their certificates (sync) and feeds them
//   to OnCommitCertificate after checking them.
//
// Bounds: votes are stored for rounds up to round() + kRoundWindow only, the
// first one per validator, round and type plus conflicting ones for nil and
// for proposed blocks (see Tally); a validator's votes at higher rounds only
// raise its "highest round seen", one number per validator, which the f+1
// round-skip rule reads. Votes for height() + 1 are kept until this height is
// decided: one per validator, round and type, rounds up to kRoundWindow.

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <tuple>
#include <variant>
#include <vector>

#include "common/bytes.h"
#include "consensus/messages.h"

namespace vt::consensus {

inline constexpr std::uint32_t kRoundWindow = 16;

enum class Step : std::uint8_t { kPropose = 0, kPrevote = 1, kPrecommit = 2 };

// Timeout of a step in round r: base + r·delta (grows per round, so that
// after the network stabilises some round is long enough for everyone).
struct Timeouts {
  std::uint64_t propose_ms = 1000;
  std::uint64_t prevote_ms = 500;
  std::uint64_t precommit_ms = 500;
  std::uint64_t delta_ms = 500;
  std::uint64_t For(Step step, std::uint32_t round) const;
};

// What a validator must remember across a restart (persisted before any
// message it signs is sent).
struct SafetyState {
  std::uint64_t height = 1;
  std::uint32_t round = 0;
  Step step = Step::kPropose;
  std::optional<std::uint32_t> locked_round;
  Hash256 locked_block;
  std::optional<std::uint32_t> valid_round;
  Hash256 valid_block;
  bool operator==(const SafetyState&) const = default;
};

void Encode(Writer& w, const SafetyState& s);
Result<SafetyState> Decode(Reader& r, DecodeAs<SafetyState>);

namespace action {
struct BroadcastProposal { Proposal proposal; };  // sign, persist, send, feed back
struct BroadcastVote { Vote vote; };              // sign, persist, send, feed back
struct ScheduleTimeout { Step step; std::uint64_t height; std::uint32_t round; std::uint64_t delay_ms; };
struct BuildBlock { std::uint64_t height; std::uint32_t round; };  // answer with OnBlockBuilt
struct Commit { std::uint64_t height; std::uint32_t round; Hash256 block; std::vector<Vote> precommits; };
struct Evidence { Vote first; Vote second; };     // a validator signed two conflicting votes
}  // namespace action

using Action = std::variant<action::BroadcastProposal, action::BroadcastVote, action::ScheduleTimeout,
                            action::BuildBlock, action::Commit, action::Evidence>;
using Actions = std::vector<Action>;

class Machine {
 public:
  // `self`: this validator's index, or nullopt for a node that only follows
  // (it decides from others' votes but never votes).
  Machine(ValidatorSet set, std::optional<std::uint32_t> self, Timeouts timeouts, SafetyState start = {});

  // Enters the stored round (after a restart: without voting again in a step
  // it had reached; the step's timeout is scheduled instead).
  Actions Start();
  Actions OnProposal(const Proposal& p, bool valid);
  Actions OnVote(const Vote& v);
  Actions OnTimeout(Step step, std::uint64_t height, std::uint32_t round);
  Actions OnBlockBuilt(std::uint64_t height, std::uint32_t round, const Hash256& block);
  // A decided block learnt from sync; the driver verified the certificate
  // (VerifyCertificate) and the block. Decides height() if it is the height.
  Actions OnCommitCertificate(std::uint64_t height, std::uint32_t round, const Hash256& block);

  const SafetyState& safety() const { return m_s; }
  std::uint64_t height() const { return m_s.height; }
  std::uint32_t round() const { return m_s.round; }
  Step step() const { return m_s.step; }
  const ValidatorSet& validators() const { return m_set; }
  // What to send peers again until this height is decided (a lost message
  // is not lost for good): our own proposals and votes of every round; and
  // everyone's of the current round, of the round whose polka backs our
  // valid block (a re-proposal is prevoted only by who has seen that polka)
  // and of any round holding a quorum of precommits for one block.
  struct Resend {
    std::vector<Proposal> proposals;
    std::vector<Vote> votes;
  };
  Resend ToResend() const;

 private:
  // Votes of one round and type. A validator's first vote counts towards
  // "a quorum of any votes"; for "a quorum for block B" every validator that
  // signed a vote for B counts, even one that also signed another vote.
  // That keeps Tendermint's quorum intersection (two quorums for different
  // blocks would need f+1 equivocators) while no equivocator can hide a
  // polka from us by reaching us first with another vote. Conflicting votes
  // are kept only for nil and for blocks proposed at this height, so each
  // validator holds at most 2 + (proposals) slots per round and type.
  struct Tally {
    std::map<std::uint32_t, Vote> first;
    std::map<std::optional<Hash256>, std::map<std::uint32_t, Vote>> for_block;
    std::size_t Count(const std::optional<Hash256>& b) const;
  };
  struct RoundState {
    std::optional<Proposal> proposal;
    Tally prevotes;
    Tally precommits;
    bool prevote_timeout_set = false;    // line 34: first time 2f+1 prevotes
    bool precommit_timeout_set = false;  // line 47: first time 2f+1 precommits
    bool polka_seen = false;             // line 36: first time for the proposal
  };

  RoundState& At(std::uint32_t round) { return m_rounds[round]; }
  bool Valid(const Hash256& block) const;
  void StartRound(std::uint32_t round, Actions& out);
  void Process(Actions& out);
  bool ProcessOnce(Actions& out);
  void CastVote(VoteType type, const std::optional<Hash256>& block, Actions& out);
  void Decide(std::uint32_t round, const Hash256& block, std::vector<Vote> precommits, Actions& out);
  void AddVote(const Vote& v, Actions& out);
  void NoteRound(std::uint32_t validator, std::uint32_t round);
  void Schedule(Step step, Actions& out);

  ValidatorSet m_set;
  std::optional<std::uint32_t> m_self;
  Timeouts m_timeouts;
  SafetyState m_s;
  std::map<std::uint32_t, RoundState> m_rounds;       // this height only
  std::map<Hash256, bool> m_validity;                 // blocks proposed at this height
  std::vector<std::optional<std::uint32_t>> m_highest_round;  // per validator, this height
  std::set<std::tuple<std::uint32_t, std::uint32_t, VoteType>> m_evidence_sent;  // (validator, round, type)
  std::vector<Vote> m_future;                         // votes for height + 1
  std::set<std::tuple<std::uint32_t, std::uint32_t, VoteType>> m_future_keys;  // (validator, round, type)
  bool m_proposed = false;                            // this round
};

}  // namespace vt::consensus
