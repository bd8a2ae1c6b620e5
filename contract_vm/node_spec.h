#pragma once
// The precompile's names for the node specs, which are defined once, in
// verify/node_spec.h (the worker checks nodes with the same rules).

#include "verify/node_spec.h"

namespace vt::vm {

using verify::CheckRecordAgainstSpec;
using verify::kAssembleOpKind;
using verify::NodeSpec;
using verify::NodeSpecAt;
using verify::StepGraph;
using verify::ValidateStepGraph;

}  // namespace vt::vm
