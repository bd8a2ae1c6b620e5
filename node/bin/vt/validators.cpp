// vt validators: each validator's bond and recorded offences (chain_status;
// docs/node.md "Evidence and slashing").
#include "node/bin/vt/vt_cli.h"

namespace vt::cli {

std::string ValidatorText(const Json& v) {
  std::string text = v["name"].get<std::string>() + "  " + v["pubkey"].get<std::string>().substr(0, 16) +
                     "…  bond " + std::to_string(v["bond"].get<std::uint64_t>()) + " of " +
                     std::to_string(v["genesis_bond"].get<std::uint64_t>()) + ", " +
                     std::to_string(v["offences"].get<std::uint64_t>()) + " offence(s), " +
                     std::to_string(v["slashed"].get<std::uint64_t>()) + " slashed\n";
  for (const Json& o : v["slashes"])
    text += "    double-signed " + o["vote"].get<std::string>() + " at height " +
            std::to_string(o["height"].get<std::uint64_t>()) + " round " +
            std::to_string(o["round"].get<std::uint32_t>()) + ": -" +
            std::to_string(o["slashed"].get<std::uint64_t>()) + " (block " +
            std::to_string(o["block"].get<std::uint64_t>()) + ")\n";
  return text;
}

void AddValidatorCommands(CLI::App& app, Globals& g) {
  auto* validators = app.add_subcommand("validators", "validators: bonds and slashed offences");
  validators->callback(Runs(g, [&g] {
    auto c = Client(g);
    if (!c.ok()) return Fail(g, c.status());
    auto s = c->Call("chain_status", Json::array());
    if (!s.ok()) return Fail(g, s.status());
    const Json& list = (*s)["validators"];
    std::string human = "height " + std::to_string((*s)["height"].get<std::uint64_t>()) + "\n";
    for (const Json& v : list) {
      human += ValidatorText(v);
    }
    Print(g, list, human);
    return 0;
  }));
}

}  // namespace vt::cli
