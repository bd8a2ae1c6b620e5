#pragma once
// Native contracts: C++ code that the VM runs for a call transaction, with
// storage, funds, events and precompiles reached only through CallContext.
// Everything a contract touches is metered and staged in the transaction's
// overlay: a call that returns a non-ok Status leaves no state change (only
// the fee and the nonce), as in any account-based chain.

#include <cstdint>
#include <map>
#include <optional>
#include <string_view>
#include <vector>

#include "common/bytes.h"
#include "common/result.h"
#include "contract_vm/amount.h"
#include "contract_vm/block.h"
#include "contract_vm/gas.h"
#include "contract_vm/state.h"
#include "crypto/keys.h"

namespace vt::vm {

class Arbiter;
struct ChainParams;  // contract_vm/vm.h

// The block a transaction executes in.
struct BlockEnv {
  std::uint64_t chain_id = 0;
  std::uint64_t height = 0;
  std::uint64_t time = 0;
  crypto::Address proposer;
};

class CallContext {
 public:
  CallContext(StateOverlay& state, GasMeter& gas, const BlockEnv& env, const ChainParams& params, Amount gas_price,
              std::uint16_t contract, const crypto::Address& sender, ByteSpan sender_key, const Arbiter* arbiter)
      : m_state(state), m_gas(gas), m_env(env), m_params(params), m_gas_price(gas_price), m_contract(contract),
        m_sender(sender), m_sender_key(sender_key.begin(), sender_key.end()), m_arbiter(arbiter) {}

  const BlockEnv& env() const { return m_env; }
  std::uint64_t height() const { return m_env.height; }
  const crypto::Address& sender() const { return m_sender; }
  // The sender's x-only public key (32 bytes), already checked by the VM.
  ByteSpan sender_key() const { return m_sender_key; }
  std::uint16_t contract() const { return m_contract; }
  GasMeter& gas() { return m_gas; }
  // The chain's parameters (its largest transaction, its minimum gas price).
  const ChainParams& params() const { return m_params; }
  // The price per gas this transaction pays (what reimbursing its gas costs).
  Amount gas_price() const { return m_gas_price; }

  // Contract storage, private to this contract (keys are prefixed by its id).
  Result<std::optional<Bytes>> Get(ByteSpan key);
  Status Put(ByteSpan key, ByteSpan value);
  Status Delete(ByteSpan key);

  // Funds. Escrows are named by the contract (e.g. "bounty/7/reward") and
  // live in the state under the contract's id; balances are checked.
  // Invalid "tx-insufficient-funds" when the sender cannot pay.
  Status LockFromSender(ByteSpan escrow, Amount amount);
  // Invalid "escrow-insufficient" when the escrow holds less;
  // "tx-balance-overflow" when the recipient's balance would overflow.
  Status Release(ByteSpan escrow, const crypto::Address& to, Amount amount);
  Status Burn(ByteSpan escrow, Amount amount);
  Result<Amount> EscrowBalance(ByteSpan escrow);

  Status Emit(std::string_view topic, ByteSpan data);

  // Metered helpers for contracts.
  Status ChargeHashing(std::size_t bytes);
  Status ChargeMerkle(std::size_t node_hashes);
  Status VerifySignature(ByteSpan pubkey, ByteSpan message, ByteSpan signature, bool* valid);

  // Invalid "vm-no-arbiter" when the chain was built without one.
  Result<const Arbiter*> arbiter() const;

  std::vector<Event>& events() { return m_events; }

 private:
  StateOverlay& m_state;
  GasMeter& m_gas;
  const BlockEnv& m_env;
  const ChainParams& m_params;
  Amount m_gas_price;
  std::uint16_t m_contract;
  crypto::Address m_sender;
  Bytes m_sender_key;
  const Arbiter* m_arbiter;
  std::vector<Event> m_events;
};

class NativeContract {
 public:
  virtual ~NativeContract() = default;
  // Executes one call. Invalid statuses carry the contract's stable reason
  // codes and revert the call. Error statuses revert it too and fail its
  // receipt with their reason — except the store's own failures ("db-*",
  // "state-*", IsLocalFailure in vm.h), which mean this machine cannot
  // compute the state and abort the block. May throw: the VM catches any
  // exception at the call boundary and fails the receipt ("vm-out-of-memory",
  // "vm-exception"), so no transaction can stop a validator.
  virtual Status Call(CallContext& ctx, std::uint16_t method, ByteSpan args) = 0;
};

// Contracts by id; the set is fixed at chain start (genesis config).
class ContractRegistry {
 public:
  // Precondition: id unused, contract outlives the registry.
  void Register(std::uint16_t id, NativeContract* contract) { m_contracts.emplace(id, contract); }
  NativeContract* Find(std::uint16_t id) const {
    const auto it = m_contracts.find(id);
    return it == m_contracts.end() ? nullptr : it->second;
  }

 private:
  std::map<std::uint16_t, NativeContract*> m_contracts;
};

}  // namespace vt::vm
