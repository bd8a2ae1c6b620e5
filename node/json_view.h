#pragma once
// JSON views of chain objects for the RPC and the CLI. Hashes, keys and
// addresses are lower-case hex; amounts are JSON integers; referee events
// are decoded next to their raw data. These views are for people and
// scripts: never hashed, never part of consensus.

#include <nlohmann/json.hpp>

#include "contract_vm/block.h"
#include "contract_vm/tx.h"
#include "contract_vm/vm.h"
#include "referee/messages.h"
#include "referee/records.h"

namespace vt::node {

using Json = nlohmann::json;

Json HeaderToJson(const vm::BlockHeader& h);
Json TxToJson(const vm::Transaction& tx);
Json BlockToJson(const vm::Block& b, bool full_txs);
Json EventToJson(const vm::Event& e);
Json ReceiptToJson(const vm::Receipt& r);
Json TipToJson(const vm::ChainTip& t);
// Without the bounty's games (the RPC adds them: referee::ReadBountyGames).
Json BountyToJson(const referee::Bounty& b);
Json GameToJson(const referee::Game& g);
// The name of an element rule in JSON ("dot", "pointwise-row", "reduction", "state").
std::string ElementRuleName(verify::ElementKind kind);
// A game's element level (docs/referee.md, "Element-level descent"): the
// disputed slot, where each walk ended, the rule and the parties' values.
Json ElementGameToJson(const referee::ElementGame& e);

std::string_view BountyStateName(referee::BountyState s);
std::string_view GamePhaseName(referee::GamePhase p);
std::string_view MethodName(std::uint16_t method);

}  // namespace vt::node
