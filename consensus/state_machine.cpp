#include "consensus/state_machine.h"

#include <algorithm>
#include <functional>

namespace vt::consensus {

std::uint64_t Timeouts::For(Step step, std::uint32_t round) const {
  const std::uint64_t base = step == Step::kPropose ? propose_ms : step == Step::kPrevote ? prevote_ms : precommit_ms;
  return base + static_cast<std::uint64_t>(round) * delta_ms;
}

void Encode(Writer& w, const SafetyState& s) {
  const auto put_round = [](Writer& ww, std::uint32_t r) { ww.PutU32(r); };
  w.PutU64(s.height);
  w.PutU32(s.round);
  w.PutU8(static_cast<std::uint8_t>(s.step));
  w.PutOptional(s.locked_round, put_round);
  w.PutHash(s.locked_block);
  w.PutOptional(s.valid_round, put_round);
  w.PutHash(s.valid_block);
}

Result<SafetyState> Decode(Reader& r, DecodeAs<SafetyState>) {
  const auto get_round = [](Reader& rr) { return rr.GetU32(); };
  SafetyState s;
  VT_ASSIGN_OR_RETURN(s.height, r.GetU64());
  VT_ASSIGN_OR_RETURN(s.round, r.GetU32());
  VT_ASSIGN_OR_RETURN(const std::uint8_t step, r.GetU8());
  if (step > static_cast<std::uint8_t>(Step::kPrecommit)) return Status::Invalid("enc-unknown-enum", "step");
  s.step = static_cast<Step>(step);
  VT_ASSIGN_OR_RETURN(s.locked_round, r.GetOptional<std::uint32_t>(get_round));
  VT_ASSIGN_OR_RETURN(s.locked_block, r.GetHash());
  VT_ASSIGN_OR_RETURN(s.valid_round, r.GetOptional<std::uint32_t>(get_round));
  VT_ASSIGN_OR_RETURN(s.valid_block, r.GetHash());
  return s;
}

std::size_t Machine::Tally::Count(const std::optional<Hash256>& b) const {
  const auto it = for_block.find(b);
  return it == for_block.end() ? 0 : it->second.size();
}

Machine::Machine(ValidatorSet set, std::optional<std::uint32_t> self, Timeouts timeouts, SafetyState start)
    : m_set(std::move(set)), m_self(self), m_timeouts(timeouts), m_s(start), m_highest_round(m_set.size()) {}

Actions Machine::Start() {
  Actions out;
  if (m_s.step == Step::kPropose) {
    StartRound(m_s.round, out);
  } else {
    // Restarted after voting in this round: never vote again in a step it
    // reached; let the step's timeout move it on.
    Schedule(m_s.step, out);
  }
  Process(out);
  return out;
}

bool Machine::Valid(const Hash256& block) const {
  const auto it = m_validity.find(block);
  return it != m_validity.end() && it->second;
}

void Machine::Schedule(Step step, Actions& out) {
  out.push_back(action::ScheduleTimeout{step, m_s.height, m_s.round, m_timeouts.For(step, m_s.round)});
}

void Machine::StartRound(std::uint32_t round, Actions& out) {
  m_s.round = round;
  m_s.step = Step::kPropose;
  // After a restart our proposal of this round may have been fed back
  // already: never propose a second block for one round.
  const auto it = m_rounds.find(round);
  m_proposed = it != m_rounds.end() && it->second.proposal && it->second.proposal->proposer == m_self;
  if (m_self && m_set.Proposer(m_s.height, round) == *m_self && !m_proposed) {
    if (m_s.valid_round) {
      // Re-propose the block that had a polka (it may already be decided by others).
      m_proposed = true;
      out.push_back(action::BroadcastProposal{
          Proposal{m_s.height, round, m_s.valid_round, m_s.valid_block, *m_self, {}}});
    } else {
      out.push_back(action::BuildBlock{m_s.height, round});
    }
  }
  Schedule(Step::kPropose, out);
}

void Machine::CastVote(VoteType type, const std::optional<Hash256>& block, Actions& out) {
  m_s.step = type == VoteType::kPrevote ? Step::kPrevote : Step::kPrecommit;
  if (m_self) out.push_back(action::BroadcastVote{Vote{type, m_s.height, m_s.round, block, *m_self, {}}});
}

void Machine::NoteRound(std::uint32_t validator, std::uint32_t round) {
  auto& r = m_highest_round[validator];
  if (!r || *r < round) r = round;
}

void Machine::AddVote(const Vote& v, Actions& out) {
  if (v.validator >= m_set.size()) return;
  NoteRound(v.validator, v.round);
  if (v.round > m_s.round + kRoundWindow) return;  // counted for the round skip only
  RoundState& st = At(v.round);
  Tally& t = v.type == VoteType::kPrevote ? st.prevotes : st.precommits;
  const auto [it, inserted] = t.first.emplace(v.validator, v);
  if (inserted) {
    t.for_block[v.block].emplace(v.validator, v);
    return;
  }
  if (it->second.block == v.block) return;  // a repeat
  // Equivocation: reported once per validator, round and type; the vote
  // still counts for its block if that block can matter (see Tally).
  if (m_evidence_sent.emplace(v.validator, v.round, v.type).second) out.push_back(action::Evidence{it->second, v});
  if (!v.block || m_validity.count(*v.block)) t.for_block[v.block].emplace(v.validator, v);
}

Actions Machine::OnVote(const Vote& v) {
  Actions out;
  if (v.height == m_s.height + 1) {
    // Early votes for the next height (others decided first): kept, one per
    // validator, round and type, in the first rounds only.
    if (v.validator < m_set.size() && v.round <= kRoundWindow &&
        m_future_keys.emplace(v.validator, v.round, v.type).second)
      m_future.push_back(v);
    return out;
  }
  if (v.height != m_s.height) return out;
  AddVote(v, out);
  Process(out);
  return out;
}

Actions Machine::OnProposal(const Proposal& p, bool valid) {
  Actions out;
  if (p.height != m_s.height || p.proposer >= m_set.size() || p.proposer != m_set.Proposer(p.height, p.round))
    return out;
  if (p.valid_round && *p.valid_round >= p.round) return out;
  NoteRound(p.proposer, p.round);
  if (p.round <= m_s.round + kRoundWindow) {
    RoundState& st = At(p.round);
    if (!st.proposal) {  // a second, different proposal of that round is ignored
      st.proposal = p;
      const auto [it, inserted] = m_validity.emplace(p.block, valid);
      if (!inserted) it->second = it->second || valid;
    }
  }
  Process(out);
  return out;
}

Actions Machine::OnTimeout(Step step, std::uint64_t height, std::uint32_t round) {
  Actions out;
  if (height != m_s.height || round != m_s.round) return out;
  if (step == Step::kPropose && m_s.step == Step::kPropose) {
    CastVote(VoteType::kPrevote, std::nullopt, out);  // line 57
  } else if (step == Step::kPrevote && m_s.step == Step::kPrevote) {
    CastVote(VoteType::kPrecommit, std::nullopt, out);  // line 61
  } else if (step == Step::kPrecommit) {
    StartRound(round + 1, out);  // line 65
  }
  Process(out);
  return out;
}

Actions Machine::OnBlockBuilt(std::uint64_t height, std::uint32_t round, const Hash256& block) {
  Actions out;
  if (height != m_s.height || round != m_s.round || m_s.step != Step::kPropose || m_proposed || !m_self ||
      m_set.Proposer(height, round) != *m_self)
    return out;
  m_proposed = true;
  out.push_back(action::BroadcastProposal{Proposal{height, round, std::nullopt, block, *m_self, {}}});
  return out;
}

Actions Machine::OnCommitCertificate(std::uint64_t height, std::uint32_t round, const Hash256& block) {
  Actions out;
  if (height != m_s.height) return out;
  Decide(round, block, {}, out);
  Process(out);
  return out;
}

void Machine::Decide(std::uint32_t round, const Hash256& block, std::vector<Vote> precommits, Actions& out) {
  out.push_back(action::Commit{m_s.height, round, block, std::move(precommits)});
  m_s = SafetyState{m_s.height + 1, 0, Step::kPropose, std::nullopt, {}, std::nullopt, {}};
  m_rounds.clear();
  m_validity.clear();
  std::fill(m_highest_round.begin(), m_highest_round.end(), std::nullopt);
  m_evidence_sent.clear();
  StartRound(0, out);
  std::vector<Vote> early;
  early.swap(m_future);
  m_future_keys.clear();
  for (const Vote& v : early)
    if (v.height == m_s.height) AddVote(v, out);
}

void Machine::Process(Actions& out) {
  while (ProcessOnce(out)) {
  }
}

// One rule of Algorithm 1 that applies now, if any (line numbers of the
// paper). Every rule that fires changes the state, so Process ends.
bool Machine::ProcessOnce(Actions& out) {
  const std::size_t q = m_set.quorum();
  // Line 49: a quorum of precommits for a block we know to be valid, in any round.
  for (auto& [r, st] : m_rounds) {
    for (const auto& [block, voters] : st.precommits.for_block) {
      if (!block || voters.size() < q || !Valid(*block)) continue;
      // Copies: Decide clears the round states these refer to.
      const std::uint32_t round = r;
      const Hash256 decided = *block;
      std::vector<Vote> votes;
      for (const auto& [_, v] : voters) votes.push_back(v);
      Decide(round, decided, std::move(votes), out);
      return true;
    }
  }
  // Line 55: f+1 validators are in a higher round: join the highest round
  // that f+1 of them have reached (at least one of them is honest).
  {
    std::vector<std::uint32_t> ahead;
    for (const auto& r : m_highest_round)
      if (r && *r > m_s.round) ahead.push_back(*r);
    if (ahead.size() >= m_set.faulty() + 1) {
      std::sort(ahead.begin(), ahead.end(), std::greater<>());
      StartRound(ahead[m_set.faulty()], out);
      return true;
    }
  }
  RoundState& rs = At(m_s.round);
  if (rs.proposal) {
    const Proposal& p = *rs.proposal;
    if (m_s.step == Step::kPropose) {
      if (!p.valid_round) {  // line 22
        const bool ok = Valid(p.block) && (!m_s.locked_round || m_s.locked_block == p.block);
        CastVote(VoteType::kPrevote, ok ? std::optional<Hash256>(p.block) : std::nullopt, out);
        return true;
      }
      const std::uint32_t vr = *p.valid_round;  // line 28: a re-proposal backed by a polka at vr
      if (At(vr).prevotes.Count(p.block) >= q) {
        const bool ok = Valid(p.block) &&
                        (!m_s.locked_round || *m_s.locked_round <= vr || m_s.locked_block == p.block);
        CastVote(VoteType::kPrevote, ok ? std::optional<Hash256>(p.block) : std::nullopt, out);
        return true;
      }
    }
    // Line 36: a polka for the proposal: lock on it (if still prevoting) and remember it as valid.
    if (m_s.step != Step::kPropose && !rs.polka_seen && Valid(p.block) && rs.prevotes.Count(p.block) >= q) {
      rs.polka_seen = true;
      const Hash256 block = p.block;
      if (m_s.step == Step::kPrevote) {
        m_s.locked_round = m_s.round;
        m_s.locked_block = block;
        CastVote(VoteType::kPrecommit, block, out);
      }
      m_s.valid_round = m_s.round;
      m_s.valid_block = block;
      return true;
    }
  }
  if (m_s.step == Step::kPrevote) {
    if (!rs.prevote_timeout_set && rs.prevotes.first.size() >= q) {  // line 34
      rs.prevote_timeout_set = true;
      Schedule(Step::kPrevote, out);
      return true;
    }
    if (rs.prevotes.Count(std::nullopt) >= q) {  // line 44
      CastVote(VoteType::kPrecommit, std::nullopt, out);
      return true;
    }
  }
  // Not in the paper: a quorum of nil precommits means no block can be
  // decided in this round, so waiting out the precommit timeout gains
  // nothing. Moving on early is safe (safety never rests on timeouts).
  if (rs.precommits.Count(std::nullopt) >= q) {
    StartRound(m_s.round + 1, out);
    return true;
  }
  if (!rs.precommit_timeout_set && rs.precommits.first.size() >= q) {  // line 47
    rs.precommit_timeout_set = true;
    Schedule(Step::kPrecommit, out);
    return true;
  }
  return false;
}

Machine::Resend Machine::ToResend() const {
  Resend out;
  const std::size_t q = m_set.quorum();
  for (const auto& [r, st] : m_rounds) {
    bool decisive = false;
    for (const auto& [block, voters] : st.precommits.for_block) decisive = decisive || (block && voters.size() >= q);
    const bool all = r == m_s.round || r == m_s.valid_round || decisive;
    if (st.proposal && (all || st.proposal->proposer == m_self)) out.proposals.push_back(*st.proposal);
    for (const Tally* t : {&st.prevotes, &st.precommits})
      for (const auto& [_, voters] : t->for_block)
        for (const auto& [who, v] : voters)
          if (all || who == m_self) out.votes.push_back(v);
  }
  return out;
}

}  // namespace vt::consensus
