#pragma once
// The precompile's names for the step-graph source, which is defined once,
// in verify/graph_source.h (the worker checks nodes with the same source).

#include "verify/graph_source.h"

namespace vt::vm {

using verify::KernelsGraphSource;
using verify::StepGraphSource;

}  // namespace vt::vm
