#pragma once
// The JSON-RPC methods of solver notes (node/solver_note.h; docs/node.md,
// "Solver notes"): put_solver_note, get_solver_note, request_checkpoint.

#include <nlohmann/json.hpp>

#include "net/rpc_server.h"
#include "node/chain.h"
#include "node/solver_note.h"

namespace vt::node {

// A note as get_solver_note answers it (also the CLI's --json output).
nlohmann::json SolverNoteJson(const SolverNote& n);

// Registers the three methods on `rpc`; the board they share lives as long as `rpc`.
void RegisterSolverNoteRpc(net::RpcServer& rpc, Chain& chain);

}  // namespace vt::node
