#pragma once
// Off-chain side of the scenario harness: a tiny but real training job (an
// MLP from kernels/graph on a synthetic dataset, trained with the kernels
// executor), a party's full history of it (state hashes, node records,
// per-node outputs, rounding logs, all Merkle trees), optionally with lies
// planted at chosen steps and nodes, and the builders of every referee call
// argument from such a history (what a solver/challenger daemon would post).

#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "contract_vm/arbitration.h"
#include "contract_vm/graph_source.h"
#include "crypto/keys.h"
#include "crypto/merkle.h"
#include "kernels/mode.h"
#include "kernels/rounding.h"
#include "kernels/tensor.h"
#include "protocol/state.h"
#include "protocol/types.h"
#include "referee/messages.h"

namespace vt::test {

struct TinyJob {
  protocol::JobSpec job;
  std::vector<Bytes> examples;  // dataset-commitment leaves
  crypto::MerkleTree dataset_tree;
  Hash256 initial_state;
};

// MLP 6 → 8 → 3 (relu), SGD with momentum, 20 examples, batch 4. A wider
// hidden layer gives outputs of several 256-value chunks (the element
// level's chunk walk).
TinyJob MakeTinyJob(std::uint64_t num_steps, std::uint64_t interval, kernels::Mode mode, std::uint64_t seed = 42,
                    std::int64_t hidden = 8);
// The cnn-tiny preset (an 8×8 image, a stem and one residual block with
// batch norms, 4 classes) on the same kind of dataset: batch-norm and
// convolution nodes for the element level.
TinyJob MakeTinyCnnJob(std::uint64_t num_steps, std::uint64_t interval, kernels::Mode mode,
                       std::uint64_t seed = 42);
// A one-block GPT (vocabulary 16, context 8, 2 heads, width 16, no
// dropout) on 20 synthetic token sequences, each token's target another
// token: layer-norm, attention and embedding nodes for the element level.
TinyJob MakeTinyGptJob(std::uint64_t num_steps, std::uint64_t interval, kernels::Mode mode,
                       std::uint64_t seed = 42);
// One of the three by name (`hidden`: the MLP's).
enum class TinyModel : std::uint8_t { kMlp, kCnn, kGpt };
TinyJob MakeTinyModelJob(TinyModel model, std::uint64_t num_steps, std::uint64_t interval, kernels::Mode mode,
                         std::uint64_t seed = 42, std::int64_t hidden = 8);

enum class LieKind {
  kOutput,      // perturb every element of output 0 of (step, node) unevenly; later nodes consume it
  kSpec,        // kOutput, and the node's record names a wrong op kind
  kLog,         // rounded mode: a log entry outside the logging region at (step, node), output flipped there
  kCheckpoint,  // claim a wrong h at checkpoint index `step` (node unused); everything else honest
  kOneValue,    // one value (`value`) of output `slot` of (step, node) one ulp up; later nodes consume it
  // kCheckpoint, but the wrong h is a real tree: the honest leaves of h with
  // leaf `value` made up (several such lies at one checkpoint: several leaves).
  kStateLeaf,
  // Rounded mode: the record of (step, node) names a log hash other than
  // the node's committed log's; outputs and logs stay honest.
  kLogHash,
};

struct Lie {
  LieKind kind = LieKind::kOutput;
  std::uint64_t step = 0;
  std::uint32_t node = 0;
  std::uint32_t slot = 0;    // kOneValue
  std::int64_t value = 0;    // kOneValue
};

struct History {
  protocol::JobSpec job;
  std::vector<Hash256> h;                               // claimed h_t, t = 0..N
  std::vector<protocol::StateHeader> headers;           // header of h_t
  std::vector<std::vector<kernels::Tensor>> states;     // state tensors of h_t (name order)
  std::vector<std::vector<protocol::NodeRecord>> records;               // per step: graph nodes + assemble
  std::vector<std::vector<std::vector<kernels::Tensor>>> outputs;       // per step, per node
  std::vector<std::vector<kernels::RoundingLog>> logs;                  // rounded mode: per step, per node
  crypto::MerkleTree checkpoint_tree;
  std::vector<crypto::MerkleTree> step_trees;   // interval j (1-based) at j-1
  std::vector<crypto::MerkleTree> node_trees;   // per step
  // Rounded mode: the commitment's log tree.
  std::vector<crypto::MerkleTree> step_log_trees;      // per step, over node log hashes
  std::vector<crypto::MerkleTree> interval_log_trees;  // per interval, over step log roots
  crypto::MerkleTree log_root_tree;                    // over interval log hashes
  Hash256 log_root;                                    // zero outside rounded mode
  std::vector<Lie> lies;
  // kStateLeaf lies: the leaves of the claimed h_t, by t.
  std::map<std::uint64_t, std::vector<Hash256>> claimed_leaves;
  // The dataset (TinyJob's): the examples a batch opening reads.
  std::vector<Bytes> examples;
  crypto::MerkleTree dataset_tree;

  bool LiedAt(std::uint64_t step, std::uint64_t node) const;
  std::uint64_t num_steps() const { return job.num_steps; }
};

// Trains the job. In rounded mode with `follow` set (a challenger replaying a
// solver), each step first follows `follow`'s logs and records its own from
// the first step whose logs do not replay.
Result<History> Train(const TinyJob& tiny, std::vector<Lie> lies, const History* follow = nullptr);

// The Merkle tree over h_t's state tensor hashes and its header (leaves of
// h_t) — or over the claimed leaves of a kStateLeaf lie.
crypto::MerkleTree StateTreeOf(const History& h, std::uint64_t step);

// ---- call arguments from a history -----------------------------------------------

referee::CommitArgs MakeCommit(const History& h, std::uint64_t bounty_id, const crypto::SecretKey& solver);
referee::OpenGameArgs MakeOpenGame(const History& h, std::uint64_t bounty_id);
referee::StepRootArgs MakeStepRoot(const History& h, std::uint64_t game_id, std::uint64_t checkpoint_index);
referee::NodeRootArgs MakeNodeRoot(const History& h, std::uint64_t game_id, std::uint64_t checkpoint_index,
                                   std::uint64_t step);
// What the referee establishes before arbitrating node `node` of step `step`
// of `h` (h_t, its node root and count).
vm::ArbitrationCase ArbitrationCaseOf(const TinyJob& tiny, const History& h, std::uint64_t step, std::uint64_t node);

// Rounded mode: the chain from node `node`'s log hash of step `step` up to
// the solver's log root, and that log hash with it (what the element
// level's descent carries).
referee::LogProofs LogChainOf(const History& solver, std::uint64_t step, std::uint64_t node);
referee::NodeLogProof NodeLogProofOf(const History& solver, std::uint64_t step, std::uint64_t node);

// The arbitration of node `node` of step `step`, from `inputs_from`'s data
// (any party: the inputs are agreed), with the log and its proofs from
// `solver` (the committed log is the solver's).
referee::ArbitrateArgs MakeArbitrate(const TinyJob& tiny, const History& inputs_from, const History& solver,
                                     std::uint64_t game_id, std::uint8_t node_root_of, std::uint64_t step,
                                     std::uint64_t node);

}  // namespace vt::test
