#include "kernels/ops/op_util.h"

namespace vt::kernels::opsdetail {

namespace {
std::atomic<std::int64_t> g_piece_values{kRoundPieces.values};
std::atomic<std::int64_t> g_piece_row_values{kRoundPieces.row_values};
std::atomic<std::int64_t> g_piece_gemm_min_rows{kRoundPieces.gemm_min_rows};
}  // namespace

void SetRoundPiecesForTesting(std::optional<RoundPieces> pieces) {
  const RoundPieces p = pieces.value_or(kRoundPieces);
  g_piece_values.store(std::max<std::int64_t>(1, p.values));
  g_piece_row_values.store(std::max<std::int64_t>(1, p.row_values));
  g_piece_gemm_min_rows.store(std::max<std::int64_t>(1, p.gemm_min_rows));
}

RoundPieces RoundPiecesNow() {
  return {g_piece_values.load(std::memory_order_relaxed), g_piece_row_values.load(std::memory_order_relaxed),
          g_piece_gemm_min_rows.load(std::memory_order_relaxed)};
}

Status RoundGemmByRows(const OpContext& ctx, const GemmArgs& g, const float* a, const float* b,
                       const float* bias, std::span<float> out) {
  assert(!g.accumulate && g.ldc == g.n);
  const std::int64_t m = std::max<std::int64_t>(g.m, 0), n = std::max<std::int64_t>(g.n, 0);
  if (m == 0 || n == 0) return ctx.RoundOutput({}, out);
  std::vector<double> row_sq(static_cast<std::size_t>(m), 0.0), col_sq(static_cast<std::size_t>(n), 0.0);
  GemmNormsSq(g, a, b, row_sq.data(), col_sq.data());
  const std::vector<double> bias64 =
      bias != nullptr ? std::vector<double>(bias, bias + n) : std::vector<double>();
  const RoundPieces pieces = RoundPiecesNow();
  const std::int64_t rows_per = std::max(pieces.gemm_min_rows, pieces.row_values / n);
  const auto capacity = static_cast<std::size_t>(std::min(rows_per, m) * n);
  F64Scratch values_scratch, slack_scratch;
  double* const values = values_scratch.Reserve(capacity);
  double* const slack = slack_scratch.Reserve(capacity);
  for (std::int64_t i0 = 0; i0 < m; i0 += rows_per) {
    GemmArgs piece = g;
    piece.m = std::min(rows_per, m - i0);
    const float* ap = a + (g.trans_a ? i0 : i0 * g.lda);
    const auto size = static_cast<std::size_t>(piece.m * n);
    PrepareUnwrittenCheck({values, size});
    GemmF64Rounded(ctx.config(), piece, ap, b, values);
    WriteGemmSlack(piece.m, n, g.k, row_sq.data() + i0, col_sq.data(), slack, n,
                   bias != nullptr ? bias64.data() : nullptr);
    if (bias != nullptr) {
      ParallelFor(ctx.threads(), piece.m, [&](std::int64_t r0, std::int64_t r1) {
        for (std::int64_t r = r0; r < r1; ++r) {
          double* row = values + r * n;
          for (std::int64_t j = 0; j < n; ++j) row[j] = row[j] + static_cast<double>(bias[j]);
        }
      });
    }
    VT_TRY(CheckAllWritten({values, size}));
    // An element's reference: its dot product, then the bias as above.
    const int threads = ctx.threads();
    const ReferenceFn reference = [&, piece, ap, threads](std::span<const std::size_t> positions,
                                                          std::span<double> refs) {
      GemmF64ReferenceElements(threads, piece, ap, b, DenseGemmElements(positions, piece), refs.data());
      if (bias == nullptr) return;
      for (std::size_t e = 0; e < positions.size(); ++e) {
        refs[e] = refs[e] + static_cast<double>(bias[positions[e] % static_cast<std::size_t>(n)]);
      }
    };
    VT_TRY(ctx.RoundOutput({values, size}, out.subspan(static_cast<std::size_t>(i0 * n), size), {slack, size},
                           &reference));
  }
  return Status::Ok();
}

}  // namespace vt::kernels::opsdetail
