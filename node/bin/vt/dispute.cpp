// vt dispute show.
#include "common/cli_number.h"
#include "node/bin/vt/vt_cli.h"

namespace vt::cli {

void AddDisputeCommands(CLI::App& app, Globals& g) {
  auto* dispute = app.add_subcommand("dispute", "dispute games")->require_subcommand(1);
  auto game_id = std::make_shared<std::uint64_t>(0);
  auto* show = dispute->add_subcommand("show", "show a dispute game");
  AddNumber(show, "id", *game_id, "game id")->required();
  show->callback(Runs(g, [&g, game_id] {
    auto c = Client(g);
    if (!c.ok()) return Fail(g, c.status());
    auto d = c->Call("get_dispute", Json::array({*game_id}));
    if (!d.ok()) return Fail(g, d.status());
    d->erase("encoded");
    d->erase("walk");
    std::string human = "game " + std::to_string(*game_id) + " on bounty " +
                        std::to_string((*d)["bounty_id"].get<std::uint64_t>()) + ": " +
                        (*d)["phase"].get<std::string>() + ", " + (*d)["result"].get<std::string>();
    if (d->contains("step")) human += ", step " + std::to_string((*d)["step"].get<std::uint64_t>());
    if (d->contains("node_index")) human += ", node " + std::to_string((*d)["node_index"].get<std::uint64_t>());
    Print(g, *d, human + "\n" + d->dump(2) + "\n");
    return 0;
  }));
}

}  // namespace vt::cli
