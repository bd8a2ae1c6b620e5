#include "contract_vm/evidence.h"

#include <algorithm>

#include "contract_vm/vm.h"

namespace vt::vm {
namespace {

constexpr std::uint8_t kSlashTag = 's';
constexpr std::uint8_t kSummaryTag = 't';
constexpr std::uint8_t kSequenceTag = 'n';

Result<std::array<std::uint8_t, 32>> GetKey(Reader& r) {
  VT_ASSIGN_OR_RETURN(ByteSpan view, r.GetFixed(32));
  std::array<std::uint8_t, 32> out{};
  std::copy(view.begin(), view.end(), out.begin());
  return out;
}

Bytes ValidatorKey(std::uint8_t tag, const std::array<std::uint8_t, 32>& validator) {
  Bytes rest{tag};
  rest.insert(rest.end(), validator.begin(), validator.end());
  return ContractKey(kBondContract, rest);
}

Bytes SlashPrefix(const std::array<std::uint8_t, 32>& validator) { return ValidatorKey(kSlashTag, validator); }

// u64be height ‖ u32be round ‖ u8 kind: the offence key's tail, and what
// the recording-order index stores.
Bytes OffenceTail(const Offence& o) {
  Writer w;
  w.PutU64(o.height);
  w.PutU32(o.round);
  w.PutU8(o.kind);
  return Bytes(w.bytes().begin(), w.bytes().end());
}

// "c/" ‖ ffff ‖ "n" ‖ validator ‖ u64be index: the index-th offence recorded.
Bytes SequenceKey(const std::array<std::uint8_t, 32>& validator, std::uint64_t index) {
  Bytes key = ValidatorKey(kSequenceTag, validator);
  Writer w;
  w.PutU64(index);
  key.insert(key.end(), w.bytes().begin(), w.bytes().end());
  return key;
}

}  // namespace

void Encode(Writer& w, const Bond& b) {
  w.PutFixed(b.validator);
  w.PutU64(b.amount);
}
Result<Bond> Decode(Reader& r, DecodeAs<Bond>) {
  Bond b;
  VT_ASSIGN_OR_RETURN(b.validator, GetKey(r));
  VT_ASSIGN_OR_RETURN(b.amount, r.GetU64());
  return b;
}

void Encode(Writer& w, const SlashRecord& s) {
  w.PutU64(s.block_height);
  w.PutU64(s.slashed);
  w.PutU64(s.reward);
}
Result<SlashRecord> Decode(Reader& r, DecodeAs<SlashRecord>) {
  SlashRecord s;
  VT_ASSIGN_OR_RETURN(s.block_height, r.GetU64());
  VT_ASSIGN_OR_RETURN(s.slashed, r.GetU64());
  VT_ASSIGN_OR_RETURN(s.reward, r.GetU64());
  return s;
}

Bytes BondKey(const std::array<std::uint8_t, 32>& validator) { return EscrowKey(kBondContract, validator); }

// "c/" ‖ ffff ‖ "s" ‖ validator ‖ u64 height ‖ u32 round ‖ u8 kind (big-endian
// fixed widths: a validator's records sort by height, round, kind).
Bytes OffenceKey(const Offence& o) {
  Bytes key = SlashPrefix(o.validator);
  const Bytes tail = OffenceTail(o);
  key.insert(key.end(), tail.begin(), tail.end());
  return key;
}

void Encode(Writer& w, const SlashSummary& s) {
  w.PutU64(s.offences);
  w.PutU64(s.slashed);
}
Result<SlashSummary> Decode(Reader& r, DecodeAs<SlashSummary>) {
  SlashSummary s;
  VT_ASSIGN_OR_RETURN(s.offences, r.GetU64());
  VT_ASSIGN_OR_RETURN(s.slashed, r.GetU64());
  return s;
}

Result<SlashSummary> ReadSlashSummary(const StateStore& state, const std::array<std::uint8_t, 32>& validator) noexcept {
  VT_ASSIGN_OR_RETURN(std::optional<Bytes> v, state.Get(ValidatorKey(kSummaryTag, validator)));
  if (!v) return SlashSummary{};
  auto s = DecodeExact<SlashSummary>(*v);
  if (!s.ok()) return Status::Error("state-corrupt", "slash summary");
  return *s;
}

Status RecordSlash(StateOverlay& state, const Offence& o, const SlashRecord& rec) noexcept {
  VT_ASSIGN_OR_RETURN(SlashSummary summary, ReadSlashSummary(state, o.validator));
  state.Put(OffenceKey(o), EncodeToBytes(rec));
  state.Put(SequenceKey(o.validator, summary.offences), OffenceTail(o));
  summary.offences += 1;  // at most 32 per block: never wraps
  VT_ASSIGN_OR_RETURN(summary.slashed, CheckedAdd(summary.slashed, rec.slashed));
  state.Put(ValidatorKey(kSummaryTag, o.validator), EncodeToBytes(summary));
  return Status::Ok();
}

Result<std::vector<std::pair<Offence, SlashRecord>>> LatestSlashes(const StateStore& state,
                                                                   const std::array<std::uint8_t, 32>& validator,
                                                                   std::size_t max) noexcept {
  VT_ASSIGN_OR_RETURN(const SlashSummary summary, ReadSlashSummary(state, validator));
  std::vector<std::pair<Offence, SlashRecord>> out;
  const std::uint64_t first = summary.offences - std::min<std::uint64_t>(summary.offences, max);
  for (std::uint64_t i = first; i < summary.offences; ++i) {
    VT_ASSIGN_OR_RETURN(std::optional<Bytes> tail, state.Get(SequenceKey(validator, i)));
    if (!tail) return Status::Error("state-corrupt", "slash index");
    Reader r(*tail);
    Offence o;
    o.validator = validator;
    auto h = r.GetU64();
    auto round = h.ok() ? r.GetU32() : Result<std::uint32_t>(h.status());
    auto kind = round.ok() ? r.GetU8() : Result<std::uint8_t>(round.status());
    if (!kind.ok() || !r.Finish().ok()) return Status::Error("state-corrupt", "slash index");
    o.height = *h;
    o.round = *round;
    o.kind = *kind;
    VT_ASSIGN_OR_RETURN(const std::optional<SlashRecord> rec, ReadSlash(state, o));
    if (!rec) return Status::Error("state-corrupt", "slash index names no record");
    out.emplace_back(o, *rec);
  }
  return out;
}

Result<Amount> ReadBond(const StateStore& state, const std::array<std::uint8_t, 32>& validator) noexcept {
  VT_ASSIGN_OR_RETURN(std::optional<Bytes> v, state.Get(BondKey(validator)));
  if (!v) return Amount{0};
  Reader r(*v);
  auto amount = r.GetU64();
  if (!amount.ok() || !r.Finish().ok()) return Status::Error("state-corrupt", "bond");
  return *amount;
}

Result<std::optional<SlashRecord>> ReadSlash(const StateStore& state, const Offence& o) noexcept {
  VT_ASSIGN_OR_RETURN(std::optional<Bytes> v, state.Get(OffenceKey(o)));
  if (!v) return std::optional<SlashRecord>{};
  auto rec = DecodeExact<SlashRecord>(*v);
  if (!rec.ok()) return Status::Error("state-corrupt", "slash record");
  return std::optional<SlashRecord>{*rec};
}

Amount SlashAmount(Amount bond) { return bond / kSlashDivisor; }
Amount ReporterReward(Amount slashed) { return slashed / kReporterShareDivisor; }

}  // namespace vt::vm
