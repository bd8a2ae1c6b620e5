#pragma once
// The deterministic transaction machine: accounts, nonces, fees, native
// contracts, blocks, the state root, the supply invariant.
//
// State layout (ordered byte keys, docs/formats.md "Transactions and blocks"):
//   "a/" ‖ address(20)                  → Account (u64 balance ‖ u64 nonce)
//   "e/" ‖ u16be contract ‖ escrow name  → u64 amount held by a contract
//   "c/" ‖ u16be contract ‖ key          → contract storage
//   "m/params"                           → ChainParams
//   "m/supply"                           → u64 genesis supply
//   "m/burned"                           → u64 burned so far
// Validator bonds are escrows of the reserved id kBondContract and slash
// records its storage (contract_vm/evidence.h).
// Invariant after every block: Σ balances + Σ escrows (bonds included) + burned = supply.
//
// No floats, no wall clock, no unordered iteration: two machines that apply
// the same blocks to the same genesis reach the same state root.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/bytes.h"
#include "common/encoding.h"
#include "common/limits.h"
#include "common/result.h"
#include "contract_vm/amount.h"
#include "contract_vm/block.h"
#include "contract_vm/contract.h"
#include "contract_vm/evidence.h"
#include "contract_vm/state.h"
#include "contract_vm/tx.h"
#include "crypto/keys.h"

namespace vt::vm {

struct Account {
  Amount balance = 0;
  std::uint64_t nonce = 0;
  bool operator==(const Account&) const = default;
};

struct ChainParams {
  std::uint64_t chain_id = 1;
  std::uint64_t block_gas_limit = std::uint64_t{1} << 40;
  // At most limits::kMaxTxBytes (what one gossip frame carries); genesis
  // refuses more. Jobs whose arbitration needs more are refused at posting.
  std::uint64_t max_tx_bytes = limits::kMaxTxBytes;
  Amount min_gas_price = 1;
  bool operator==(const ChainParams&) const = default;
};

struct Allocation {
  crypto::Address address;
  Amount amount = 0;
  bool operator==(const Allocation&) const = default;
};

struct Genesis {
  ChainParams params;
  std::uint64_t time = 0;
  std::vector<Allocation> allocations;  // strictly increasing addresses
  std::vector<Bond> bonds;              // validators' stake, strictly increasing keys, each > 0
  bool operator==(const Genesis&) const = default;
};

void Encode(Writer& w, const Account& a);
Result<Account> Decode(Reader& r, DecodeAs<Account>);
void Encode(Writer& w, const ChainParams& p);
Result<ChainParams> Decode(Reader& r, DecodeAs<ChainParams>);
void Encode(Writer& w, const Genesis& g);
Result<Genesis> Decode(Reader& r, DecodeAs<Genesis>);
// TaggedHash("veritrain/genesis/v1", encoding): the parent hash of block 1.
Hash256 GenesisHash(const Genesis& g);

// State keys.
Bytes AccountKey(const crypto::Address& address);
Bytes EscrowKey(std::uint16_t contract, ByteSpan name);
Bytes ContractKey(std::uint16_t contract, ByteSpan key);

// Read helpers (absent account = zero balance, zero nonce).
Result<Account> ReadAccount(const StateStore& state, const crypto::Address& address) noexcept;
Result<ChainParams> ReadParams(const StateStore& state) noexcept;

struct SupplyReport {
  Amount supply = 0;
  Amount balances = 0;
  Amount escrows = 0;
  Amount burned = 0;
};
// Sums every balance and escrow by scanning the state (independently of any
// counter) and checks the invariant. Invalid "supply-mismatch" or
// "amount-overflow".
Result<SupplyReport> AuditSupply(const StateStore& state) noexcept;

// A Status::Error from the store itself ("db-*", "state-*"): this machine
// cannot compute the state, so the block cannot be processed here. Every
// other error of a call is the transaction's doing and fails its receipt.
bool IsLocalFailure(const Status& s);

// What a transaction costs its sender at most, from the stateless checks.
struct TxCost {
  crypto::Address sender;
  std::uint64_t intrinsic_gas = 0;  // tx_base + tx_byte per encoded byte
  Amount max_fee = 0;               // gas_limit * gas_price
  Amount upfront = 0;               // max_fee + the transferred amount
};

// The checks of a transaction that need no state, cheapest first: version,
// chain, size, gas limit (intrinsic gas, at most `block_gas_left`), gas
// price, sender key, signature, fee overflow. Reasons in tx.h.
Result<TxCost> CheckStateless(const ChainParams& params, const Transaction& tx, std::uint64_t block_gas_left) noexcept;

// A transaction a proposer left out, and why.
struct RejectedTx {
  Hash256 tx_id;
  Status status;
};

struct BlockResult {
  Block block;  // as applied (BuildBlock fills in the header)
  std::vector<Receipt> receipts;
  ChainTip tip;
};

class Vm {
 public:
  // `arbiter` may be null (a chain without the arbitration precompile);
  // `evidence` too (a chain whose blocks carry no evidence: a block with
  // any is invalid, "evidence-unsupported").
  Vm(const ContractRegistry& contracts, const Arbiter* arbiter, const EvidenceRules* evidence = nullptr)
      : m_contracts(contracts), m_arbiter(arbiter), m_evidence(evidence) {}

  // Writes the genesis state into an empty store. Invalid "genesis-unsorted",
  // "genesis-supply-overflow", "genesis-bad-params", "genesis-not-empty",
  // "genesis-bad-bond" (a zero bond).
  Result<ChainTip> ApplyGenesis(StateStore& store, const Genesis& genesis) const noexcept;

  // Would `tx` be accepted as the next transaction on top of `state` in a
  // block at `height`? Reasons in tx.h.
  Status CheckTransaction(const StateStore& state, const Transaction& tx) const noexcept;
  // The mempool's door: every stateless check; a used nonce is "tx-bad-nonce";
  // the account's next nonce is checked in full (CheckTransaction); a later
  // nonce passes (it cannot execute yet). Returns the sender's account, for
  // the mempool's nonce window and funds rules.
  Result<Account> CheckAdmission(const StateStore& state, const Transaction& tx) const noexcept;

  // Validates and applies a block on top of `parent`: all of it (committed
  // to `store` in one batch) or nothing. Invalid with a "block-*" reason,
  // the reason of the first invalid evidence item (evidence.h; detail names
  // its index), or of the first invalid transaction (detail names its
  // index). Evidence is applied before the transactions.
  Result<BlockResult> ApplyBlock(StateStore& store, const ChainTip& parent, const Block& block) const noexcept;

  // The proposer's side: executes `candidates` in order, leaves out the ones
  // that cannot be included at their turn (reported in `rejected`: invalid,
  // or failing with any error) and those that would push the block past
  // limits::kMaxBlockBytes (not reported: they fit a later block), fills in
  // and signs the header, and commits like ApplyBlock. Fails only when the
  // store fails; no transaction can make it fail. `evidence`: candidate
  // items, included in order while they apply (a refused one — recorded
  // already, too old, not evidence — is left out silently), at most
  // kMaxBlockEvidence.
  Result<BlockResult> ProduceBlock(StateStore& store, const ChainTip& parent, std::vector<Transaction> candidates,
                                   std::uint64_t time, const crypto::SecretKey& proposer,
                                   std::vector<RejectedTx>* rejected, std::vector<Bytes> evidence = {}) const noexcept;

 private:
  // Invalid: the transaction cannot be included. Otherwise its receipt.
  Result<Receipt> ExecuteTransaction(StateOverlay& block_state, const ChainParams& params, const BlockEnv& env,
                                     const Transaction& tx, std::uint64_t* block_gas_used) const noexcept;
  Status CheckHeader(const ChainParams& params, const ChainTip& parent, const BlockHeader& h) const noexcept;
  // Checks one evidence item and slashes (evidence.h); Invalid when the
  // item cannot be in a block at `height`.
  Status ApplyEvidence(StateOverlay& state, std::uint64_t height, const crypto::Address& reporter,
                       ByteSpan item) const noexcept;

  const ContractRegistry& m_contracts;
  const Arbiter* m_arbiter;
  const EvidenceRules* m_evidence;
};

}  // namespace vt::vm
