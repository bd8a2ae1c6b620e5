// Batch openings (verify/batch_opening.h): the values of a step's batch that
// an element rule reads, opened from a few examples against the dataset
// commitment at the positions the header of h_t puts them — the same rules
// as whole node arbitration's batch. Honest openings give exactly the batch
// the step trained on (a batch that runs on into the next epoch included);
// every forged piece is refused with its reason; the data order is paid for
// before it is built.

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "crypto/merkle.h"
#include "kernels/graph/model.h"
#include "kernels/tensor_codec.h"
#include "protocol/data_order.h"
#include "protocol/state.h"
#include "verify/arbitrate.h"
#include "verify/batch_opening.h"
#include "verify/graph_source.h"

namespace vt::verify {
namespace {

namespace graph = kernels::graph;

constexpr std::uint64_t kExamples = 20;
constexpr std::uint32_t kBatch = 4;
constexpr std::int64_t kWidth = 6;

// Counts what is charged, per cost kind.
class CountingMeter final : public Meter {
 public:
  Status Charge(Cost cost, std::uint64_t amount) override {
    charged[static_cast<std::size_t>(cost)] += amount;
    return Status::Ok();
  }
  std::uint64_t charged[16] = {};
};

struct Fixture {
  protocol::JobSpec job;
  std::vector<Bytes> leaves;
  std::vector<std::vector<float>> inputs;  // per dataset example
  std::vector<float> labels;
  crypto::MerkleTree data_tree;
  protocol::StateHeader header;
  Hash256 state_hash;
  crypto::MerkleProof header_proof;
  std::vector<ExampleOpening> batch;  // the step's B examples, in batch order
  std::vector<std::uint64_t> indices;

  Fixture() {
    graph::ModelSpec model;
    model.arch = graph::MlpSpec{kWidth, {8}, 3, graph::Activation::kRelu};
    graph::OptimizerSpec opt;
    opt.kind = graph::OptimizerKind::kSgd;
    job.model = graph::EncodeModelSpec(model);
    job.optimizer = graph::EncodeOptimizerSpec(opt);
    job.dataset_size = kExamples;
    job.batch_size = kBatch;
    job.seed = 7;
    std::mt19937_64 rng(11);
    for (std::uint64_t e = 0; e < kExamples; ++e) {
      std::vector<float> x(kWidth);
      for (float& v : x) v = static_cast<float>(static_cast<std::int64_t>(rng() >> 44)) * 0x1p-12f;
      const float label = static_cast<float>(rng() % 3);
      Bytes leaf = kernels::EncodeTensor(kernels::Tensor({kWidth}, x));
      const Bytes target = kernels::EncodeTensor(kernels::Tensor(kernels::Shape{}, {label}));
      leaf.insert(leaf.end(), target.begin(), target.end());
      leaves.push_back(std::move(leaf));
      inputs.push_back(std::move(x));
      labels.push_back(label);
    }
    data_tree = crypto::MerkleTree::FromLeafBytes(leaves);
    job.dataset_root = data_tree.root();
    // Step 3 starts two examples before its epoch ends: the batch runs on into the next.
    header.step = 3;
    header.data_epoch = 1;
    header.data_offset = kExamples - 2;
    header.tensor_names = {"a", "b"};
    const std::vector<Hash256> state_leaves{Hash256{}, Hash256{}, protocol::StateHeaderHash(header)};
    const crypto::MerkleTree state_tree = crypto::MerkleTree::FromLeafHashes(state_leaves);
    state_hash = state_tree.root();
    header_proof = state_tree.Prove(2);
    indices = *protocol::BatchIndices(job.seed, kExamples, header.data_epoch, header.data_offset, kBatch);
    for (std::uint64_t i : indices) batch.push_back(ExampleOpening{leaves[i], data_tree.Prove(i)});
  }

  BatchCase Case() const { return BatchCase{&job, header.step, state_hash, 2}; }
  BatchOpening Open(std::vector<std::uint64_t> positions) const {
    return OpenBatch(header, header_proof, batch, positions);
  }
};

const kernels::Shape kInputs{kBatch, kWidth}, kTargets{kBatch};

TEST(BatchOpening, HonestOpeningsGiveTheStepsBatch) {
  const Fixture f;
  ASSERT_EQ(f.state_hash,
            protocol::StateHashFromLeaves(std::vector<Hash256>{Hash256{}, Hash256{}}, f.header));
  // The batch runs on into the next epoch: its positions are two permutations' examples.
  ASSERT_EQ(f.indices.size(), kBatch);
  const KernelsGraphSource graphs;
  for (std::uint64_t k = 0; k < kBatch; ++k) {
    CountingMeter meter;
    auto opened = VerifyBatchOpening(graphs, f.Case(), f.Open({k}), meter);
    ASSERT_TRUE(opened.ok()) << opened.status().ToString();
    for (std::int64_t j = 0; j < kWidth; ++j) {
      auto v = opened->Value(0, kInputs, static_cast<std::int64_t>(k) * kWidth + j);
      ASSERT_TRUE(v.ok()) << v.status().ToString();
      EXPECT_EQ(*v, f.inputs[f.indices[k]][static_cast<std::size_t>(j)])
          << "position " << k << " value " << j;
    }
    auto label = opened->Value(1, kTargets, static_cast<std::int64_t>(k));
    ASSERT_TRUE(label.ok());
    EXPECT_EQ(*label, f.labels[f.indices[k]]);
    // Only the opened example's values are there.
    const std::int64_t other = static_cast<std::int64_t>((k + 1) % kBatch) * kWidth;
    EXPECT_EQ(opened->Value(0, kInputs, other).status().reason(), "elem-batch-not-opened");
    EXPECT_EQ(opened->Value(0, kInputs, kBatch * kWidth).status().reason(), "elem-bad-index");
    // Paid before it was built: the data order's words, the example's leaf and both proofs.
    EXPECT_EQ(meter.charged[static_cast<std::size_t>(Cost::kDataOrderElements)],
              protocol::BatchIndicesWork(kExamples, f.header.data_offset, kBatch));
    EXPECT_EQ(meter.charged[static_cast<std::size_t>(Cost::kHashBytes)], f.leaves[f.indices[k]].size());
    EXPECT_EQ(meter.charged[static_cast<std::size_t>(Cost::kProofSiblings)],
              f.header_proof.siblings.size() + f.batch[k].proof.siblings.size());
  }
  // Several examples at once, and the positions a slice of the batch needs.
  EXPECT_EQ(BatchPositionsOf(kInputs, kWidth - 1, 2), (std::vector<std::uint64_t>{0, 1}));
  EXPECT_EQ(BatchPositionsOf(kTargets, 3, 1), (std::vector<std::uint64_t>{3}));
  CountingMeter meter;
  EXPECT_TRUE(VerifyBatchOpening(graphs, f.Case(), f.Open({0, 3}), meter).ok());
  // The wire form round-trips.
  const BatchOpening o = f.Open({1, 2});
  auto back = DecodeExact<BatchOpening>(EncodeToBytes(o));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, o);
}

TEST(BatchOpening, ForgedPiecesAreRefused) {
  const Fixture f;
  const KernelsGraphSource graphs;
  const auto reason = [&](const BatchOpening& o, BatchCase at) {
    CountingMeter meter;
    auto r = VerifyBatchOpening(graphs, at, o, meter);
    return r.ok() ? std::string("ok") : r.status().reason();
  };
  EXPECT_EQ(reason(f.Open({1}), f.Case()), "ok");
  {  // Another example, with its own valid proof, at this position.
    BatchOpening o = f.Open({1});
    const std::uint64_t wrong = (f.indices[1] + 1) % kExamples;
    o.examples[0] = ExampleOpening{f.leaves[wrong], f.data_tree.Prove(wrong)};
    EXPECT_EQ(reason(o, f.Case()), "arb-bad-examples");
  }
  {  // The right position, a forged leaf.
    BatchOpening o = f.Open({1});
    o.examples[0].leaf.back() ^= 1;
    EXPECT_EQ(reason(o, f.Case()), "arb-bad-examples");
  }
  {  // A moved cursor: the header no longer opens against h_t.
    BatchOpening o = f.Open({1});
    o.header.data_offset = 0;
    EXPECT_EQ(reason(o, f.Case()), "arb-bad-header");
  }
  // Another step's state, positions out of order or beyond the batch, a missing example.
  BatchCase later = f.Case();
  later.step = 4;
  EXPECT_EQ(reason(f.Open({1}), later), "arb-header-step-mismatch");
  BatchCase wider = f.Case();
  wider.num_state_tensors = 3;
  EXPECT_EQ(reason(f.Open({1}), wider), "arb-bad-header");
  BatchOpening swapped = f.Open({1, 2});
  std::swap(swapped.positions[0], swapped.positions[1]);
  std::swap(swapped.examples[0], swapped.examples[1]);
  EXPECT_EQ(reason(swapped, f.Case()), "elem-bad-batch");
  BatchOpening beyond = f.Open({1});
  beyond.positions[0] = kBatch;
  EXPECT_EQ(reason(beyond, f.Case()), "elem-bad-batch");
  BatchOpening missing = f.Open({1});
  missing.examples.clear();
  EXPECT_EQ(reason(missing, f.Case()), "elem-bad-batch");
  EXPECT_EQ(reason(f.Open({}), f.Case()), "elem-bad-batch");
}

}  // namespace
}  // namespace vt::verify
