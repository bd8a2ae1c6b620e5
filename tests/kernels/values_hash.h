#pragma once
// The goldens that pin operator results (ops harness, GEMM, init) hash the
// values flat, as the v1 tensor hash did: they guard arithmetic, and must not
// move when the commitment format of Tensor::Hash changes
// (kernels/chunk_tree.h).

#include "common/bytes.h"
#include "crypto/sha256.h"
#include "kernels/tensor.h"
#include "kernels/tensor_codec.h"

namespace vt::kernels::testing {

inline Hash256 ValuesHash(const Tensor& t) { return crypto::TaggedHash("veritrain/tensor/v1", EncodeTensor(t)); }

}  // namespace vt::kernels::testing
