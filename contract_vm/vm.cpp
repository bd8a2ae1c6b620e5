#include "contract_vm/vm.h"

#include <algorithm>
#include <exception>
#include <new>
#include <string>
#include <utility>

#include "common/limits.h"
#include "contract_vm/state_root.h"
#include "crypto/sha256.h"
#include "crypto/tags.h"

namespace vt::vm {
namespace {

constexpr std::string_view kAccountPrefix = "a/";
constexpr std::string_view kEscrowPrefix = "e/";
constexpr std::string_view kContractPrefix = "c/";
constexpr std::string_view kParamsKey = "m/params";
constexpr std::string_view kSupplyKey = "m/supply";
constexpr std::string_view kBurnedKey = "m/burned";

Bytes Concat(std::string_view prefix, ByteSpan rest) {
  Bytes out(prefix.begin(), prefix.end());
  out.insert(out.end(), rest.begin(), rest.end());
  return out;
}

Bytes PrefixedKey(std::string_view prefix, std::uint16_t contract, ByteSpan rest) {
  Bytes out(prefix.begin(), prefix.end());
  out.push_back(static_cast<std::uint8_t>(contract >> 8));  // big-endian: contracts sort by id
  out.push_back(static_cast<std::uint8_t>(contract));
  out.insert(out.end(), rest.begin(), rest.end());
  return out;
}

Result<Amount> ReadU64(const StateStore& state, std::string_view key) {
  VT_ASSIGN_OR_RETURN(std::optional<Bytes> v, state.Get(AsBytes(key)));
  if (!v) return Amount{0};
  Reader r(*v);
  VT_ASSIGN_OR_RETURN(Amount a, r.GetU64());
  VT_TRY(r.Finish());
  return a;
}

Result<Amount> ReadU64(const StateStore& state, ByteSpan key) {
  VT_ASSIGN_OR_RETURN(std::optional<Bytes> v, state.Get(key));
  if (!v) return Amount{0};
  Reader r(*v);
  VT_ASSIGN_OR_RETURN(Amount a, r.GetU64());
  VT_TRY(r.Finish());
  return a;
}

Bytes U64Bytes(std::uint64_t v) {
  Writer w;
  w.PutU64(v);
  return std::move(w).Take();
}

void WriteAccount(StateOverlay& state, const crypto::Address& address, const Account& account) {
  state.Put(AccountKey(address), EncodeToBytes(account));
}

// Stored values are ours: a decode failure means a corrupted store, which is
// a local error, not the transaction's fault.
Status Corrupt(const Status& s, std::string_view what) {
  return Status::Error("state-corrupt", std::string(what) + ": " + s.ToString());
}

Status Credit(StateOverlay& state, const crypto::Address& to, Amount amount) {
  auto account = ReadAccount(state, to);
  if (!account.ok()) return account.status();
  auto balance = CheckedAdd(account->balance, amount);
  if (!balance.ok()) return Status::Invalid(reasons::kBalanceOverflow, "recipient " + to.Hex());
  account->balance = *balance;
  WriteAccount(state, to, *account);
  return Status::Ok();
}

// The one boundary between the VM and contract code: nothing a contract
// throws gets past it. An exception fails the call like any error (the fee
// is charged, the call's writes are dropped). Sizes are bounded and charged
// before any allocation (common/limits.h), so on a healthy node this is a
// safety net, never a verdict.
Status CallContract(NativeContract& contract, CallContext& ctx, std::uint16_t method, ByteSpan args) noexcept {
  try {
    return contract.Call(ctx, method, args);
  } catch (const std::bad_alloc&) {
    return Status::Error(reasons::kVmOutOfMemory, "allocation failed inside the call");
  } catch (const std::exception& e) {
    return Status::Error(reasons::kVmException, e.what());
  } catch (...) {
    return Status::Error(reasons::kVmException, "unknown exception");
  }
}

}  // namespace

bool IsLocalFailure(const Status& s) {
  if (!s.is_error()) return false;
  const std::string& r = s.reason();
  return r.rfind("db-", 0) == 0 || r.rfind("state-", 0) == 0;
}

// ---- encodings -------------------------------------------------------------------

void Encode(Writer& w, const Account& a) {
  w.PutU64(a.balance);
  w.PutU64(a.nonce);
}
Result<Account> Decode(Reader& r, DecodeAs<Account>) {
  Account a;
  VT_ASSIGN_OR_RETURN(a.balance, r.GetU64());
  VT_ASSIGN_OR_RETURN(a.nonce, r.GetU64());
  return a;
}

void Encode(Writer& w, const ChainParams& p) {
  w.PutU64(p.chain_id);
  w.PutU64(p.block_gas_limit);
  w.PutU64(p.max_tx_bytes);
  w.PutU64(p.min_gas_price);
}
Result<ChainParams> Decode(Reader& r, DecodeAs<ChainParams>) {
  ChainParams p;
  VT_ASSIGN_OR_RETURN(p.chain_id, r.GetU64());
  VT_ASSIGN_OR_RETURN(p.block_gas_limit, r.GetU64());
  VT_ASSIGN_OR_RETURN(p.max_tx_bytes, r.GetU64());
  VT_ASSIGN_OR_RETURN(p.min_gas_price, r.GetU64());
  return p;
}

void Encode(Writer& w, const Genesis& g) {
  Encode(w, g.params);
  w.PutU64(g.time);
  w.PutVector(g.allocations, [](Writer& out, const Allocation& a) {
    crypto::Encode(out, a.address);
    out.PutU64(a.amount);
  });
  w.PutVector(g.bonds);
}
Result<Genesis> Decode(Reader& r, DecodeAs<Genesis>) {
  Genesis g;
  VT_ASSIGN_OR_RETURN(g.params, Decode(r, DecodeAs<ChainParams>{}));
  VT_ASSIGN_OR_RETURN(g.time, r.GetU64());
  VT_ASSIGN_OR_RETURN(g.allocations, r.GetVector<Allocation>([](Reader& in) -> Result<Allocation> {
    Allocation a;
    VT_ASSIGN_OR_RETURN(a.address, crypto::Decode(in, DecodeAs<crypto::Address>{}));
    VT_ASSIGN_OR_RETURN(a.amount, in.GetU64());
    return a;
  }));
  VT_ASSIGN_OR_RETURN(g.bonds, r.GetVector<Bond>(kMaxBonds));
  return g;
}

Hash256 GenesisHash(const Genesis& g) { return crypto::TaggedHash(crypto::tags::kGenesis, EncodeToBytes(g)); }

Bytes AccountKey(const crypto::Address& address) { return Concat(kAccountPrefix, address.bytes); }
Bytes EscrowKey(std::uint16_t contract, ByteSpan name) { return PrefixedKey(kEscrowPrefix, contract, name); }
Bytes ContractKey(std::uint16_t contract, ByteSpan key) { return PrefixedKey(kContractPrefix, contract, key); }

Result<Account> ReadAccount(const StateStore& state, const crypto::Address& address) noexcept {
  VT_ASSIGN_OR_RETURN(std::optional<Bytes> v, state.Get(AccountKey(address)));
  if (!v) return Account{};
  auto a = DecodeExact<Account>(*v);
  if (!a.ok()) return Corrupt(a.status(), "account");
  return a;
}

Result<ChainParams> ReadParams(const StateStore& state) noexcept {
  VT_ASSIGN_OR_RETURN(std::optional<Bytes> v, state.Get(AsBytes(kParamsKey)));
  if (!v) return Status::Error("state-no-genesis", "the state has no chain parameters");
  auto p = DecodeExact<ChainParams>(*v);
  if (!p.ok()) return Corrupt(p.status(), "params");
  return p;
}

Result<SupplyReport> AuditSupply(const StateStore& state) noexcept {
  SupplyReport report;
  Status failure;
  VT_TRY(state.Scan(AsBytes(kAccountPrefix), [&](ByteSpan, ByteSpan value) {
    auto a = DecodeExact<Account>(value);
    if (!a.ok()) {
      failure = Corrupt(a.status(), "account");
      return false;
    }
    auto sum = CheckedAdd(report.balances, a->balance);
    if (!sum.ok()) {
      failure = sum.status();
      return false;
    }
    report.balances = *sum;
    return true;
  }));
  VT_TRY(failure);
  VT_TRY(state.Scan(AsBytes(kEscrowPrefix), [&](ByteSpan, ByteSpan value) {
    Reader r(value);
    auto amount = r.GetU64();
    if (!amount.ok() || !r.Finish().ok()) {
      failure = Status::Error("state-corrupt", "escrow");
      return false;
    }
    auto sum = CheckedAdd(report.escrows, *amount);
    if (!sum.ok()) {
      failure = sum.status();
      return false;
    }
    report.escrows = *sum;
    return true;
  }));
  VT_TRY(failure);
  VT_ASSIGN_OR_RETURN(report.burned, ReadU64(state, kBurnedKey));
  VT_ASSIGN_OR_RETURN(report.supply, ReadU64(state, kSupplyKey));
  VT_ASSIGN_OR_RETURN(Amount total, CheckedAdd(report.balances, report.escrows));
  VT_ASSIGN_OR_RETURN(total, CheckedAdd(total, report.burned));
  if (total != report.supply) {
    return Status::Invalid("supply-mismatch", "balances " + std::to_string(report.balances) + " + escrows " +
                                                  std::to_string(report.escrows) + " + burned " +
                                                  std::to_string(report.burned) + " != supply " +
                                                  std::to_string(report.supply));
  }
  return report;
}

// ---- CallContext -------------------------------------------------------------------

Result<std::optional<Bytes>> CallContext::Get(ByteSpan key) {
  VT_TRY(m_gas.Charge(kGas.state_read));
  return m_state.Get(ContractKey(m_contract, key));
}

Status CallContext::Put(ByteSpan key, ByteSpan value) {
  VT_TRY(m_gas.Charge(WriteGas(key.size() + value.size())));
  m_state.Put(ContractKey(m_contract, key), value);
  return Status::Ok();
}

Status CallContext::Delete(ByteSpan key) {
  VT_TRY(m_gas.Charge(kGas.state_write));
  m_state.Delete(ContractKey(m_contract, key));
  return Status::Ok();
}

Status CallContext::LockFromSender(ByteSpan escrow, Amount amount) {
  VT_TRY(m_gas.Charge(kEscrowMoveGas));
  VT_ASSIGN_OR_RETURN(Account account, ReadAccount(m_state, m_sender));
  auto left = CheckedSub(account.balance, amount);
  if (!left.ok()) {
    return Status::Invalid(reasons::kInsufficientFunds, "balance " + std::to_string(account.balance) +
                                                             " below " + std::to_string(amount));
  }
  const Bytes key = EscrowKey(m_contract, escrow);
  VT_ASSIGN_OR_RETURN(Amount held, ReadU64(m_state, key));
  VT_ASSIGN_OR_RETURN(Amount now, CheckedAdd(held, amount));
  account.balance = *left;
  WriteAccount(m_state, m_sender, account);
  m_state.Put(key, U64Bytes(now));
  return Status::Ok();
}

Status CallContext::Release(ByteSpan escrow, const crypto::Address& to, Amount amount) {
  VT_TRY(m_gas.Charge(kEscrowMoveGas));
  const Bytes key = EscrowKey(m_contract, escrow);
  VT_ASSIGN_OR_RETURN(Amount held, ReadU64(m_state, key));
  auto left = CheckedSub(held, amount);
  if (!left.ok()) return Status::Invalid("escrow-insufficient", "escrow holds " + std::to_string(held));
  VT_TRY(Credit(m_state, to, amount));
  if (*left == 0) {
    m_state.Delete(key);
  } else {
    m_state.Put(key, U64Bytes(*left));
  }
  return Status::Ok();
}

Status CallContext::Burn(ByteSpan escrow, Amount amount) {
  VT_TRY(m_gas.Charge(kEscrowMoveGas));
  const Bytes key = EscrowKey(m_contract, escrow);
  VT_ASSIGN_OR_RETURN(Amount held, ReadU64(m_state, key));
  auto left = CheckedSub(held, amount);
  if (!left.ok()) return Status::Invalid("escrow-insufficient", "escrow holds " + std::to_string(held));
  VT_ASSIGN_OR_RETURN(Amount burned, ReadU64(m_state, kBurnedKey));
  VT_ASSIGN_OR_RETURN(burned, CheckedAdd(burned, amount));
  m_state.Put(AsBytes(kBurnedKey), U64Bytes(burned));
  if (*left == 0) {
    m_state.Delete(key);
  } else {
    m_state.Put(key, U64Bytes(*left));
  }
  return Status::Ok();
}

Result<Amount> CallContext::EscrowBalance(ByteSpan escrow) {
  VT_TRY(m_gas.Charge(kGas.state_read));
  return ReadU64(m_state, EscrowKey(m_contract, escrow));
}

Status CallContext::Emit(std::string_view topic, ByteSpan data) {
  if (topic.size() > kMaxEventTopicBytes || data.size() > kMaxEventDataBytes || m_events.size() >= kMaxEventsPerTx)
    return Status::Invalid("vm-event-too-large");
  VT_TRY(m_gas.Charge(EventGas(data.size())));
  m_events.push_back(Event{m_contract, std::string(topic), Bytes(data.begin(), data.end())});
  return Status::Ok();
}

Status CallContext::ChargeHashing(std::size_t bytes) {
  return m_gas.Charge(HashGas(bytes));
}

Status CallContext::ChargeMerkle(std::size_t node_hashes) {
  return m_gas.Charge(MerkleGas(node_hashes));
}

Status CallContext::VerifySignature(ByteSpan pubkey, ByteSpan message, ByteSpan signature, bool* valid) {
  VT_TRY(m_gas.Charge(kGas.sig_verify));
  *valid = crypto::VerifyBytes(pubkey, message, signature);
  return Status::Ok();
}

Result<const Arbiter*> CallContext::arbiter() const {
  if (m_arbiter == nullptr) return Status::Invalid("vm-no-arbiter", "this chain has no arbitration precompile");
  return m_arbiter;
}

// ---- genesis ------------------------------------------------------------------------

Result<ChainTip> Vm::ApplyGenesis(StateStore& store, const Genesis& genesis) const noexcept {
  bool empty = true;
  VT_TRY(store.Scan({}, [&](ByteSpan, ByteSpan) {
    empty = false;
    return false;
  }));
  if (!empty) return Status::Invalid("genesis-not-empty", "the store already holds a state");
  const ChainParams& p = genesis.params;
  if (p.chain_id == 0 || p.block_gas_limit == 0 || p.max_tx_bytes == 0)
    return Status::Invalid("genesis-bad-params", "chain id, block gas limit and max tx bytes must be nonzero");
  if (p.max_tx_bytes > limits::kMaxTxBytes)
    return Status::Invalid("genesis-bad-params", "max tx bytes above " + std::to_string(limits::kMaxTxBytes) +
                                                     ", what one gossip frame carries");
  StateOverlay state(store);
  Amount supply = 0;
  for (std::size_t i = 0; i < genesis.allocations.size(); ++i) {
    const Allocation& a = genesis.allocations[i];
    if (i > 0 && !(genesis.allocations[i - 1].address < a.address))
      return Status::Invalid("genesis-unsorted", "allocations must have strictly increasing addresses");
    auto sum = CheckedAdd(supply, a.amount);
    if (!sum.ok()) return Status::Invalid("genesis-supply-overflow", "total supply above 2^64-1");
    supply = *sum;
    WriteAccount(state, a.address, Account{a.amount, 0});
  }
  for (std::size_t i = 0; i < genesis.bonds.size(); ++i) {
    const Bond& b = genesis.bonds[i];
    if (i > 0 && !(genesis.bonds[i - 1].validator < b.validator))
      return Status::Invalid("genesis-unsorted", "bonds must have strictly increasing validator keys");
    if (b.amount == 0) return Status::Invalid("genesis-bad-bond", "a bond must be positive");
    auto sum = CheckedAdd(supply, b.amount);
    if (!sum.ok()) return Status::Invalid("genesis-supply-overflow", "total supply above 2^64-1");
    supply = *sum;
    state.Put(BondKey(b.validator), U64Bytes(b.amount));
  }
  state.Put(AsBytes(kParamsKey), EncodeToBytes(p));
  state.Put(AsBytes(kSupplyKey), U64Bytes(supply));
  state.Put(AsBytes(kBurnedKey), U64Bytes(0));
  VT_TRY(store.Commit(state.batch()));
  return ChainTip{p.chain_id, 0, GenesisHash(genesis), genesis.time};
}

// ---- transactions ---------------------------------------------------------------------

Status Vm::CheckTransaction(const StateStore& state, const Transaction& tx) const noexcept {
  VT_ASSIGN_OR_RETURN(ChainParams params, ReadParams(state));
  StateOverlay scratch(state);
  BlockEnv env{params.chain_id, 0, 0, crypto::Address{}};
  std::uint64_t gas_used = 0;
  auto r = ExecuteTransaction(scratch, params, env, tx, &gas_used);
  return r.status();
}

Result<TxCost> CheckStateless(const ChainParams& params, const Transaction& tx, std::uint64_t block_gas_left) noexcept {
  // Cheapest first; none of them touches the state.
  if (tx.version != kTxVersion) return Status::Invalid(reasons::kBadVersion);
  if (tx.chain_id != params.chain_id)
    return Status::Invalid(reasons::kWrongChain, "chain id " + std::to_string(tx.chain_id) + ", expected " +
                                                     std::to_string(params.chain_id));
  const std::uint64_t size = EncodeTransaction(tx).size();
  if (size > params.max_tx_bytes) return Status::Invalid(reasons::kTooLarge, std::to_string(size) + " bytes");
  TxCost cost;
  cost.intrinsic_gas = IntrinsicGas(size);
  if (tx.gas_limit < cost.intrinsic_gas)
    return Status::Invalid(reasons::kGasTooLow, "needs at least " + std::to_string(cost.intrinsic_gas));
  if (tx.gas_limit > block_gas_left) return Status::Invalid(reasons::kGasOverBlock);
  if (tx.gas_price < params.min_gas_price) return Status::Invalid(reasons::kGasPriceTooLow);
  VT_ASSIGN_OR_RETURN(cost.sender, TxSenderAddress(tx));
  if (!VerifyTransactionSignature(tx)) return Status::Invalid(reasons::kBadSignature);
  auto max_fee = CheckedMul(tx.gas_limit, tx.gas_price);
  if (!max_fee.ok()) return Status::Invalid(reasons::kAmountOverflow, "gas_limit * gas_price");
  cost.max_fee = *max_fee;
  cost.upfront = *max_fee;
  if (const auto* transfer = std::get_if<TransferPayload>(&tx.payload)) {
    auto total = CheckedAdd(cost.upfront, transfer->amount);
    if (!total.ok()) return Status::Invalid(reasons::kAmountOverflow, "fee + amount");
    cost.upfront = *total;
  }
  return cost;
}

Result<Account> Vm::CheckAdmission(const StateStore& state, const Transaction& tx) const noexcept {
  VT_ASSIGN_OR_RETURN(ChainParams params, ReadParams(state));
  VT_ASSIGN_OR_RETURN(TxCost cost, CheckStateless(params, tx, params.block_gas_limit));
  VT_ASSIGN_OR_RETURN(Account account, ReadAccount(state, cost.sender));
  if (tx.nonce < account.nonce)
    return Status::Invalid(reasons::kBadNonce, "nonce " + std::to_string(tx.nonce) + " already used (account at " +
                                                   std::to_string(account.nonce) + ")");
  // A queued nonce cannot execute yet; its funds are judged with the rest of
  // the sender's pending transactions by the mempool.
  if (tx.nonce > account.nonce) return account;
  VT_TRY(CheckTransaction(state, tx));
  return account;
}

Result<Receipt> Vm::ExecuteTransaction(StateOverlay& block_state, const ChainParams& params, const BlockEnv& env,
                                       const Transaction& tx, std::uint64_t* block_gas_used) const noexcept {
  VT_ASSIGN_OR_RETURN(const TxCost cost, CheckStateless(params, tx, params.block_gas_limit - *block_gas_used));
  const crypto::Address& sender = cost.sender;
  const std::uint64_t intrinsic = cost.intrinsic_gas;
  const Amount upfront = cost.upfront;
  const auto* transfer = std::get_if<TransferPayload>(&tx.payload);

  // Stateful checks.
  VT_ASSIGN_OR_RETURN(Account account, ReadAccount(block_state, sender));
  if (tx.nonce != account.nonce)
    return Status::Invalid(reasons::kBadNonce, "nonce " + std::to_string(tx.nonce) + ", expected " +
                                                   std::to_string(account.nonce));
  if (account.balance < upfront)
    return Status::Invalid(reasons::kInsufficientFunds, "balance " + std::to_string(account.balance) +
                                                             " below " + std::to_string(upfront));

  // Includable from here on: the nonce advances and the fee is paid whatever
  // the payload does.
  account.nonce += 1;
  account.balance -= cost.max_fee;
  WriteAccount(block_state, sender, account);

  GasMeter meter(tx.gas_limit);
  (void)meter.Charge(intrinsic);  // cannot fail: checked above
  StateOverlay tx_state(block_state);
  std::vector<Event> events;
  Status outcome;
  if (transfer != nullptr) {
    outcome = meter.Charge(kGas.state_read + kGas.state_write);
    if (outcome.ok()) {
      auto from = ReadAccount(tx_state, sender);
      if (!from.ok()) return from.status();
      from->balance -= transfer->amount;  // covered by the upfront check
      WriteAccount(tx_state, sender, *from);
      outcome = Credit(tx_state, transfer->to, transfer->amount);
    }
  } else {
    const auto& call = std::get<CallPayload>(tx.payload);
    NativeContract* contract = m_contracts.Find(call.contract);
    if (contract == nullptr) {
      outcome = Status::Invalid(reasons::kUnknownContract, "contract " + std::to_string(call.contract));
    } else {
      CallContext ctx(tx_state, meter, env, params, tx.gas_price, call.contract, sender, tx.sender, m_arbiter);
      outcome = CallContract(*contract, ctx, call.method, call.args);
      events = std::move(ctx.events());
    }
  }
  // The store failed under us: this machine cannot process the block. Any
  // other error is the transaction's doing and fails its receipt below.
  if (IsLocalFailure(outcome)) return outcome;
  if (outcome.ok()) VT_TRY(block_state.Commit(tx_state.batch()));

  const std::uint64_t gas_used = meter.used();
  const Amount fee = gas_used * tx.gas_price;  // <= max_fee, no overflow
  VT_TRY(Credit(block_state, sender, cost.max_fee - fee));
  VT_TRY(Credit(block_state, env.proposer, fee));
  *block_gas_used += gas_used;

  Receipt receipt;
  receipt.tx_id = TxId(tx);
  receipt.success = outcome.ok();
  if (!outcome.ok()) receipt.reason = outcome.reason();
  receipt.gas_used = gas_used;
  receipt.fee = fee;
  if (outcome.ok()) receipt.events = std::move(events);
  return receipt;
}

// ---- blocks ------------------------------------------------------------------------------

Status Vm::CheckHeader(const ChainParams& params, const ChainTip& parent, const BlockHeader& h) const noexcept {
  if (h.version != kBlockVersion) return Status::Invalid("block-bad-version");
  if (h.chain_id != params.chain_id || h.chain_id != parent.chain_id) return Status::Invalid("block-wrong-chain");
  if (h.height != parent.height + 1)
    return Status::Invalid("block-bad-height", "height " + std::to_string(h.height) + " after " +
                                                   std::to_string(parent.height));
  if (h.parent_hash != parent.hash) return Status::Invalid("block-bad-parent");
  if (h.time < parent.time) return Status::Invalid("block-bad-time", "time goes backwards");
  if (!VerifyBlockSignature(h)) return Status::Invalid("block-bad-signature");
  return Status::Ok();
}

Status Vm::ApplyEvidence(StateOverlay& state, std::uint64_t height, const crypto::Address& reporter,
                         ByteSpan item) const noexcept {
  if (m_evidence == nullptr) return Status::Invalid("evidence-unsupported", "this chain has no evidence rules");
  VT_ASSIGN_OR_RETURN(const Offence o, m_evidence->Check(item));
  if (o.height > height)
    return Status::Invalid("evidence-from-future", "offence at height " + std::to_string(o.height));
  if (height - o.height > kEvidenceMaxAge)
    return Status::Invalid("evidence-too-old", "offence at height " + std::to_string(o.height) + ", more than " +
                                                   std::to_string(kEvidenceMaxAge) + " blocks ago");
  VT_ASSIGN_OR_RETURN(const std::optional<SlashRecord> seen, ReadSlash(state, o));
  if (seen)
    return Status::Invalid("evidence-duplicate",
                           "offence recorded at block " + std::to_string(seen->block_height));
  VT_ASSIGN_OR_RETURN(const Amount bond, ReadBond(state, o.validator));
  SlashRecord rec{height, SlashAmount(bond), 0};
  rec.reward = ReporterReward(rec.slashed);
  const Amount left = bond - rec.slashed;  // slashed <= bond
  if (left == 0) {
    state.Delete(BondKey(o.validator));
  } else {
    state.Put(BondKey(o.validator), U64Bytes(left));
  }
  VT_ASSIGN_OR_RETURN(Amount burned, ReadU64(state, kBurnedKey));
  VT_ASSIGN_OR_RETURN(burned, CheckedAdd(burned, rec.slashed - rec.reward));
  state.Put(AsBytes(kBurnedKey), U64Bytes(burned));
  VT_TRY(Credit(state, reporter, rec.reward));
  return RecordSlash(state, o, rec);
}

Result<BlockResult> Vm::ApplyBlock(StateStore& store, const ChainTip& parent, const Block& block) const noexcept {
  VT_ASSIGN_OR_RETURN(ChainParams params, ReadParams(store));
  const BlockHeader& h = block.header;
  VT_TRY(CheckHeader(params, parent, h));
  if (block.txs.size() > kMaxBlockTxs) return Status::Invalid("block-too-many-txs");
  if (EncodedBlockSize(block) > limits::kMaxBlockBytes) return Status::Invalid("block-too-large");
  if (TxRoot(block.txs) != h.tx_root) return Status::Invalid("block-bad-tx-root");
  if (block.evidence.size() > kMaxBlockEvidence) return Status::Invalid("block-too-much-evidence");
  if (EvidenceRoot(block.evidence) != h.evidence_root) return Status::Invalid("block-bad-evidence-root");
  VT_ASSIGN_OR_RETURN(crypto::PublicKey proposer, crypto::PublicKey::FromBytes(h.proposer));
  const BlockEnv env{h.chain_id, h.height, h.time, proposer.address()};

  StateOverlay state(store);
  BlockResult result;
  for (std::size_t i = 0; i < block.evidence.size(); ++i) {
    if (Status s = ApplyEvidence(state, h.height, env.proposer, block.evidence[i]); !s.ok())
      return s.WithContext("block evidence #" + std::to_string(i));
  }
  std::uint64_t gas_used = 0;
  for (std::size_t i = 0; i < block.txs.size(); ++i) {
    auto receipt = ExecuteTransaction(state, params, env, block.txs[i], &gas_used);
    if (!receipt.ok()) return receipt.status().WithContext("block tx #" + std::to_string(i));
    result.receipts.push_back(std::move(receipt).value());
  }
  VT_ASSIGN_OR_RETURN(Hash256 root, ComputeStateRoot(state));
  if (root != h.state_root) return Status::Invalid("block-bad-state-root");
  if (ReceiptRoot(result.receipts) != h.receipt_root) return Status::Invalid("block-bad-receipt-root");
  VT_TRY(store.Commit(state.batch()));
  result.block = block;
  result.tip = ChainTip{h.chain_id, h.height, BlockHash(h), h.time};
  return result;
}

Result<BlockResult> Vm::ProduceBlock(StateStore& store, const ChainTip& parent, std::vector<Transaction> candidates,
                                     std::uint64_t time, const crypto::SecretKey& proposer,
                                     std::vector<RejectedTx>* rejected, std::vector<Bytes> evidence) const noexcept {
  VT_ASSIGN_OR_RETURN(ChainParams params, ReadParams(store));
  BlockResult result;
  BlockHeader& h = result.block.header;
  h.chain_id = params.chain_id;
  h.height = parent.height + 1;
  h.parent_hash = parent.hash;
  h.time = std::max(time, parent.time);
  const BlockEnv env{h.chain_id, h.height, h.time, proposer.address()};

  StateOverlay state(store);
  for (Bytes& item : evidence) {
    if (result.block.evidence.size() >= kMaxBlockEvidence) break;
    StateOverlay layer(state);
    Status s = ApplyEvidence(layer, h.height, env.proposer, item);
    if (IsLocalFailure(s)) return s;
    if (!s.ok()) continue;
    VT_TRY(state.Commit(layer.batch()));
    result.block.evidence.push_back(std::move(item));
  }
  std::uint64_t gas_used = 0;
  std::size_t block_bytes = EncodedBlockSize(result.block) + 8;  // + room for the tx count's varint to grow
  for (Transaction& tx : candidates) {
    if (result.block.txs.size() >= kMaxBlockTxs) break;
    // A block must fit in one gossip frame; a tx that does not fit now may
    // fit the next block.
    const std::size_t tx_bytes = EncodeTransaction(tx).size();
    if (block_bytes + tx_bytes > limits::kMaxBlockBytes) continue;
    // Each transaction runs in a layer of its own, so that whatever it does
    // — even an error that leaves its writes half done — can be dropped
    // without touching the block: no transaction can stop the proposer.
    StateOverlay layer(state);
    std::uint64_t layer_gas = gas_used;
    auto receipt = ExecuteTransaction(layer, params, env, tx, &layer_gas);
    if (!receipt.ok()) {
      if (rejected != nullptr) rejected->push_back(RejectedTx{TxId(tx), receipt.status()});
      continue;
    }
    VT_TRY(state.Commit(layer.batch()));
    gas_used = layer_gas;
    block_bytes += tx_bytes;
    result.receipts.push_back(std::move(receipt).value());
    result.block.txs.push_back(std::move(tx));
  }
  VT_ASSIGN_OR_RETURN(h.state_root, ComputeStateRoot(state));
  h.tx_root = TxRoot(result.block.txs);
  h.receipt_root = ReceiptRoot(result.receipts);
  h.evidence_root = EvidenceRoot(result.block.evidence);
  VT_TRY(SignBlock(h, proposer));
  VT_TRY(store.Commit(state.batch()));
  result.tip = ChainTip{h.chain_id, h.height, BlockHash(h), h.time};
  return result;
}

}  // namespace vt::vm
