# Model step graphs of kernels/ (included from kernels/CMakeLists.txt).
set(VT_KERNELS_GRAPH_SOURCES
  graph/model.cpp
  graph/step_graph.cpp
  graph/executor.cpp
)
