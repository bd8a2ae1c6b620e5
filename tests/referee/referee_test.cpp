// Unit tests of the referee: encodings of its calls and records, and the
// stable reject reasons of every call that is not allowed.

#include <gtest/gtest.h>

#include "contract_vm/arbitration.h"
#include "contract_vm/graph_source.h"
#include "contract_vm/vm.h"
#include "crypto/sha256.h"
#include "kernels/certified.h"
#include "kernels/chunk_tree.h"
#include "kernels/rounding_log_tree.h"
#include "referee/messages.h"
#include "referee/records.h"
#include "referee/referee.h"
#include "tests/contract_vm/test_chain.h"
#include "tests/referee/history.h"
#include "tests/referee/scenario.h"

namespace vt::test {
namespace {

using referee::Method;

template <typename T>
void ExpectRoundTrip(const T& v) {
  const Bytes enc = EncodeToBytes(v);
  auto back = DecodeExact<T>(enc);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, v);
  Bytes longer = enc;
  longer.push_back(0);
  EXPECT_EQ(DecodeExact<T>(longer).status().reason(), "enc-trailing-bytes");
  if (!enc.empty()) {
    Bytes shorter(enc.begin(), enc.end() - 1);
    EXPECT_FALSE(DecodeExact<T>(shorter).ok());
  }
}

TEST(RefereeMessages, EncodingsRoundTripAndAreStrict) {
  const TinyJob tiny = MakeTinyJob(10, 3, kernels::Mode::kRounded);
  auto h = Train(tiny, {});
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  ExpectRoundTrip(referee::PostBountyArgs{tiny.job, tiny.initial_state, 1, 2, 3, 4, 5, 6, Hash256{}, 0});
  ExpectRoundTrip(referee::BountyIdArgs{77});
  ExpectRoundTrip(MakeCommit(*h, 3, TestKey(2)));
  EXPECT_FALSE(MakeCommit(*h, 3, TestKey(2)).log_bundle.IsZero());
  ExpectRoundTrip(MakeOpenGame(*h, 3));
  ExpectRoundTrip(referee::RevealChildrenArgs{5, h->checkpoint_tree.Children({1, 0})});
  ExpectRoundTrip(MakeStepRoot(*h, 1, 2));
  ExpectRoundTrip(MakeNodeRoot(*h, 1, 2, 4));
  ExpectRoundTrip(referee::RevealRecordArgs{1, h->records[4][2]});
  const referee::ArbitrateArgs arb = MakeArbitrate(tiny, *h, *h, 1, 0, 4, 2);
  ASSERT_TRUE(arb.log_proofs.has_value());
  ExpectRoundTrip(arb);
  ExpectRoundTrip(*DecodeExact<vm::ArbitrationPayload>(arb.payload));
  ExpectRoundTrip(referee::GameIdArgs{9});
  ExpectRoundTrip(referee::WalkDoneEvent{1, referee::Level::kNode, 4});
  ExpectRoundTrip(referee::GameResolvedEvent{1, referee::GameResult::kBothLost, "timeout"});

  referee::Game g;
  g.id = 4;
  g.records[1] = h->records[0][0];
  g.clocks[0] = {true, 5, 6};
  g.rounds = {1, 2, 3};
  ExpectRoundTrip(g);
  referee::Bounty b;
  b.open_games = 3;
  b.min_bond = 4;
  b.arbitration_allowance = 5;
  b.commitment = MakeCommit(*h, 0, TestKey(2)).commitment;
  ExpectRoundTrip(b);
  referee::WalkTranscript t;
  t.leaf_count = 5;
  t.reveals[0] = {h->checkpoint_tree.Children({1, 0})};
  ExpectRoundTrip(t);
  // A dot step's final move whose b factor is a padding tap (+0, nothing
  // opened) and whose a factor is of the batch (its example instead): both
  // openings empty, and they must still travel.
  referee::RevealStepArgs step;
  step.game_id = 3;
  step.p_m_proof = h->checkpoint_tree.Prove(0);
  step.next_proof = h->checkpoint_tree.Prove(1);
  step.a.chunk = kernels::OpenChunk(kernels::Tensor({4}, {1, 2, 3, 4}), 0, 1);
  ExpectRoundTrip(step);
  step.a = {};
  ExpectRoundTrip(step);
  // Certified mode's leaves: exact partial sums (verify::PartialLeaf), in the
  // moves and in the element state; a leaf tag that names no kind is refused.
  kernels::ExactAccumulator acc;
  acc.AddProduct(3.0f, -0x1p-30f);
  step.p_m = acc.Encode();
  acc.Add(1e30f);
  step.next = acc.Encode();
  ExpectRoundTrip(step);
  referee::PartialsRootArgs root{7, Hash256{}, Hash256{}, acc.Encode(), step.p_m_proof, step.next_proof};
  ExpectRoundTrip(root);
  referee::ElementGame e;
  e.p_k = {acc.Encode(), 1.5f};
  e.step_revealed = {true, false};
  e.p_m[0] = step.p_m;
  e.next[0] = step.next;
  e.p_m_proof[0] = step.p_m_proof;
  e.next_proof[0] = step.next_proof;
  e.log_hash.bytes[0] = 5;
  e.tau_q16 = 77;
  ExpectRoundTrip(e);
  Bytes bad_tag = EncodeToBytes(root);
  bad_tag[8 + 32 + 32] = 4;  // after the game id, root and top
  EXPECT_EQ(DecodeExact<referee::PartialsRootArgs>(bad_tag).status().reason(), "enc-unknown-enum");
  // Rounded mode: fp64 partial results (tag 2), the descent's log chain, the epilogue's log opening.
  referee::PartialsRootArgs rounded = root;
  rounded.p_k = verify::RoundedPartial{-0.0, 0x1p-1074, 3.5};
  ExpectRoundTrip(rounded);
  EXPECT_EQ(EncodeToBytes(rounded)[8 + 32 + 32], 2);
  // A rounded sum's leaf: one fp64 value (tag 3).
  referee::PartialsRootArgs sum = root;
  sum.p_k = -0x1.8p-1022;
  ExpectRoundTrip(sum);
  EXPECT_EQ(EncodeToBytes(sum)[8 + 32 + 32], 3);
  EXPECT_EQ(EncodeToBytes(rounded).size(), EncodeToBytes(root).size() - 81 + 24);
  referee::ChunkRootArgs descent{7, Hash256{}, Hash256{}, std::nullopt};
  ExpectRoundTrip(descent);
  descent.log = referee::NodeLogProof{};
  descent.log->log_hash.bytes[3] = 9;
  descent.log->chain.node_in_step = descent.log->chain.step_in_interval = step.p_m_proof;
  descent.log->chain.interval_in_root = step.next_proof;
  ExpectRoundTrip(descent);
  referee::OpenElementArgs epilogue;
  epilogue.log = verify::LogOpening{};
  epilogue.log->at = kernels::LogEntryProof{kernels::LogEntry{12, true}, step.next_proof};
  ExpectRoundTrip(epilogue);
}

// A chain with the referee, a posted bounty of the tiny job, and helpers.
class RefereeTest : public ::testing::Test {
 protected:
  RefereeTest() : arbiter(graphs) { registry.Register(referee::kRefereeContractId, &referee_contract); }

  vm::Transaction Call(const crypto::SecretKey& k, Method m, Bytes args) {
    return chain.Call(k, referee::kRefereeContractId, static_cast<std::uint16_t>(m), std::move(args));
  }
  template <typename Args>
  vm::Receipt Run(const crypto::SecretKey& k, Method m, const Args& args) {
    return chain.Run(Call(k, m, EncodeToBytes(args)));
  }
  referee::PostBountyArgs Post() const {
    return referee::PostBountyArgs{tiny.job, tiny.initial_state, 1000, 2 * bond, bond, 50, 5, 20, Hash256{}, 0};
  }

  referee::Referee referee_contract;
  vm::KernelsGraphSource graphs;
  vm::Arbiter arbiter;
  vm::ContractRegistry registry;
  TestChain chain{registry, &arbiter, 4, 1'000'000'000'000};
  TinyJob tiny = MakeTinyJob(10, 3, kernels::Mode::kRepops);
  vm::Amount bond = MinimumBond(tiny.job);  // the challenger's; the solver's is twice it
  crypto::SecretKey client = TestKey(1), solver = TestKey(2), challenger = TestKey(3), stranger = TestKey(4);
};

TEST_F(RefereeTest, BountyCallsRejectWithStableReasons) {
  auto post = Post();
  post.job.mode = 0;  // native
  EXPECT_EQ(Run(client, Method::kPostBounty, post).reason, "bounty-bad-mode");
  post = Post();
  post.reward = 0;
  EXPECT_EQ(Run(client, Method::kPostBounty, post).reason, "bounty-bad-reward");
  post = Post();
  post.challenger_bond = 0;
  EXPECT_EQ(Run(client, Method::kPostBounty, post).reason, "bounty-bad-bond");
  post = Post();
  post.clock_budget = 0;
  EXPECT_EQ(Run(client, Method::kPostBounty, post).reason, "bounty-bad-window");
  post = Post();
  post.job.num_steps = 0;  // the job decoder validates it
  EXPECT_EQ(Run(client, Method::kPostBounty, post).reason, "referee-malformed-args");
  post = Post();
  post.reward = std::numeric_limits<vm::Amount>::max();
  EXPECT_EQ(Run(client, Method::kPostBounty, post).reason, "tx-insufficient-funds");
  EXPECT_EQ(chain.Run(Call(client, Method::kPostBounty, {1, 2, 3})).reason, "referee-malformed-args");
  EXPECT_EQ(chain.Run(chain.Call(client, referee::kRefereeContractId, 99, {})).reason, "referee-unknown-method");
  EXPECT_EQ(Run(solver, Method::kClaim, referee::BountyIdArgs{0}).reason, "bounty-unknown");

  ASSERT_TRUE(Run(client, Method::kPostBounty, Post()).success);
  EXPECT_EQ(Run(client, Method::kRefund, referee::BountyIdArgs{0}).reason, "bounty-not-refundable");
  EXPECT_EQ(Run(stranger, Method::kCommit, MakeCommit(*Train(tiny, {}), 0, stranger)).reason, "bounty-not-claimed");
  ASSERT_TRUE(Run(solver, Method::kClaim, referee::BountyIdArgs{0}).success);
  EXPECT_EQ(Run(stranger, Method::kClaim, referee::BountyIdArgs{0}).reason, "bounty-not-open");

  auto history = Train(tiny, {});
  ASSERT_TRUE(history.ok());
  EXPECT_EQ(Run(stranger, Method::kCommit, MakeCommit(*history, 0, stranger)).reason, "bounty-not-solver");
  auto commit = MakeCommit(*history, 0, solver);
  commit.commitment.signature[5] ^= 1;
  EXPECT_EQ(Run(solver, Method::kCommit, commit).reason, "commit-bad-signature");
  commit = MakeCommit(*history, 0, stranger);  // signed by another key
  EXPECT_EQ(Run(solver, Method::kCommit, commit).reason, "commit-bad-signer");
  commit = MakeCommit(*history, 0, solver);
  commit.first_proof = history->checkpoint_tree.Prove(1);
  EXPECT_EQ(Run(solver, Method::kCommit, commit).reason, "commit-bad-first-leaf");
  commit = MakeCommit(*history, 0, solver);
  commit.checkpoint_top.bytes[0] ^= 1;
  EXPECT_EQ(Run(solver, Method::kCommit, commit).reason, "commit-bad-top");
  // A commitment whose final hash is not its last checkpoint.
  History wrong_final = *history;
  wrong_final.h.back().bytes[0] ^= 1;
  EXPECT_EQ(Run(solver, Method::kCommit, MakeCommit(wrong_final, 0, solver)).reason, "commit-bad-last-leaf");
  History with_log = *history;
  with_log.log_root.bytes[0] = 1;
  EXPECT_EQ(Run(solver, Method::kCommit, MakeCommit(with_log, 0, solver)).reason, "commit-bad-log-root");
  commit = MakeCommit(*history, 0, solver);
  commit.log_bundle.bytes[3] = 7;  // a log bundle in a repops job
  EXPECT_EQ(Run(solver, Method::kCommit, commit).reason, "commit-bad-log-bundle");
  ASSERT_TRUE(Run(solver, Method::kCommit, MakeCommit(*history, 0, solver)).success);
  EXPECT_EQ(Run(solver, Method::kCommit, MakeCommit(*history, 0, solver)).reason, "bounty-not-claimed");

  // Games.
  EXPECT_EQ(Run(challenger, Method::kOpenGame, MakeOpenGame(*history, 0)).reason, "game-same-root");
  auto liar = Train(tiny, {Lie{LieKind::kOutput, 4, 6}});
  ASSERT_TRUE(liar.ok());
  EXPECT_EQ(Run(solver, Method::kOpenGame, MakeOpenGame(*liar, 0)).reason, "game-solver-cannot-challenge");
  auto open = MakeOpenGame(*liar, 0);
  open.first_proof = liar->checkpoint_tree.Prove(2);
  EXPECT_EQ(Run(challenger, Method::kOpenGame, open).reason, "game-bad-first-leaf");
  EXPECT_EQ(Run(client, Method::kFinalize, referee::BountyIdArgs{0}).reason, "bounty-challenge-window-open");
  chain.MineUntil(referee::ReadBounty(chain.store(), 0)->challenge_deadline);
  EXPECT_EQ(Run(challenger, Method::kOpenGame, MakeOpenGame(*liar, 0)).reason, "bounty-challenge-window-over");
  ASSERT_TRUE(Run(stranger, Method::kFinalize, referee::BountyIdArgs{0}).success);  // anyone may finalize
  EXPECT_EQ(Run(stranger, Method::kFinalize, referee::BountyIdArgs{0}).reason, "bounty-not-committed");
  EXPECT_EQ(referee::ReadBounty(chain.store(), 0)->state, referee::BountyState::kFinalized);
}

TEST_F(RefereeTest, GameMovesRejectWithStableReasonsAndClocksRun) {
  auto honest = Train(tiny, {});
  auto liar = Train(tiny, {Lie{LieKind::kOutput, 4, 6}});
  ASSERT_TRUE(honest.ok() && liar.ok());
  ASSERT_TRUE(Run(client, Method::kPostBounty, Post()).success);
  ASSERT_TRUE(Run(solver, Method::kClaim, referee::BountyIdArgs{0}).success);
  ASSERT_TRUE(Run(solver, Method::kCommit, MakeCommit(*honest, 0, solver)).success);
  ASSERT_TRUE(Run(challenger, Method::kOpenGame, MakeOpenGame(*liar, 0)).success);
  const crypto::NodeReveal top = honest->checkpoint_tree.Children({3, 0});

  EXPECT_EQ(Run(stranger, Method::kRevealChildren, referee::RevealChildrenArgs{0, top}).reason, "game-not-a-party");
  EXPECT_EQ(Run(solver, Method::kRevealChildren, referee::RevealChildrenArgs{7, top}).reason, "game-unknown");
  crypto::NodeReveal bad = top;
  bad.left.bytes[0] ^= 1;
  EXPECT_EQ(Run(solver, Method::kRevealChildren, referee::RevealChildrenArgs{0, bad}).reason, "walk-bad-children");
  EXPECT_EQ(Run(solver, Method::kPostStepRoot, MakeStepRoot(*honest, 0, 1)).reason, "game-wrong-phase");
  EXPECT_EQ(Run(solver, Method::kClaimTimeout, referee::GameIdArgs{0}).reason, "game-no-timeout");
  ASSERT_TRUE(Run(solver, Method::kRevealChildren, referee::RevealChildrenArgs{0, top}).success);
  EXPECT_EQ(Run(solver, Method::kRevealChildren, referee::RevealChildrenArgs{0, top}).reason, "game-not-your-turn");

  // The challenger's clock has run since the opening; a move after it ran
  // out is refused, and anyone may then claim the timeout.
  auto g = referee::ReadGame(chain.store(), 0);
  ASSERT_TRUE(g.ok());
  EXPECT_FALSE(g->clocks[0].owes);
  EXPECT_TRUE(g->clocks[1].owes);
  chain.MineUntil(g->clocks[1].owes_since + g->clocks[1].left + 1);
  const crypto::NodeReveal liar_top = liar->checkpoint_tree.Children({3, 0});
  EXPECT_EQ(Run(challenger, Method::kRevealChildren, referee::RevealChildrenArgs{0, liar_top}).reason,
            "game-clock-expired");
  const vm::Amount solver_before = chain.BalanceOf(solver.address());
  const vm::Receipt claim = Run(stranger, Method::kClaimTimeout, referee::GameIdArgs{0});
  ASSERT_TRUE(claim.success) << claim.reason;
  g = referee::ReadGame(chain.store(), 0);
  EXPECT_EQ(g->result, referee::GameResult::kSolverWon);
  EXPECT_EQ(g->reason, "timeout");
  EXPECT_EQ(chain.BalanceOf(solver.address()), solver_before + bond / 2);  // half the challenger bond
  EXPECT_EQ(Run(stranger, Method::kClaimTimeout, referee::GameIdArgs{0}).reason, "game-resolved");
}

// Arbitration refuses inputs that do not open against the agreed hashes,
// and a log chain that does not lead to the commitment.
TEST(RefereeArbitration, RejectsBadOpenings) {
  for (kernels::Mode mode : {kernels::Mode::kRepops, kernels::Mode::kRounded}) {
    SCOPED_TRACE(kernels::ModeName(mode));
    ScenarioConfig c;
    c.mode = mode;
    c.clock_budget = 30;  // room for the refused attempts below
    c.solver.lies = {Lie{LieKind::kOutput, 4, 6}};
    AgentPlan passive;
    passive.arbitrates = false;
    c.challengers = {passive};
    ScenarioDriver d(c);
    d.Start();
    for (int i = 0; i < 100; ++i) {
      auto g = referee::ReadGame(d.chain().store(), 0);
      ASSERT_TRUE(g.ok());
      if (g->phase == referee::GamePhase::kArbitration) break;
      ASSERT_TRUE(d.Step());
    }
    auto g = referee::ReadGame(d.chain().store(), 0);
    ASSERT_EQ(g->phase, referee::GamePhase::kArbitration);
    EXPECT_EQ(g->step, 4u);
    EXPECT_EQ(g->node_index, 6u);
    const History& honest = d.history(2);
    const History& solver_h = d.history(1);
    const crypto::SecretKey& who = d.key(2);
    auto run = [&](const referee::ArbitrateArgs& a) {
      return d.chain().Run(d.chain().Call(who, referee::kRefereeContractId,
                                          static_cast<std::uint16_t>(Method::kArbitrate), EncodeToBytes(a)));
    };
    const referee::ArbitrateArgs good = MakeArbitrate(d.tiny(), honest, solver_h, 0, 1, 4, 6);
    auto payload = *DecodeExact<vm::ArbitrationPayload>(good.payload);

    auto with = [&](auto&& change) {
      referee::ArbitrateArgs a = good;
      vm::ArbitrationPayload p = payload;
      change(a, p);
      a.payload = EncodeToBytes(p);
      return run(a);
    };
    EXPECT_EQ(with([](auto&, vm::ArbitrationPayload& p) { p.inputs.pop_back(); }).reason, "arb-bad-input-count");
    EXPECT_EQ(with([](auto&, vm::ArbitrationPayload& p) {
                for (auto& in : p.inputs)
                  if (!in.tensor.empty()) {
                    in.tensor.back() ^= 1;
                    break;
                  }
              }).reason,
              std::string("arb-bad-input-") + "tensor");
    EXPECT_EQ(with([](auto&, vm::ArbitrationPayload& p) { p.header.step += 1; }).reason, "arb-bad-header");
    EXPECT_EQ(with([](auto&, vm::ArbitrationPayload& p) {
                for (auto& in : p.inputs)
                  if (in.proof) {
                    in.proof->siblings.at(0).bytes[0] ^= 1;
                    break;
                  }
              }).reason.rfind("arb-bad-", 0),
              0u);
    EXPECT_EQ(with([](referee::ArbitrateArgs& a, auto&) { a.node_root_of = 2; }).reason, "referee-malformed-args");
    if (mode == kernels::Mode::kRounded) {
      EXPECT_EQ(with([](referee::ArbitrateArgs& a, auto&) { a.log_proofs.reset(); }).reason, "arb-bad-log-proof");
      EXPECT_EQ(with([](referee::ArbitrateArgs& a, auto&) { a.log_proofs->step_log_root.bytes[0] ^= 1; }).reason,
                "arb-bad-log-proof");
      EXPECT_EQ(with([](auto&, vm::ArbitrationPayload& p) { p.log = {1, 2, 3}; }).reason, "arb-bad-log");
    } else {
      EXPECT_EQ(with([](auto&, vm::ArbitrationPayload& p) { p.log = {1}; }).reason, "arb-bad-log");
    }
    // Nothing above changed the game; the good request settles it.
    EXPECT_EQ(referee::ReadGame(d.chain().store(), 0)->phase, referee::GamePhase::kArbitration);
    const vm::Receipt ok = run(good);
    ASSERT_TRUE(ok.success) << ok.reason;
    EXPECT_EQ(referee::ReadGame(d.chain().store(), 0)->result, referee::GameResult::kChallengerWon);
  }
}

}  // namespace
}  // namespace vt::test
