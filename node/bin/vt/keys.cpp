// vt keys new|list|show: key files under <home>/keys (and the testnet's).
#include <algorithm>

#include "crypto/keyfile.h"
#include "node/bin/vt/vt_cli.h"
#include "node/passphrase.h"

namespace vt::cli {

namespace fs = std::filesystem;

void AddKeyCommands(CLI::App& app, Globals& g) {
  auto* keys = app.add_subcommand("keys", "key files")->require_subcommand(1);
  auto name = std::make_shared<std::string>();

  auto* create = keys->add_subcommand("new", "generate a key");
  create->add_option("name", *name, "key name")->required();
  create->callback(Runs(g, [&g, name] {
    auto pass = node::ReadPassphrase(g.passphrase_file);
    if (!pass.ok()) return Fail(g, pass.status());
    auto key = crypto::SecretKey::Generate();
    if (!key.ok()) return Fail(g, key.status());
    const fs::path path = Home(g) / "keys" / (*name + ".key");
    fs::create_directories(path.parent_path());
    if (Status s = crypto::WriteKeyFile(path, *key, *pass); !s.ok()) return Fail(g, s);
    Print(g, {{"name", *name}, {"address", key->address().Hex()}, {"pubkey", key->public_key().Hex()},
              {"path", path.string()}},
          "created " + *name + "  address " + key->address().Hex() + "\n");
    return 0;
  }));

  auto* list = keys->add_subcommand("list", "list keys (no passphrase needed)");
  list->callback(Runs(g, [&g] {
    Json out = Json::array();
    std::string human;
    for (const fs::path& dir : {Home(g) / "keys", TestnetDir(g) / "keys"}) {
      if (!fs::exists(dir)) continue;
      std::vector<fs::path> files;
      for (const auto& e : fs::directory_iterator(dir))
        if (e.path().extension() == ".key") files.push_back(e.path());
      std::sort(files.begin(), files.end());
      for (const fs::path& p : files) {
        auto info = crypto::ReadKeyFileInfo(p);
        if (!info.ok()) continue;
        out.push_back({{"name", p.stem().string()}, {"address", info->address.Hex()}, {"path", p.string()}});
        human += p.stem().string() + std::string(12 - std::min<std::size_t>(11, p.stem().string().size()), ' ') +
                 info->address.Hex() + "  " + p.parent_path().string() + "\n";
      }
    }
    Print(g, out, human.empty() ? "no keys\n" : human);
    return 0;
  }));

  auto* show = keys->add_subcommand("show", "show a key's address and public key");
  show->add_option("name", *name, "key name")->required();
  show->callback(Runs(g, [&g, name] {
    for (const fs::path& dir : {Home(g) / "keys", TestnetDir(g) / "keys"}) {
      const fs::path p = dir / (*name + ".key");
      if (!fs::exists(p)) continue;
      auto info = crypto::ReadKeyFileInfo(p);
      if (!info.ok()) return Fail(g, info.status());
      Print(g, {{"name", *name}, {"address", info->address.Hex()}, {"pubkey", info->public_key.Hex()},
                {"path", p.string()}},
            *name + "\n  address " + info->address.Hex() + "\n  pubkey  " + info->public_key.Hex() + "\n  file    " +
                p.string() + "\n");
      return 0;
    }
    return Fail(g, Status::Invalid("key-unknown", "no key named " + *name + " (`vt keys list` shows them)"));
  }));
}

}  // namespace vt::cli
