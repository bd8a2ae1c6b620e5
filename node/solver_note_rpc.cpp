#include "node/solver_note_rpc.h"

#include <memory>

#include "common/encoding.h"
#include "net/rpc.h"
#include "referee/records.h"

namespace vt::node {

using Json = nlohmann::json;

Json SolverNoteJson(const SolverNote& n) {
  Json served = Json::array();
  for (const ServedCheckpoint& c : n.checkpoints)
    served.push_back({{"index", c.index},
                      {"state_hash", c.state_hash.Hex()},
                      {"blob", c.blob.Hex()},
                      {"blob_bytes", c.blob_bytes}});
  return Json{{"bounty_id", n.bounty_id}, {"seq", n.seq},       {"step", n.step},
              {"num_steps", n.num_steps}, {"loss", n.loss},     {"eta_ms", n.eta_ms},
              {"checkpoints", served},    {"encoded", ToHex(EncodeToBytes(n))}};
}

void RegisterSolverNoteRpc(net::RpcServer& rpc, Chain& chain) {
  auto board = std::make_shared<SolverBoard>();

  // From the solver's daemon: the note, signed by the bounty's solver.
  rpc.Register("put_solver_note", [board, &chain](const Json& params) -> Result<Json> {
    VT_ASSIGN_OR_RETURN(std::string hex, net::GetStringParam(params, 0, "note"));
    if (hex.size() > 2 * kMaxSolverNoteBytes)
      return net::InvalidParams("note over " + std::to_string(kMaxSolverNoteBytes) + " bytes");
    auto bytes = FromHex(hex);
    if (!bytes.ok()) return net::InvalidParams("note must be hex");
    VT_ASSIGN_OR_RETURN(SolverNote n, DecodeExact<SolverNote>(*bytes));
    VT_ASSIGN_OR_RETURN(referee::Bounty b, referee::ReadBounty(chain.db(), n.bounty_id));
    VT_TRY(board->Put(n, b));
    return Json{{"accepted", true}, {"seq", n.seq}};
  });

  // The note (null if none) and the checkpoints clients asked for.
  rpc.Register("get_solver_note", [board](const Json& params) -> Result<Json> {
    VT_ASSIGN_OR_RETURN(std::uint64_t id, net::GetU64Param(params, 0, "bounty_id"));
    auto n = board->Get(id);
    Json requests = Json::array();
    for (std::uint64_t i : board->Requests(id)) requests.push_back(i);
    return Json{{"note", n ? SolverNoteJson(*n) : Json()}, {"requests", requests}};
  });

  // From a client: "please publish checkpoint I of this bounty".
  rpc.Register("request_checkpoint", [board, &chain](const Json& params) -> Result<Json> {
    VT_ASSIGN_OR_RETURN(std::uint64_t id, net::GetU64Param(params, 0, "bounty_id"));
    VT_ASSIGN_OR_RETURN(std::uint64_t index, net::GetU64Param(params, 1, "index"));
    VT_ASSIGN_OR_RETURN(referee::Bounty b, referee::ReadBounty(chain.db(), id));
    VT_ASSIGN_OR_RETURN(bool pending, board->Request(b, index));
    return Json{{"requested", pending}};
  });
}

}  // namespace vt::node
