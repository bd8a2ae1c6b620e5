// Unit tests of the contract VM: checked amounts, state store and overlay,
// state root proofs, transaction and block encodings and validation, fees,
// native-contract calls (storage, escrow, events, revert), supply invariant.

#include <gtest/gtest.h>

#include <limits>
#include <random>

#include "common/encoding.h"
#include "contract_vm/amount.h"
#include "contract_vm/block.h"
#include "contract_vm/contract.h"
#include "contract_vm/state.h"
#include "contract_vm/state_root.h"
#include "contract_vm/tx.h"
#include "contract_vm/vm.h"
#include "crypto/sha256.h"
#include "tests/contract_vm/test_chain.h"
#include "tests/support/test_seed.h"

namespace vt::vm {
namespace {

using test::TestChain;
using test::TestKey;

constexpr Amount kMax = std::numeric_limits<Amount>::max();

// ---- amounts -----------------------------------------------------------------------

TEST(Amount, CheckedArithmeticRejectsOverflowAndUnderflow) {
  EXPECT_EQ(*CheckedAdd(kMax - 1, 1), kMax);
  EXPECT_EQ(CheckedAdd(kMax, 1).status().reason(), "amount-overflow");
  EXPECT_EQ(*CheckedSub(5, 5), 0u);
  EXPECT_EQ(CheckedSub(5, 6).status().reason(), "amount-underflow");
  EXPECT_EQ(*CheckedMul(1ull << 32, (1ull << 32) - 1), (1ull << 32) * ((1ull << 32) - 1));
  EXPECT_EQ(CheckedMul(1ull << 32, 1ull << 32).status().reason(), "amount-overflow");
  EXPECT_EQ(*CheckedMul(0, kMax), 0u);
}

TEST(Amount, ShareBpsIsExactFloor) {
  EXPECT_EQ(ShareBps(kMax, 10000), kMax);
  EXPECT_EQ(ShareBps(kMax, 0), 0u);
  EXPECT_EQ(ShareBps(kMax, 5000), kMax / 2);  // floor((2^64-1)/2)
  EXPECT_EQ(ShareBps(9999, 5000), 4999u);
  EXPECT_EQ(ShareBps(10001, 3333), 3333u);  // 10001*3333/10000 = 3333.33
  std::mt19937_64 rng(test::TestSeed());
  for (int i = 0; i < 1000; ++i) {
    const Amount a = rng() >> 20;  // small enough for a direct product
    const std::uint32_t bps = static_cast<std::uint32_t>(rng() % 10001);
    EXPECT_EQ(ShareBps(a, bps), a * bps / 10000) << a << " " << bps;
  }
}

// ---- state store ---------------------------------------------------------------------

Bytes B(std::string_view s) { return Bytes(s.begin(), s.end()); }

std::vector<std::pair<std::string, std::string>> ScanAll(const StateStore& s, std::string_view prefix = {}) {
  std::vector<std::pair<std::string, std::string>> out;
  EXPECT_TRUE(s.Scan(AsBytes(prefix), [&](ByteSpan k, ByteSpan v) {
                 out.emplace_back(std::string(k.begin(), k.end()), std::string(v.begin(), v.end()));
                 return true;
               }).ok());
  return out;
}

TEST(StateStore, OverlayMergesInKeyOrderAndShadowsDeletes) {
  MemoryStateStore base;
  WriteBatch b;
  b.Put(B("a/1"), B("x"));
  b.Put(B("a/3"), B("y"));
  b.Put(B("b/1"), B("z"));
  ASSERT_TRUE(base.Commit(b).ok());

  StateOverlay o(base);
  o.Put(B("a/2"), B("new"));
  o.Put(B("a/3"), B("changed"));
  o.Delete(B("a/1"));
  o.Put(B("a/0"), B("first"));
  using P = std::pair<std::string, std::string>;
  EXPECT_EQ(ScanAll(o, "a/"), (std::vector<P>{{"a/0", "first"}, {"a/2", "new"}, {"a/3", "changed"}}));
  EXPECT_EQ(ScanAll(o).size(), 4u);
  EXPECT_FALSE(o.Get(B("a/1"))->has_value());
  EXPECT_EQ(**o.Get(B("b/1")), B("z"));
  // The base is untouched until the batch is committed.
  EXPECT_EQ(ScanAll(base, "a/").size(), 2u);
  ASSERT_TRUE(base.Commit(o.batch()).ok());
  EXPECT_EQ(ScanAll(base), ScanAll(o));

  // Nested overlays: a discarded inner overlay leaves the outer one intact.
  StateOverlay outer(base);
  StateOverlay inner(outer);
  inner.Put(B("c"), B("1"));
  inner.Discard();
  ASSERT_TRUE(outer.Commit(inner.batch()).ok());
  EXPECT_TRUE(outer.batch().empty());
}

TEST(StateStore, ScanStopsWhenVisitorSaysSo) {
  MemoryStateStore s;
  WriteBatch b;
  for (char c = 'a'; c <= 'z'; ++c) b.Put(Bytes{static_cast<std::uint8_t>(c)}, B("v"));
  ASSERT_TRUE(s.Commit(b).ok());
  int seen = 0;
  ASSERT_TRUE(s.Scan({}, [&](ByteSpan, ByteSpan) { return ++seen < 3; }).ok());
  EXPECT_EQ(seen, 3);
}

// ---- state root ------------------------------------------------------------------------

TEST(StateRoot, ProofsVerifyAndBindKeyAndValue) {
  MemoryStateStore s;
  WriteBatch b;
  std::mt19937_64 rng(test::TestSeed());
  for (int i = 0; i < 37; ++i) b.Put(B("k" + std::to_string(rng() % 1000)), B(std::to_string(i)));
  ASSERT_TRUE(s.Commit(b).ok());
  auto root = ComputeStateRoot(s);
  ASSERT_TRUE(root.ok());
  for (const auto& [key, value] : b.ops()) {
    auto proof = ProveStateEntry(s, key);
    ASSERT_TRUE(proof.ok());
    EXPECT_EQ(proof->value, *value);
    EXPECT_TRUE(VerifyStateProof(*root, *proof).ok());
    StateProof wrong = *proof;
    wrong.value.push_back('!');
    EXPECT_EQ(VerifyStateProof(*root, wrong).reason(), "merkle-proof-mismatch");
    wrong = *proof;
    wrong.key.push_back('!');
    EXPECT_EQ(VerifyStateProof(*root, wrong).reason(), "merkle-proof-mismatch");
    // The encoding round-trips.
    auto decoded = DecodeExact<StateProof>(EncodeToBytes(*proof));
    ASSERT_TRUE(decoded.ok());
    EXPECT_EQ(*decoded, *proof);
  }
  EXPECT_EQ(ProveStateEntry(s, B("absent")).status().reason(), "state-key-absent");
  // Any change of any value changes the root.
  WriteBatch change;
  change.Put(b.ops().begin()->first, B("other"));
  ASSERT_TRUE(s.Commit(change).ok());
  EXPECT_NE(*ComputeStateRoot(s), *root);
}

TEST(StateRoot, EmptyAndGoldenValue) {
  MemoryStateStore s;
  EXPECT_EQ(*ComputeStateRoot(s), crypto::MerkleRoot({}));
  // Golden vectors: one entry ("k" → "v"). They pin the entry hash and the
  // tree format (docs/formats.md); change them only with a new tag.
  WriteBatch b;
  b.Put(B("k"), B("v"));
  ASSERT_TRUE(s.Commit(b).ok());
  EXPECT_EQ(StateEntryHash(B("k"), B("v")).Hex(), "3a2c66daf7bf47d5ee716a34db69056312af0700a77f191e2a2eb1259395bd7f");
  EXPECT_EQ(ComputeStateRoot(s)->Hex(), "565cd92b391c059ed21cd244fe14b37e5ac1da82d5a74600bbfc6bde941f2743");
}

// ---- transactions --------------------------------------------------------------------------

Transaction SampleTx() {
  Transaction tx;
  tx.chain_id = 7;
  tx.nonce = 3;
  tx.gas_limit = 50000;
  tx.gas_price = 2;
  tx.payload = TransferPayload{TestKey(2).address(), 12345};
  EXPECT_TRUE(SignTransaction(tx, TestKey(1)).ok());
  return tx;
}

TEST(Transaction, EncodingRoundTripsAndIsStrict) {
  const Transaction tx = SampleTx();
  const Bytes enc = EncodeTransaction(tx);
  // version 1 + 4*8 + 32 sender + 1 kind + 20 to + 8 amount + 64 signature.
  EXPECT_EQ(enc.size(), 1u + 32 + 32 + 1 + 20 + 8 + 64);
  auto back = DecodeTransaction(enc);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, tx);
  EXPECT_TRUE(VerifyTransactionSignature(*back));

  Bytes trailing = enc;
  trailing.push_back(0);
  EXPECT_EQ(DecodeTransaction(trailing).status().reason(), "tx-malformed");
  Bytes truncated(enc.begin(), enc.end() - 1);
  EXPECT_EQ(DecodeTransaction(truncated).status().reason(), "tx-malformed");
  Bytes bad_kind = enc;
  bad_kind[1 + 32 + 32] = 2;  // kind 2 is undefined
  EXPECT_EQ(DecodeTransaction(bad_kind).status().reason(), "tx-malformed");
  Bytes bad_version = enc;
  bad_version[0] = 2;
  EXPECT_EQ(DecodeTransaction(bad_version).status().reason(), "tx-bad-version");

  Transaction call;
  call.chain_id = 7;
  call.payload = CallPayload{1, 9, B("args")};
  ASSERT_TRUE(SignTransaction(call, TestKey(5)).ok());
  auto call_back = DecodeTransaction(EncodeTransaction(call));
  ASSERT_TRUE(call_back.ok());
  EXPECT_EQ(*call_back, call);
}

TEST(Transaction, SignatureCoversEveryField) {
  const Transaction tx = SampleTx();
  auto mutate = [&](auto&& f) {
    Transaction t = tx;
    f(t);
    return VerifyTransactionSignature(t);
  };
  EXPECT_TRUE(VerifyTransactionSignature(tx));
  EXPECT_FALSE(mutate([](Transaction& t) { t.chain_id = 8; }));
  EXPECT_FALSE(mutate([](Transaction& t) { t.nonce += 1; }));
  EXPECT_FALSE(mutate([](Transaction& t) { t.gas_limit += 1; }));
  EXPECT_FALSE(mutate([](Transaction& t) { t.gas_price += 1; }));
  EXPECT_FALSE(mutate([](Transaction& t) { std::get<TransferPayload>(t.payload).amount += 1; }));
  EXPECT_FALSE(mutate([](Transaction& t) { t.sender = TestKey(3).public_key().bytes(); }));
  EXPECT_FALSE(mutate([](Transaction& t) { t.signature[10] ^= 1; }));
}

TEST(Transaction, GoldenHashes) {
  // Pins the encoding, the BIP-340 signature (deterministic: zero aux) and
  // both tagged hashes (docs/formats.md). Change only with a new tag.
  const Transaction tx = SampleTx();
  EXPECT_EQ(ToHex(EncodeTransaction(tx)),
            "010700000000000000030000000000000050c30000000000000200000000000000e4dbb4350d84eabec1d67e40a398a78a8e6d"
            "719d86914393fca83b88dbe927af002efd5753b725d7995076e907ec56d32182c4a2ef3930000000000000b459e60ae9f70647b2"
            "957695c1cf3655b730af12d8f590f8834aeb3169915a9c7ee3c93ec48ed32a7f770f3aeeafca536d0bf0a4ce747bb2f7d2431ecd"
            "ae1aac");
  EXPECT_EQ(TxSigningHash(tx).Hex(), "51ff82181910ac175f7aebb46887c5a765fe79bb944a6b9e0371abc9d147c507");
  EXPECT_EQ(TxId(tx).Hex(), "30917827713373efa11fdebd03a3e7803eb27a18bf27e5d81a37a79e33a8df92");
}

// ---- a native contract for the tests ----------------------------------------------------------

constexpr std::uint16_t kTestContract = 9;

// method 1: put(key, value); 2: lock(escrow, amount); 3: release(escrow, to, amount);
// 4: burn(escrow, amount); 5: put then fail; 6: burn gas forever.
class TestContract final : public NativeContract {
 public:
  Status Call(CallContext& ctx, std::uint16_t method, ByteSpan args) noexcept override {
    Reader r(args);
    switch (method) {
      case 1: {
        VT_ASSIGN_OR_RETURN(Bytes key, r.GetBytes());
        VT_ASSIGN_OR_RETURN(Bytes value, r.GetBytes());
        VT_TRY(r.Finish());
        VT_TRY(ctx.Put(key, value));
        return ctx.Emit("put", key);
      }
      case 2: {
        VT_ASSIGN_OR_RETURN(Bytes escrow, r.GetBytes());
        VT_ASSIGN_OR_RETURN(Amount amount, r.GetU64());
        return ctx.LockFromSender(escrow, amount);
      }
      case 3: {
        VT_ASSIGN_OR_RETURN(Bytes escrow, r.GetBytes());
        VT_ASSIGN_OR_RETURN(crypto::Address to, crypto::Decode(r, DecodeAs<crypto::Address>{}));
        VT_ASSIGN_OR_RETURN(Amount amount, r.GetU64());
        return ctx.Release(escrow, to, amount);
      }
      case 4: {
        VT_ASSIGN_OR_RETURN(Bytes escrow, r.GetBytes());
        VT_ASSIGN_OR_RETURN(Amount amount, r.GetU64());
        return ctx.Burn(escrow, amount);
      }
      case 5:
        VT_TRY(ctx.Put(B("reverted"), B("1")));
        VT_TRY(ctx.Emit("lost", {}));
        return Status::Invalid("test-failure");
      case 6:
        while (true) VT_TRY(ctx.gas().Charge(1000));
      default:
        return Status::Invalid("test-unknown-method");
    }
  }
};

Bytes PutArgs(std::string_view k, std::string_view v) {
  Writer w;
  w.PutString(k);
  w.PutString(v);
  return std::move(w).Take();
}
Bytes EscrowArgs(std::string_view escrow, Amount amount) {
  Writer w;
  w.PutString(escrow);
  w.PutU64(amount);
  return std::move(w).Take();
}

class VmTest : public ::testing::Test {
 protected:
  VmTest() { registry.Register(kTestContract, &contract); }
  TestContract contract;
  ContractRegistry registry;
  TestChain chain{registry, nullptr, 4, 1'000'000'000};
  crypto::SecretKey alice = TestKey(1);
  crypto::SecretKey bob = TestKey(2);
};

TEST_F(VmTest, TransferMovesFundsPaysFeeAndBumpsNonce) {
  const Amount a0 = chain.BalanceOf(alice.address());
  const Amount b0 = chain.BalanceOf(bob.address());
  const Receipt r = chain.Run(chain.MakeTx(alice, TransferPayload{bob.address(), 1000}));
  ASSERT_TRUE(r.success) << r.reason;
  EXPECT_GT(r.gas_used, kGas.tx_base);
  EXPECT_EQ(r.fee, r.gas_used * TestChain::kGasPrice);
  EXPECT_EQ(chain.BalanceOf(alice.address()), a0 - 1000 - r.fee);
  EXPECT_EQ(chain.BalanceOf(bob.address()), b0 + 1000);
  EXPECT_EQ(chain.BalanceOf(chain.proposer_address()), r.fee);
  EXPECT_EQ(chain.AccountOf(alice.address()).nonce, 1u);
}

TEST_F(VmTest, RejectsReplayWrongChainBadSignatureAndOverflow) {
  const Transaction first = chain.MakeTx(alice, TransferPayload{bob.address(), 10});
  ASSERT_TRUE(chain.Run(first).success);
  // Replay of an included transaction.
  EXPECT_EQ(chain.vm().CheckTransaction(chain.store(), first).reason(), "tx-bad-nonce");
  // Wrong chain id (signed correctly for chain 8).
  Transaction other_chain = chain.MakeTx(alice, TransferPayload{bob.address(), 10});
  other_chain.chain_id = 8;
  ASSERT_TRUE(SignTransaction(other_chain, alice).ok());
  EXPECT_EQ(chain.vm().CheckTransaction(chain.store(), other_chain).reason(), "tx-wrong-chain");
  // Bad signature: a field changed after signing, and a forged signature.
  Transaction tampered = chain.MakeTx(alice, TransferPayload{bob.address(), 10});
  std::get<TransferPayload>(tampered.payload).amount = 11;
  EXPECT_EQ(chain.vm().CheckTransaction(chain.store(), tampered).reason(), "tx-bad-signature");
  Transaction not_a_key = chain.MakeTx(alice, TransferPayload{bob.address(), 10});
  not_a_key.sender.fill(0xff);  // not an x coordinate below the field size
  EXPECT_EQ(chain.vm().CheckTransaction(chain.store(), not_a_key).reason(), "tx-bad-signature");
  // Overflows: amount + fee, and gas_limit * gas_price.
  Transaction huge = chain.MakeTx(alice, TransferPayload{bob.address(), kMax});
  EXPECT_EQ(chain.vm().CheckTransaction(chain.store(), huge).reason(), "tx-amount-overflow");
  Transaction huge_fee = chain.MakeTx(alice, TransferPayload{bob.address(), 1});
  huge_fee.gas_price = kMax / 2;
  huge_fee.gas_limit = 1u << 20;
  ASSERT_TRUE(SignTransaction(huge_fee, alice).ok());
  EXPECT_EQ(chain.vm().CheckTransaction(chain.store(), huge_fee).reason(), "tx-amount-overflow");
  // Not enough funds for amount + fee.
  Transaction too_much = chain.MakeTx(alice, TransferPayload{bob.address(), 1'000'000'000});
  EXPECT_EQ(chain.vm().CheckTransaction(chain.store(), too_much).reason(), "tx-insufficient-funds");
  // Gas: below intrinsic, price below the minimum, above the block limit.
  Transaction low_gas = chain.MakeTx(alice, TransferPayload{bob.address(), 1}, 100);
  EXPECT_EQ(chain.vm().CheckTransaction(chain.store(), low_gas).reason(), "tx-gas-limit-too-low");
  Transaction free = chain.MakeTx(alice, TransferPayload{bob.address(), 1});
  free.gas_price = 0;
  ASSERT_TRUE(SignTransaction(free, alice).ok());
  EXPECT_EQ(chain.vm().CheckTransaction(chain.store(), free).reason(), "tx-gas-price-too-low");
  Transaction over_block = chain.MakeTx(alice, TransferPayload{bob.address(), 1}, (1ull << 40) + 1);
  EXPECT_EQ(chain.vm().CheckTransaction(chain.store(), over_block).reason(), "tx-gas-limit-over-block");
  // A future nonce is as wrong as a past one.
  Transaction future = chain.MakeTx(alice, TransferPayload{bob.address(), 1});
  future.nonce += 5;
  ASSERT_TRUE(SignTransaction(future, alice).ok());
  EXPECT_EQ(chain.vm().CheckTransaction(chain.store(), future).reason(), "tx-bad-nonce");

  // A proposer leaves all of them out and says why; state is unchanged.
  const Hash256 root_before = *ComputeStateRoot(chain.store());
  for (const Transaction& t : {first, other_chain, tampered, huge, too_much}) chain.Submit(t);
  const auto receipts = chain.Mine();
  EXPECT_TRUE(receipts.empty());
  ASSERT_EQ(chain.last_rejected().size(), 5u);
  EXPECT_EQ(chain.last_rejected()[0].status.reason(), "tx-bad-nonce");
  EXPECT_EQ(chain.last_rejected()[1].status.reason(), "tx-wrong-chain");
  EXPECT_EQ(chain.last_rejected()[2].status.reason(), "tx-bad-signature");
  EXPECT_EQ(chain.last_rejected()[3].status.reason(), "tx-amount-overflow");
  EXPECT_EQ(chain.last_rejected()[4].status.reason(), "tx-insufficient-funds");
  EXPECT_EQ(*ComputeStateRoot(chain.store()), root_before);
}

TEST_F(VmTest, SameTransactionTwiceInOneBlockIsAReplay) {
  const Transaction tx = chain.MakeTx(alice, TransferPayload{bob.address(), 5});
  chain.Submit(tx);
  chain.Submit(tx);
  const auto receipts = chain.Mine();
  EXPECT_EQ(receipts.size(), 1u);
  ASSERT_EQ(chain.last_rejected().size(), 1u);
  EXPECT_EQ(chain.last_rejected()[0].status.reason(), "tx-bad-nonce");
}

TEST_F(VmTest, ContractCallsStoreLockReleaseBurnAndKeepSupply) {
  Receipt r = chain.Run(chain.Call(alice, kTestContract, 1, PutArgs("key", "value")));
  ASSERT_TRUE(r.success) << r.reason;
  ASSERT_EQ(r.events.size(), 1u);
  EXPECT_EQ(r.events[0].topic, "put");
  EXPECT_EQ(r.events[0].contract, kTestContract);
  EXPECT_EQ(**chain.store().Get(ContractKey(kTestContract, B("key"))), B("value"));

  const Amount a0 = chain.BalanceOf(alice.address());
  r = chain.Run(chain.Call(alice, kTestContract, 2, EscrowArgs("pot", 5000)));
  ASSERT_TRUE(r.success) << r.reason;
  EXPECT_EQ(chain.BalanceOf(alice.address()), a0 - 5000 - r.fee);

  Writer rel;
  rel.PutString("pot");
  crypto::Encode(rel, bob.address());
  rel.PutU64(3000);
  const Amount b0 = chain.BalanceOf(bob.address());
  r = chain.Run(chain.Call(alice, kTestContract, 3, rel.bytes()));
  ASSERT_TRUE(r.success) << r.reason;
  EXPECT_EQ(chain.BalanceOf(bob.address()), b0 + 3000);

  r = chain.Run(chain.Call(alice, kTestContract, 4, EscrowArgs("pot", 2000)));
  ASSERT_TRUE(r.success) << r.reason;
  auto audit = AuditSupply(chain.store());
  ASSERT_TRUE(audit.ok());
  EXPECT_EQ(audit->burned, 2000u);
  EXPECT_EQ(audit->escrows, 0u);

  // Releasing more than the escrow holds fails and changes nothing but the fee.
  r = chain.Run(chain.Call(alice, kTestContract, 4, EscrowArgs("pot", 1)));
  EXPECT_FALSE(r.success);
  EXPECT_EQ(r.reason, "escrow-insufficient");
  // Locking more than the balance.
  r = chain.Run(chain.Call(alice, kTestContract, 2, EscrowArgs("pot", kMax)));
  EXPECT_FALSE(r.success);
  EXPECT_EQ(r.reason, "tx-insufficient-funds");
}

TEST_F(VmTest, FailedCallRevertsStateAndEventsButChargesFee) {
  const Amount a0 = chain.BalanceOf(alice.address());
  Receipt r = chain.Run(chain.Call(alice, kTestContract, 5, {}));
  EXPECT_FALSE(r.success);
  EXPECT_EQ(r.reason, "test-failure");
  EXPECT_TRUE(r.events.empty());
  EXPECT_FALSE(chain.store().Get(ContractKey(kTestContract, B("reverted")))->has_value());
  EXPECT_EQ(chain.BalanceOf(alice.address()), a0 - r.fee);
  EXPECT_EQ(chain.AccountOf(alice.address()).nonce, 1u);

  // Out of gas: the whole limit is spent.
  r = chain.Run(chain.Call(alice, kTestContract, 6, {}, 100'000));
  EXPECT_FALSE(r.success);
  EXPECT_EQ(r.reason, "tx-out-of-gas");
  EXPECT_EQ(r.gas_used, 100'000u);

  r = chain.Run(chain.Call(alice, 4242, 1, {}));
  EXPECT_FALSE(r.success);
  EXPECT_EQ(r.reason, "tx-unknown-contract");
}

// ---- genesis and blocks ----------------------------------------------------------------------

TEST(Genesis, RejectsUnsortedOverflowAndNonEmpty) {
  ContractRegistry registry;
  Vm vm(registry, nullptr);
  Genesis g;
  g.allocations = {{TestKey(1).address(), kMax}, {TestKey(2).address(), 1}};
  std::sort(g.allocations.begin(), g.allocations.end(),
            [](const Allocation& a, const Allocation& b) { return a.address < b.address; });
  MemoryStateStore s1;
  EXPECT_EQ(vm.ApplyGenesis(s1, g).status().reason(), "genesis-supply-overflow");
  std::swap(g.allocations[0], g.allocations[1]);
  g.allocations[0].amount = g.allocations[1].amount = 1;
  MemoryStateStore s2;
  EXPECT_EQ(vm.ApplyGenesis(s2, g).status().reason(), "genesis-unsorted");
  std::swap(g.allocations[0], g.allocations[1]);
  MemoryStateStore s3;
  ASSERT_TRUE(vm.ApplyGenesis(s3, g).ok());
  EXPECT_EQ(vm.ApplyGenesis(s3, g).status().reason(), "genesis-not-empty");
  auto audit = AuditSupply(s3);
  ASSERT_TRUE(audit.ok());
  EXPECT_EQ(audit->supply, 2u);
  auto decoded = DecodeExact<Genesis>(EncodeToBytes(g));
  ASSERT_TRUE(decoded.ok());
  EXPECT_EQ(*decoded, g);
}

TEST_F(VmTest, BlocksAreValidatedAndDeterministic) {
  chain.Submit(chain.MakeTx(alice, TransferPayload{bob.address(), 7}));
  chain.Submit(chain.Call(bob, kTestContract, 1, PutArgs("a", "b")));
  chain.Mine();  // the chain's replica has applied it too (TestChain checks)
  ASSERT_EQ(chain.blocks().size(), 1u);
  const Block good = chain.blocks().back();

  // Replay from genesis on a fresh store: same tip.
  MemoryStateStore fresh;
  auto genesis_tip = chain.vm().ApplyGenesis(fresh, chain.genesis());
  ASSERT_TRUE(genesis_tip.ok());
  auto encoded = EncodeToBytes(good);
  auto decoded = DecodeExact<Block>(encoded);
  ASSERT_TRUE(decoded.ok());
  EXPECT_EQ(*decoded, good);

  auto expect_reject = [&](Block b, std::string_view reason, bool resign = true) {
    if (resign) {
      crypto::SecretKey proposer = TestKey(1000);
      ASSERT_TRUE(SignBlock(b.header, proposer).ok());
    }
    MemoryStateStore s;
    ASSERT_TRUE(chain.vm().ApplyGenesis(s, chain.genesis()).ok());
    const Hash256 before = *ComputeStateRoot(s);
    auto r = chain.vm().ApplyBlock(s, *genesis_tip, b);
    EXPECT_EQ(r.status().reason(), reason);
    EXPECT_EQ(*ComputeStateRoot(s), before) << "a rejected block must leave no trace";
  };
  Block b = good;
  b.header.signature[3] ^= 1;
  expect_reject(b, "block-bad-signature", false);
  b = good;
  b.header.height = 2;
  expect_reject(b, "block-bad-height");
  b = good;
  b.header.parent_hash.bytes[0] ^= 1;
  expect_reject(b, "block-bad-parent");
  b = good;
  b.header.chain_id = 8;
  expect_reject(b, "block-wrong-chain");
  b = good;
  b.header.time = chain.genesis().time - 1;
  expect_reject(b, "block-bad-time");
  b = good;
  b.header.state_root.bytes[0] ^= 1;
  expect_reject(b, "block-bad-state-root");
  b = good;
  b.header.receipt_root.bytes[0] ^= 1;
  expect_reject(b, "block-bad-receipt-root");
  b = good;
  b.txs.pop_back();
  expect_reject(b, "block-bad-tx-root");
  b = good;
  b.txs.push_back(b.txs[0]);  // a replayed transaction inside the block
  b.header.tx_root = TxRoot(b.txs);
  expect_reject(b, "tx-bad-nonce");

  auto applied = chain.vm().ApplyBlock(fresh, *genesis_tip, good);
  ASSERT_TRUE(applied.ok()) << applied.status().ToString();
  EXPECT_EQ(applied->tip, chain.tip());
  EXPECT_EQ(*ComputeStateRoot(fresh), *ComputeStateRoot(chain.store()));
}

}  // namespace
}  // namespace vt::vm
