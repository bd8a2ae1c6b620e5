# Benchmarks of the kernels core (included from kernels/CMakeLists.txt).
vt_bench(matmul_bench
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/matmul_bench.cpp
  DEPS vt::kernels vt::common PkgConfig::OPENBLAS)

# Certified mode: step ratio to native, slow-path fractions, GEMM throughput
# against sgemm (docs/kernels.md "Certified mode").
vt_bench(kernels_certified_bench
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/certified_bench.cpp
  DEPS vt::kernels vt::common)

# ParallelFor's round trip against inline and OpenMP regions (docs/kernels.md
# "The thread pool").
vt_bench(parallel_bench
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/parallel_bench.cpp
  DEPS vt::kernels)
if(TARGET parallel_bench)
  find_package(OpenMP COMPONENTS CXX)
  if(OpenMP_CXX_FOUND)
    target_link_libraries(parallel_bench PRIVATE OpenMP::OpenMP_CXX)
  endif()
endif()

# NodeRounding::Round (nearest, record, replay) against a plain fp64 → fp32
# conversion of the same GEMM output (docs/kernels.md "Thirteenth pass").
vt_bench(rounding_bench
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/rounding_bench.cpp
  DEPS vt::kernels vt::common)
