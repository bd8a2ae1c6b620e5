// Blob availability rules (referee/blob_rules.h lists, node/blob_rules.h
// checks): which blobs a transaction names and what each must hold. Real
// blobs from a real rounded-mode run; every bad, truncated, substituted or
// oversized blob is refused, and whatever is accepted reproduces the
// commitment (so a challenger can always replay from it).

#include <gtest/gtest.h>

#include <random>

#include "contract_vm/gas.h"
#include "crypto/sha256.h"
#include "node/blob_rules.h"
#include "referee/blob_rules.h"
#include "tests/support/test_seed.h"
#include "tests/worker/train_fixtures.h"
#include "worker/checkpoint_store.h"
#include "worker/file_io.h"
#include "worker/log_bundle.h"

namespace vt::node {
namespace {

using referee::BlobKind;
using referee::BlobRequirement;

// A rounded-mode solver's run and the commit call naming its two blobs.
struct Published {
  worker::test::SolverRun run{worker::test::Family::kMlp, "rounded"};
  Bytes state_file;  // the final checkpoint, as the store wrote it
  Bytes bundle;
  referee::CommitArgs commit;

  Published() {
    auto file = worker::ReadFile(run.Run().checkpoints().PathFor(run.commitment.final_state_hash));
    auto b = worker::ExportLogBundle(run.Run());
    if (!file.ok() || !b.ok()) throw std::runtime_error("blobs");
    state_file = *file;
    bundle = *b;
    commit.bounty_id = 1;
    commit.commitment = run.commitment;
    const crypto::MerkleTree tree = worker::CheckpointTree(run.manifest);
    commit.checkpoint_top = tree.top();
    commit.first_proof = tree.Prove(0);
    commit.last_proof = tree.Prove(tree.leaf_count() - 1);
    commit.state_blob = crypto::Sha256Digest(state_file);
    commit.state_blob_bytes = state_file.size();
    commit.log_bundle = crypto::Sha256Digest(bundle);
    commit.log_bundle_bytes = bundle.size();
  }
  std::vector<BlobRequirement> Blobs() const { return *referee::BlobsOf(commit); }
  BlobRequirement Of(BlobKind kind) const {
    for (const auto& r : Blobs())
      if (r.kind == kind) return r;
    throw std::runtime_error("no such blob");
  }
};

const Published& Fixture() {
  static const Published p;
  return p;
}

// The requirement re-declared for other bytes (their hash and length), so
// that the content rule itself is what judges them.
BlobRequirement For(BlobRequirement r, const Bytes& bytes) {
  r.hash = crypto::Sha256Digest(bytes);
  r.bytes = bytes.size();
  return r;
}

vm::Transaction Call(referee::Method method, Bytes args) {
  vm::Transaction tx;
  tx.payload = vm::CallPayload{referee::kRefereeContractId, static_cast<std::uint16_t>(method), std::move(args)};
  return tx;
}

TEST(BlobRules, ACommitNamesItsFinalStateAndItsLogs) {
  const Published& p = Fixture();
  const auto named = referee::NamedBlobs(Call(referee::Method::kCommit, EncodeToBytes(p.commit)));
  ASSERT_EQ(named.size(), 2u);
  EXPECT_EQ(named[0].field, "state_blob");
  EXPECT_EQ(named[0].kind, BlobKind::kCheckpoint);
  EXPECT_EQ(named[0].state_hash, p.run.commitment.final_state_hash);
  EXPECT_EQ(named[0].bytes, p.state_file.size());
  EXPECT_EQ(named[1].field, "log_bundle");
  EXPECT_EQ(named[1].kind, BlobKind::kLogBundle);
  EXPECT_EQ(named[1].commitment, p.run.commitment);
  EXPECT_EQ(referee::BlobGas(named), (p.state_file.size() + p.bundle.size()) * vm::kGas.blob_byte);
  std::cout << "final checkpoint blob " << p.state_file.size() << " bytes, log bundle " << p.bundle.size()
            << " bytes\n";

  // Honest blobs pass their rules.
  for (const BlobRequirement& r : named)
    EXPECT_TRUE(VerifyBlob(r, r.kind == BlobKind::kCheckpoint ? p.state_file : p.bundle).ok()) << r.field;
  auto state = DecodeStateBlob(p.state_file, p.run.commitment.final_state_hash);
  ASSERT_TRUE(state.ok()) << state.status().ToString();
  EXPECT_EQ(worker::StateHash(*state), p.run.commitment.final_state_hash);

  // A block names what its transactions name, in order.
  vm::Block block;
  block.txs.push_back(Call(referee::Method::kClaim, EncodeToBytes(referee::BountyIdArgs{1})));
  block.txs.push_back(Call(referee::Method::kCommit, EncodeToBytes(p.commit)));
  vm::Transaction transfer;
  transfer.payload = vm::TransferPayload{};
  block.txs.push_back(transfer);
  EXPECT_EQ(BlockBlobs(block), named);
}

TEST(BlobRules, PostBountyNamesItsInitialStateOnlyWhenGiven) {
  const Published& p = Fixture();
  referee::PostBountyArgs post;
  post.job = p.run.job.job.spec;
  post.initial_state = p.run.manifest.checkpoints.front().state_hash;
  EXPECT_TRUE(referee::NamedBlobs(Call(referee::Method::kPostBounty, EncodeToBytes(post))).empty());

  auto h0 = worker::ReadFile(p.run.Run().checkpoints().PathFor(post.initial_state));
  ASSERT_TRUE(h0.ok());
  post.initial_blob = crypto::Sha256Digest(*h0);
  post.initial_blob_bytes = h0->size();
  const auto named = referee::NamedBlobs(Call(referee::Method::kPostBounty, EncodeToBytes(post)));
  ASSERT_EQ(named.size(), 1u);
  EXPECT_EQ(named[0].field, "initial_blob");
  EXPECT_EQ(named[0].state_hash, post.initial_state);
  EXPECT_TRUE(VerifyBlob(named[0], *h0).ok());
  // The final state is not the initial state.
  EXPECT_EQ(VerifyBlob(For(named[0], p.state_file), p.state_file).reason(), "blob-invalid");
}

TEST(BlobRules, BadDeclarationsNameNothingAndTheRefereeRefusesThem) {
  const Published& p = Fixture();
  auto refused = [](const referee::CommitArgs& a) {
    auto r = referee::BlobsOf(a);
    EXPECT_TRUE(referee::NamedBlobs(Call(referee::Method::kCommit, EncodeToBytes(a))).empty());
    return r.ok() ? std::string("ok") : r.status().reason();
  };
  referee::CommitArgs a = p.commit;
  a.state_blob = Hash256{};
  a.state_blob_bytes = 0;
  EXPECT_EQ(refused(a), "commit-no-state-blob") << "the client must get its model";
  a = p.commit;
  a.state_blob_bytes = 0;
  EXPECT_EQ(refused(a), "blob-bad-size");
  a = p.commit;
  a.log_bundle_bytes = referee::kMaxBlobBytes + 1;
  EXPECT_EQ(refused(a), "blob-bad-size") << "oversized";
  a = p.commit;
  a.log_bundle = Hash256{};
  EXPECT_EQ(refused(a), "blob-bad-size") << "a length without a blob";
  a.log_bundle_bytes = 0;
  EXPECT_EQ(referee::BlobsOf(a)->size(), 1u) << "repops: the final state only";
  // Calls that name no blobs, and undecodable arguments.
  EXPECT_TRUE(referee::NamedBlobs(Call(referee::Method::kFinalize, EncodeToBytes(referee::BountyIdArgs{1}))).empty());
  EXPECT_TRUE(referee::NamedBlobs(Call(referee::Method::kCommit, Bytes{1, 2, 3})).empty());
}

TEST(BlobRules, WrongStateWrongLengthAndOversizedBlobsAreRefused) {
  const Published& p = Fixture();
  const BlobRequirement state = p.Of(BlobKind::kCheckpoint);
  // Another checkpoint of the same run (h_0) is not the final state.
  auto h0 = worker::ReadFile(p.run.Run().checkpoints().PathFor(p.run.manifest.checkpoints.front().state_hash));
  ASSERT_TRUE(h0.ok());
  Status s = VerifyBlob(For(state, *h0), *h0);
  EXPECT_EQ(s.reason(), "blob-invalid");
  EXPECT_NE(s.detail().find("checkpoint-corrupt"), std::string::npos) << s.ToString();
  // Bytes other than the named ones, or of another length than declared.
  EXPECT_NE(VerifyBlob(state, *h0).detail().find("blob-wrong-size"), std::string::npos);
  BlobRequirement wrong_len = state;
  wrong_len.bytes += 1;
  EXPECT_NE(VerifyBlob(wrong_len, p.state_file).detail().find("blob-wrong-size"), std::string::npos);
  Bytes flipped = p.state_file;
  flipped[flipped.size() / 2] ^= 1;
  EXPECT_NE(VerifyBlob(state, flipped).detail().find("blob-hash-mismatch"), std::string::npos);
  // A header claiming a payload beyond what its length may decode to is
  // refused before anything is decompressed.
  EXPECT_EQ(referee::MaxDecodedBytes(10), referee::kMinDecodedAllowance);
  EXPECT_EQ(referee::MaxDecodedBytes(referee::kMaxBlobBytes), referee::kMaxBlobDecodedBytes);
  EXPECT_EQ(referee::MaxDecodedBytes(std::uint64_t{8} << 20), (std::uint64_t{8} << 20) * referee::kMaxBlobExpansion);
  Bytes bomb = p.state_file;
  const std::uint64_t claim = referee::MaxDecodedBytes(bomb.size()) + 1;
  for (int i = 0; i < 8; ++i) bomb[48 + static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(claim >> (8 * i));
  s = VerifyBlob(For(state, bomb), bomb);
  EXPECT_EQ(s.reason(), "blob-invalid");
  EXPECT_NE(s.detail().find("allowed"), std::string::npos) << s.ToString();
}

TEST(BlobRules, EveryTruncationIsRefused) {
  const Published& p = Fixture();
  for (const BlobRequirement& r : p.Blobs()) {
    const Bytes& full = r.kind == BlobKind::kCheckpoint ? p.state_file : p.bundle;
    for (std::size_t len = 0; len < full.size(); len += 1 + len / 13) {
      const Bytes cut(full.begin(), full.begin() + static_cast<std::ptrdiff_t>(len));
      EXPECT_EQ(VerifyBlob(For(r, cut), cut).reason(), "blob-invalid") << r.field << " cut to " << len;
    }
  }
}

TEST(BlobRules, ABundleOfAnotherRunIsRefused) {
  const Published& p = Fixture();
  // Another honest rounded run (another job: more steps) — a valid bundle,
  // but not the one this commitment signs.
  worker::test::TempDir dir;
  auto other_job = worker::test::MakeJob(worker::test::Family::kMlp, "rounded", 6, 2);
  auto summary = worker::Train(other_job.job, other_job.dataset, dir.path(), {});
  ASSERT_TRUE(summary.ok());
  auto other = worker::ExportLogBundle(std::move(worker::RunDir::Open(dir.path(), false)).value());
  ASSERT_TRUE(other.ok());
  Status s = VerifyBlob(For(p.Of(BlobKind::kLogBundle), *other), *other);
  EXPECT_EQ(s.reason(), "blob-invalid");
  EXPECT_NE(s.detail().find("log-bundle-mismatch"), std::string::npos) << s.ToString();
  // The commitment of that run accepts it (the rule is about this pairing).
  auto c = worker::BuildCommitment(1, other_job.job.spec, summary->manifest);
  ASSERT_TRUE(c.ok());
  BlobRequirement theirs = For(p.Of(BlobKind::kLogBundle), *other);
  theirs.commitment = *c;
  EXPECT_TRUE(VerifyBlob(theirs, *other).ok());
}

// Property: a random corruption of either blob (re-declared so that only the
// content rule judges it) is refused, or else it still reproduces exactly
// what the commitment signs — the final state bit for bit, or the same
// checkpoint hashes and logs — so a challenger can always replay from it.
TEST(BlobRules, RandomCorruptionIsRefusedOrHarmless) {
  const Published& p = Fixture();
  std::mt19937_64 rng(test::TestSeed());
  auto original = worker::DecodeLogBundle(p.bundle);
  ASSERT_TRUE(original.ok());
  int refused = 0, accepted = 0;
  for (int trial = 0; trial < 300; ++trial) {
    const bool bundle = trial % 2 == 1;
    const BlobRequirement r = p.Of(bundle ? BlobKind::kLogBundle : BlobKind::kCheckpoint);
    Bytes bytes = bundle ? p.bundle : p.state_file;
    const int flips = 1 + static_cast<int>(rng() % 4);
    for (int f = 0; f < flips; ++f) bytes[rng() % bytes.size()] ^= static_cast<std::uint8_t>(1 + rng() % 255);
    if (Status s = VerifyBlob(For(r, bytes), bytes); !s.ok()) {
      EXPECT_EQ(s.reason(), "blob-invalid");
      ++refused;
      continue;
    }
    ++accepted;
    if (bundle) {
      auto decoded = worker::DecodeLogBundle(bytes);
      ASSERT_TRUE(decoded.ok());
      EXPECT_EQ(decoded->manifest.CheckpointHashes(), original->manifest.CheckpointHashes());
      EXPECT_EQ(decoded->manifest.IntervalLogHashes(), original->manifest.IntervalLogHashes());
    } else {
      auto state = DecodeStateBlob(bytes, r.state_hash);
      ASSERT_TRUE(state.ok());
      EXPECT_EQ(worker::StateHash(*state), p.run.commitment.final_state_hash);
    }
  }
  std::cout << refused << " corruptions refused, " << accepted << " accepted as harmless\n";
  EXPECT_GT(refused, 250);
}

}  // namespace
}  // namespace vt::node
