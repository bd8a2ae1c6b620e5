# Training operators of kernels/ (included from kernels/CMakeLists.txt).
set(VT_KERNELS_OPS_SOURCES
  ops/attention.cpp
  ops/conv.cpp
  ops/elementwise.cpp
  ops/embedding.cpp
  ops/linear.cpp
  ops/native_math.cpp
  ops/norm.cpp
  ops/op_util.cpp
  ops/optim.cpp
  ops/reduce.cpp
  ops/registry.cpp
  ops/repops_math.cpp
  ops/shape.cpp
  ops/softmax.cpp
)
