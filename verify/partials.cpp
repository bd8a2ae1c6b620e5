#include "verify/partials.h"

#include <algorithm>
#include <cstdlib>
#include <utility>

#include "verify/certified_sum.h"

namespace vt::verify {

namespace {

Status ComputeLeaves(const ReduceElement& el, const ValueAt& value_at, LeafSink<float>& out) {
  return ComputeReducePartials(el, value_at, out);
}
Status ComputeLeaves(const ReduceElement& el, const ValueAt& value_at, LeafSink<double>& out) {
  return ComputeReducePartials(el, value_at, out);
}
Status ComputeLeaves(const ReduceElement& el, const ValueAt& value_at, LeafSink<ExactPartial>& out) {
  return ComputeCertifiedSumPartials(el, value_at, out);
}

// A rounded dot product's leaves are no reduction's: Compute refuses them,
// so they are only ever held whole (as the workers' answers hold them) and
// no run of them is ever recomputed.
Status ComputeLeaves(const ReduceElement&, const ValueAt&, LeafSink<RoundedPartial>&) {
  return Status::Invalid("elem-wrong-leaf", "a rounded dot product's leaves are no reduction's");
}

// One step by the referee's own rule. It succeeded when the leaf was first
// computed, over the same values: it cannot fail now.
float StepLeaf(const ReduceElement& el, const ReduceStep& st, float left, float right,
               std::span<const float> values) {
  return StepValue<float>(el, st, left, right, values).value();
}
double StepLeaf(const ReduceElement& el, const ReduceStep& st, double left, double right,
                std::span<const float> values) {
  const std::vector<double> wide(values.begin(), values.end());
  return StepValue<double>(el, st, left, right, wide).value();
}
ExactPartial StepLeaf(const ReduceElement& el, const ReduceStep& st, const ExactPartial& left,
                      const ExactPartial& right, std::span<const float> values) {
  return CertifiedStepLeaf(el, st, left, right, values).value().value();
}
RoundedPartial StepLeaf(const ReduceElement&, const ReduceStep&, const RoundedPartial&, const RoundedPartial&,
                        std::span<const float>) {
  std::abort();  // unreachable: no run of rounded leaves exists (ComputeLeaves above)
}

// The subtree hash of one run: its leaves as a tree of their own (the tree's
// node at level run_log2, MerkleTree::FromKeptLevel).
template <class Leaf>
Hash256 RunTop(std::span<const Leaf> run) {
  std::vector<Hash256> hashes;
  hashes.reserve(run.size());
  for (const Leaf& p : run) hashes.push_back(PartialLeafHash(p));
  return crypto::MerkleTree::FromLeafHashes(std::move(hashes)).top();
}

template <class Leaf>
crypto::MerkleTree WholeTree(std::shared_ptr<const std::vector<Leaf>> leaves) {
  if (leaves->size() <= kPartialsKeptWhole) return PartialsTree(std::span<const Leaf>(*leaves));
  const std::uint64_t n = leaves->size();
  return crypto::MerkleTree::FromLeafSource(
      n, [leaves = std::move(leaves)](std::uint64_t i) { return PartialLeafHash((*leaves)[i]); },
      kPartialsKeptFrom);
}

}  // namespace

// The leaves as they are pushed (LeafSink), then as runs: each run's first
// leaf and top, the leaves later runs read (pinned), the run being pushed
// whole, and the last few runs used.
template <class Leaf>
struct Partials<Leaf>::Runs final : LeafSink<Leaf> {
  static constexpr std::size_t kCachedRuns = 8;

  Runs(const ReduceElement& e, ValueAt v, unsigned log2) : el(e), value_at(std::move(v)), run_log2(log2) {}

  // Which leaves steps of later runs read (the repops tree's block sums and
  // combinations, a row's max and sum, the rows' values for the outer sum):
  // from the rule's step indices alone, before any value. Kept as they are
  // pushed, they make recomputing a run cost its own steps only.
  void FindPinned(std::uint64_t leaves) {
    for (std::uint64_t m = 1; m < leaves; ++m) {
      const ReduceStep st = ReduceStepAt(el, m).value();
      for (const std::uint64_t j : {st.left, st.reads_right ? st.right : st.left}) {
        // Leaf m − 1 is at hand: in m's run, or the run just sealed (cached)
        // when m starts one — and a run's first step is never recomputed.
        const bool far = j + 1 != m && (j >> run_log2) != (m >> run_log2) && (j & (RunSize() - 1)) != 0;
        if (far && (pinned_at.empty() || pinned_at.back() != j)) pinned_at.push_back(j);
      }
    }
    std::sort(pinned_at.begin(), pinned_at.end());
    pinned_at.erase(std::unique(pinned_at.begin(), pinned_at.end()), pinned_at.end());
    pinned.reserve(pinned_at.size());
  }

  std::uint64_t RunSize() const { return std::uint64_t{1} << run_log2; }

  void Push(const Leaf& leaf) override {
    if (pinned.size() < pinned_at.size() && pinned_at[pinned.size()] == count) pinned.push_back(leaf);
    if (current.empty()) firsts.push_back(leaf);
    current.push_back(leaf);
    ++count;
    if (current.size() == RunSize()) Seal();
  }
  std::uint64_t Size() const override { return count; }
  Leaf At(std::uint64_t i) const override {
    const std::uint64_t run = i >> run_log2, offset = i & (RunSize() - 1);
    if (!current.empty() && run + 1 == firsts.size()) return current[offset];  // the run being pushed
    if (offset == 0) return firsts[run];  // leaf 0 (every block's start, in repops) among them
    if (const auto it = std::lower_bound(pinned_at.begin(), pinned_at.end(), i);
        it != pinned_at.end() && *it == i)
      return pinned[static_cast<std::size_t>(it - pinned_at.begin())];
    for (auto it = cache.begin(); it != cache.end(); ++it) {
      if (it->first != run) continue;
      std::rotate(cache.begin(), it, it + 1);  // most recently used first
      return cache.front().second[offset];
    }
    std::vector<Leaf> leaves = Recompute(run);  // may recompute (and cache) earlier runs
    const Leaf leaf = leaves[offset];
    Cache(run, std::move(leaves));
    return leaf;
  }

  // The run pushed so far is complete (or the last, short). It stays
  // cached: the next steps read its last leaf, combinations its sums.
  void Seal() {
    tops.push_back(RunTop<Leaf>(current));
    Cache(firsts.size() - 1, std::move(current));
    current = {};
  }

  void Cache(std::uint64_t run, std::vector<Leaf> leaves) const {
    if (cache.size() == kCachedRuns) cache.pop_back();
    cache.insert(cache.begin(), {run, std::move(leaves)});
  }

  // Run `run` again from its first leaf, each step by the rule; an operand
  // leaf of an earlier run is a run's first or pinned.
  std::vector<Leaf> Recompute(std::uint64_t run) const {
    const std::uint64_t first = run << run_log2, end = std::min(first + RunSize(), count);
    std::vector<Leaf> leaves;
    leaves.reserve(end - first);
    leaves.push_back(firsts[run]);
    const auto leaf_at = [&](std::uint64_t j) { return j >= first ? leaves[j - first] : At(j); };
    std::vector<float> values;
    for (std::uint64_t m = first + 1; m < end; ++m) {
      const ReduceStep st = ReduceStepAt(el, m).value();
      const std::vector<ReadValue> reads = ReadStep(StepReads(el, st), value_at).value();
      values.clear();
      for (const ReadValue& r : reads) values.push_back(r.value);
      const Leaf left = leaf_at(st.left);
      const Leaf right = st.reads_right ? leaf_at(st.right) : Leaf{};
      leaves.push_back(StepLeaf(el, st, left, right, values));
    }
    recomputed += end - first - 1;
    return leaves;
  }

  ReduceElement el;
  ValueAt value_at;
  unsigned run_log2;
  std::uint64_t count = 0;
  std::vector<Leaf> firsts;              // each run's first leaf
  std::vector<std::uint64_t> pinned_at;  // FindPinned's leaves, ascending
  std::vector<Leaf> pinned;              // their values, as far as pushed
  std::vector<Hash256> tops;             // each sealed run's subtree hash
  std::vector<Leaf> current;             // the run being pushed (empty once all are sealed)
  mutable std::vector<std::pair<std::uint64_t, std::vector<Leaf>>> cache;  // most recently used first
  mutable std::uint64_t recomputed = 0;
};

template <class Leaf>
Partials<Leaf>::Partials() : Partials(std::vector<Leaf>{Leaf{}}) {}

template <class Leaf>
Partials<Leaf>::Partials(std::vector<Leaf> leaves)
    : m_size(leaves.size()), m_whole(std::make_shared<const std::vector<Leaf>>(std::move(leaves))) {
  m_tree = WholeTree(m_whole);
}

template <class Leaf>
Result<Partials<Leaf>> Partials<Leaf>::Compute(const ReduceElement& el, ValueAt value_at,
                                               LeafKeeping keeping) {
  const std::uint64_t count = el.Steps() + 1;
  const unsigned log2 = std::clamp(keeping.run_log2, 1u, 30u);
  if (count <= std::max(keeping.whole_up_to, std::uint64_t{1} << log2)) {
    HeldLeaves<Leaf> held;
    held.leaves.reserve(count);
    VT_TRY(ComputeLeaves(el, value_at, held));
    return Partials(std::move(held.leaves));
  }
  auto runs = std::make_shared<Runs>(el, std::move(value_at), log2);
  runs->FindPinned(count);
  VT_TRY(ComputeLeaves(el, runs->value_at, *runs));
  if (!runs->current.empty()) runs->Seal();
  if (runs->count != count)
    return Status::Error("partials-count", "the rule pushed " + std::to_string(runs->count) + " leaves");
  Partials p;
  p.m_size = count;
  p.m_whole.reset();
  p.m_tree = crypto::MerkleTree::FromKeptLevel(
      count, [runs](std::uint64_t i) { return PartialLeafHash(runs->At(i)); }, log2, std::move(runs->tops));
  p.m_runs = std::move(runs);
  return p;
}

template <class Leaf>
Leaf Partials<Leaf>::operator[](std::uint64_t i) const {
  return m_whole ? (*m_whole)[static_cast<std::size_t>(i)] : m_runs->At(i);
}

template <class Leaf>
std::vector<Leaf> Partials<Leaf>::All() const {
  if (m_whole) return *m_whole;
  std::vector<Leaf> all;
  all.reserve(m_size);
  for (std::uint64_t i = 0; i < m_size; ++i) all.push_back((*this)[i]);
  return all;
}

template <class Leaf>
std::uint64_t Partials<Leaf>::HeldBytes() const {
  // The tree keeps the levels from `kept` up: about two hashes per node of that level.
  unsigned kept = 0;
  if (m_runs) {
    kept = m_runs->run_log2;
  } else if (m_size > kPartialsKeptWhole) {
    kept = kPartialsKeptFrom;
  }
  const crypto::MerkleShape& shape = m_tree.shape();
  const std::uint64_t tree = 2 * shape.NodesAt(std::min(kept, shape.height())) * sizeof(Hash256);
  if (m_whole) return m_whole->size() * sizeof(Leaf) + tree;
  std::uint64_t cached = 0;
  for (const auto& entry : m_runs->cache) cached += entry.second.size() * sizeof(Leaf);
  return (m_runs->firsts.size() + m_runs->pinned.size()) * sizeof(Leaf) +
         m_runs->pinned_at.size() * sizeof(std::uint64_t) + cached + tree;
}

template <class Leaf>
std::uint64_t Partials<Leaf>::RecomputedSteps() const {
  return m_runs ? m_runs->recomputed : 0;
}

template class Partials<float>;
template class Partials<ExactPartial>;
template class Partials<RoundedPartial>;
template class Partials<double>;

}  // namespace vt::verify
