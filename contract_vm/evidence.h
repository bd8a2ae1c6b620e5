#pragma once
// Evidence of validator misbehaviour carried by blocks, and the bonds it
// slashes (docs/node.md "Evidence and slashing"; docs/formats.md "State").
//
// The VM does not know what evidence is: a block carries opaque items
// (Block::evidence) and the chain hands the VM an EvidenceRules that turns
// one item into the Offence it proves (the node's rules decode a
// consensus::DuplicateVote and check it with consensus::VerifyEvidence
// against the genesis validator set). What the VM does with an offence is
// the same for every kind, and is consensus:
//
// * the offence is at most kEvidenceMaxAge blocks older than the block and
//   not from a later height ("evidence-too-old", "evidence-from-future");
// * it was not recorded before, in this block or an earlier one
//   ("evidence-duplicate"): one slash per (validator, height, round, kind);
// * the validator's bond loses bond / kSlashDivisor (rounded down); the
//   block's proposer, who reported it, is credited
//   slash / kReporterShareDivisor and the rest is burned;
// * the offence is recorded in the state with what it cost (SlashRecord),
//   so the state root covers every slash and replays are refused.
//
// An item its rules refuse makes the block invalid with their reason; a
// proposer includes only items that apply (Vm::ProduceBlock).

#include <array>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "common/bytes.h"
#include "common/encoding.h"
#include "common/result.h"
#include "contract_vm/amount.h"
#include "contract_vm/state.h"

namespace vt::vm {

// Bonds and slash records live under this reserved id ("e/" ‖ id ‖ key for
// the bond, "c/" ‖ id ‖ "s" ‖ offence for the records); no native contract
// may be registered with it.
inline constexpr std::uint16_t kBondContract = 0xffff;
// At most one bond per validator (consensus::kMaxValidators).
inline constexpr std::size_t kMaxBonds = 1024;
// How far back evidence may reach: long enough for a proposer turn to come
// round several times with a full evidence list, short enough that a
// validator's history is not a liability forever.
inline constexpr std::uint64_t kEvidenceMaxAge = 1000;
// A double-sign costs a tenth of what is still bonded: every offence hurts,
// and an equivocator cannot lose more than its bond however often it signs.
inline constexpr Amount kSlashDivisor = 10;
// Half of the slash rewards the proposer that included the evidence (so
// reporting pays); the other half is burned, so that a validator reporting
// itself, or a colluding proposer, still loses half of every slash.
inline constexpr Amount kReporterShareDivisor = 2;

// One validator's bonded stake at genesis (strictly increasing keys).
struct Bond {
  std::array<std::uint8_t, 32> validator{};  // x-only public key
  Amount amount = 0;
  bool operator==(const Bond&) const = default;
};

// What an evidence item proves: `validator` signed twice for one
// (height, round, kind). `kind` is the rules' own (for votes: the vote type).
struct Offence {
  std::array<std::uint8_t, 32> validator{};
  std::uint64_t height = 0;
  std::uint32_t round = 0;
  std::uint8_t kind = 0;
  bool operator==(const Offence&) const = default;
};

class EvidenceRules {
 public:
  virtual ~EvidenceRules() = default;
  // Decodes and verifies one item (stateless: signatures against the
  // validator set). Invalid with the reason it is not evidence.
  virtual Result<Offence> Check(ByteSpan item) const noexcept = 0;
};

// What one recorded offence cost its validator.
struct SlashRecord {
  std::uint64_t block_height = 0;  // the block that recorded it
  Amount slashed = 0;              // taken from the bond
  Amount reward = 0;               // of that, credited to the proposer (the rest burned)
  bool operator==(const SlashRecord&) const = default;
};

// Per validator, what every recorded offence cost it, kept as offences are
// recorded so that views (chain_status) read one entry, not every record.
struct SlashSummary {
  std::uint64_t offences = 0;  // records so far (also the next index)
  Amount slashed = 0;          // their total
  bool operator==(const SlashSummary&) const = default;
};

void Encode(Writer& w, const Bond& b);
Result<Bond> Decode(Reader& r, DecodeAs<Bond>);
void Encode(Writer& w, const SlashRecord& s);
void Encode(Writer& w, const SlashSummary& s);
Result<SlashSummary> Decode(Reader& r, DecodeAs<SlashSummary>);
Result<SlashRecord> Decode(Reader& r, DecodeAs<SlashRecord>);

Bytes BondKey(const std::array<std::uint8_t, 32>& validator);
Bytes OffenceKey(const Offence& o);
// The validator's bond now (0 when none or all slashed away).
Result<Amount> ReadBond(const StateStore& state, const std::array<std::uint8_t, 32>& validator) noexcept;
Result<std::optional<SlashRecord>> ReadSlash(const StateStore& state, const Offence& o) noexcept;
Result<SlashSummary> ReadSlashSummary(const StateStore& state, const std::array<std::uint8_t, 32>& validator) noexcept;
// Writes the offence's record, its place in the validator's recording
// order and the validator's summary (docs/formats.md "State").
Status RecordSlash(StateOverlay& state, const Offence& o, const SlashRecord& rec) noexcept;
// The last `max` offences recorded against `validator`, in recording order:
// `max` + 1 reads however many there are.
Result<std::vector<std::pair<Offence, SlashRecord>>> LatestSlashes(const StateStore& state,
                                                                   const std::array<std::uint8_t, 32>& validator,
                                                                   std::size_t max) noexcept;

// What slashing `bond` once takes, and the proposer's share of it.
Amount SlashAmount(Amount bond);
Amount ReporterReward(Amount slashed);

}  // namespace vt::vm
