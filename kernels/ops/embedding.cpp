// Embedding.
//
// EmbeddingForward: y[p, :] = weight[idx[p], :] (a copy; rounded mode still
//   passes it through RoundOutput, which changes nothing at b = 32).
// EmbeddingBackward: dweight[v, d] = +0 + dy[p₁, d] + dy[p₂, d] + … over the
//   positions p₁ < p₂ < … with idx[p] = v, left to right (sequential over
//   positions per row, no atomics; rows never indexed stay +0). Rows are
//   independent and run in parallel.

#include "kernels/ops/embedding.h"

#include <cmath>

#include "kernels/ops/op_util.h"

namespace vt::kernels {

using namespace opsdetail;

namespace {

// Validates every index and returns them as integers.
Status ReadIndices(const Tensor& indices, std::int64_t vocab, std::vector<std::int64_t>* out) {
  out->resize(static_cast<std::size_t>(indices.numel()));
  for (std::int64_t p = 0; p < indices.numel(); ++p) {
    const float v = indices[p];
    if (!IsRowIndex(v, vocab)) {
      return BadIndex("index " + std::to_string(v) + " at position " + std::to_string(p) + " is not in [0, " +
                      std::to_string(vocab) + ")");
    }
    (*out)[static_cast<std::size_t>(p)] = static_cast<std::int64_t>(v);
  }
  return Status::Ok();
}

}  // namespace

bool IsRowIndex(float v, std::int64_t rows) {
  // NaN fails both comparisons; fractions fail the floor test.
  return v >= 0.0f && static_cast<double>(v) < static_cast<double>(rows) && std::floor(v) == v;
}

Status EmbeddingForward(const OpContext& ctx, const Tensor& indices, const Tensor& weight, Tensor& y) {
  VT_TRY(CheckInput(indices, "embedding indices"));
  VT_TRY(CheckInput(weight, "embedding weight"));
  if (weight.rank() != 2) return ShapeMismatch("embedding weight must be [V, D]");
  const std::int64_t vocab = weight.dim(0), d = weight.dim(1);
  Shape y_shape = indices.shape();
  y_shape.push_back(d);
  if (y_shape.size() > static_cast<std::size_t>(kMaxRank)) return ShapeMismatch("embedding output rank above 8");
  VT_TRY(CheckOutputShape(y_shape, "embedding y"));
  std::vector<std::int64_t> idx;
  VT_TRY(ReadIndices(indices, vocab, &idx));
  y.Resize(y_shape);
  return DispatchMode(ctx, [&](auto math) -> Status {
    using T = typename decltype(math)::T;
    Outputs<T> outs;
    T* yo = outs.Bind(y);
    ParallelFor(ctx.threads(), indices.numel(), [&](std::int64_t p0, std::int64_t p1) {
      for (std::int64_t p = p0; p < p1; ++p) {
        const float* row = weight.data() + idx[static_cast<std::size_t>(p)] * d;
        T* out = yo + p * d;
        for (std::int64_t j = 0; j < d; ++j) out[j] = static_cast<T>(row[j]);
      }
    });
    return outs.Commit(ctx);
  });
}

Status EmbeddingBackward(const OpContext& ctx, const Tensor& dy, const Tensor& indices, std::int64_t num_embeddings,
                         Tensor& dweight) {
  VT_TRY(CheckInput(indices, "embedding indices"));
  VT_TRY(CheckInput(dy, "embedding dy"));
  if (num_embeddings < 1) return BadAttribute("embedding num_embeddings must be >= 1");
  if (dy.rank() != indices.rank() + 1 ||
      !std::equal(indices.shape().begin(), indices.shape().end(), dy.shape().begin())) {
    return ShapeMismatch("embedding dy " + ShapeToString(dy.shape()) + " vs indices " +
                         ShapeToString(indices.shape()));
  }
  const std::int64_t d = dy.dim(-1);
  std::int64_t total = 0;
  if (!ProductWithin({num_embeddings, d}, &total)) return TooLarge("embedding dweight");
  std::vector<std::int64_t> idx;
  VT_TRY(ReadIndices(indices, num_embeddings, &idx));
  // Positions grouped by row, increasing within each row (counting sort).
  const std::int64_t positions = indices.numel();
  std::vector<std::int64_t> start(static_cast<std::size_t>(num_embeddings) + 1, 0);
  for (std::int64_t v : idx) ++start[static_cast<std::size_t>(v) + 1];
  for (std::size_t v = 1; v < start.size(); ++v) start[v] += start[v - 1];
  std::vector<std::int64_t> order(static_cast<std::size_t>(positions));
  {
    std::vector<std::int64_t> fill(start.begin(), start.end() - 1);
    for (std::int64_t p = 0; p < positions; ++p) {
      order[static_cast<std::size_t>(fill[static_cast<std::size_t>(idx[static_cast<std::size_t>(p)])]++)] = p;
    }
  }
  dweight.Resize({num_embeddings, d});
  return DispatchMode(ctx, [&](auto math) -> Status {
    using M = decltype(math);
    using T = typename M::T;
    // Rows [r0, r1) into out (row v at out + (v − r0)·d).
    const auto grad_rows = [&](std::int64_t r0, std::int64_t r1, T* out) {
      std::fill(out, out + (r1 - r0) * d, T(0));
      ParallelFor(ctx.threads(), r1 - r0, [&](std::int64_t a, std::int64_t b) {
        for (std::int64_t v = r0 + a; v < r0 + b; ++v) {
          T* row = out + (v - r0) * d;
          if constexpr (M::kCertified) {
            // dW[v][j] = CR(Σ over the positions p with idx = v of dy[p][j]).
            const std::int64_t first = start[static_cast<std::size_t>(v)];
            const std::int64_t count = start[static_cast<std::size_t>(v) + 1] - first;
            if (count == 0) continue;
            for (std::int64_t j = 0; j < d; ++j) {
              row[j] = CertifiedSum(count, [&](std::int64_t k) {
                return dy.data()[order[static_cast<std::size_t>(first + k)] * d + j];
              });
            }
            continue;
          }
          for (std::int64_t k = start[static_cast<std::size_t>(v)];
               k < start[static_cast<std::size_t>(v) + 1]; ++k) {
            const float* g = dy.data() + order[static_cast<std::size_t>(k)] * d;
            for (std::int64_t j = 0; j < d; ++j) row[j] = row[j] + static_cast<T>(g[j]);
          }
        }
      });
    };
    if constexpr (M::kRounded) {
      // A vocabulary's gradient never exists in fp64 at once.
      return RoundRowsInPieces(ctx, dweight, d, grad_rows);
    } else {
      grad_rows(0, num_embeddings, dweight.data());
      return Status::Ok();
    }
  });
}

}  // namespace vt::kernels
