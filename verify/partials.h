// A party's partial results of one disputed value (level 5b), as it keeps
// them between moves: the leaves of a dot product or a reduction rule, and
// the tree over them (PartialsTree's tree, the same root).
//
// A reduction's walk can be long: GPT-2 small's clip norm has 1.2·10^8
// leaves and its loss 1.0·10^8, 81 bytes each in certified mode — 10 GB,
// twice that with a copy for the tree. Past LeafKeeping::whole_up_to leaves
// a party keeps runs of 2^run_log2 leaves instead, each as its first leaf
// and its subtree hash (the tree's kept level), and recomputes a run when a
// move asks for one of its leaves: from its first leaf, step by step, by the
// referee's own step (StepValue, CertifiedStepLeaf), reading the operand
// leaves of earlier runs the same way. A walk asks for one run in its last
// levels and a few more for the final claim's operands, so a game recomputes
// a few hundred steps, not the value.
//
// Not thread-safe: recomputed runs are cached inside (`At` is const).

#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "common/result.h"
#include "crypto/merkle.h"
#include "verify/descent.h"
#include "verify/element.h"
#include "verify/reduce_rule.h"

namespace vt::verify {

struct LeafKeeping {
  std::uint64_t whole_up_to = kPartialsKeptWhole;  // at most this many leaves are held whole
  unsigned run_log2 = kPartialsKeptFrom;           // past it, runs of 2^run_log2 leaves
};

template <class Leaf>
class Partials {
 public:
  Partials();  // one leaf: the start
  // Given leaves, held whole (a dot product's; a test's liar's).
  explicit Partials(std::vector<Leaf> leaves);
  // Every leaf of the reduction `element` (fp32 sums for a tree sum's,
  // exact ones for an exact element's: ComputeReducePartials,
  // ComputeCertifiedSumPartials) over the values `value_at` reads, computed
  // once. `value_at` must stay valid while this object (or a copy) lives:
  // runs are recomputed from it. Their reasons.
  static Result<Partials> Compute(const ReduceElement& element, ValueAt value_at, LeafKeeping keeping = {});

  std::uint64_t size() const { return m_size; }
  // Precondition: i < size().
  Leaf operator[](std::uint64_t i) const;
  Leaf back() const { return (*this)[m_size - 1]; }
  const crypto::MerkleTree& tree() const { return m_tree; }

  // Every leaf (tests; as large as the walk).
  std::vector<Leaf> All() const;
  // Bytes held: the leaves or the runs' first leaves, and the tree's levels.
  std::uint64_t HeldBytes() const;
  // Steps recomputed so far (0 while held whole).
  std::uint64_t RecomputedSteps() const;

 private:
  struct Runs;
  std::uint64_t m_size = 0;
  std::shared_ptr<const std::vector<Leaf>> m_whole;  // held whole, or
  std::shared_ptr<Runs> m_runs;                      // kept as runs
  crypto::MerkleTree m_tree;
};

}  // namespace vt::verify
