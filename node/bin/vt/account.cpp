// vt account balance|transfer.
#include "common/cli_number.h"
#include "node/bin/vt/vt_cli.h"

namespace vt::cli {

namespace {
struct AccountOptions {
  std::string who, from, to;
  std::uint64_t amount = 0;
};
}  // namespace

void AddAccountCommands(CLI::App& app, Globals& g) {
  auto* account = app.add_subcommand("account", "balances and transfers")->require_subcommand(1);
  auto o = std::make_shared<AccountOptions>();

  auto* balance = account->add_subcommand("balance", "balance and nonce of an address or key name");
  balance->add_option("who", o->who, "address or key name")->required();
  balance->callback(Runs(g, [&g, o] {
    auto addr = ResolveAddress(g, o->who);
    if (!addr.ok()) return Fail(g, addr.status());
    auto c = Client(g);
    if (!c.ok()) return Fail(g, c.status());
    auto a = c->Account(*addr);
    if (!a.ok()) return Fail(g, a.status());
    Json j{{"address", addr->Hex()}, {"balance", a->balance}, {"nonce", a->nonce}};
    std::string text = o->who + "  " + std::to_string(a->balance) + "  (nonce " + std::to_string(a->nonce) + ")\n";
    if (!a->validator.is_null()) {
      // Bonded apart from the balance; the same lines as `vt validators`.
      const Json& v = a->validator;
      j["validator"] = v;
      text += "validator " + ValidatorText(v);
    }
    Print(g, j, text);
    return 0;
  }));

  auto* transfer = account->add_subcommand("transfer", "send funds");
  transfer->add_option("--from", o->from, "sender key name or key file")->required();
  transfer->add_option("--to", o->to, "recipient address or key name")->required();
  AddNumber(transfer, "--amount", o->amount, "amount", std::uint64_t{1})->required();
  transfer->callback(Runs(g, [&g, o] {
    auto key = LoadKey(g, o->from);
    if (!key.ok()) return Fail(g, key.status());
    auto addr = ResolveAddress(g, o->to);
    if (!addr.ok()) return Fail(g, addr.status());
    auto c = Client(g);
    if (!c.ok()) return Fail(g, c.status());
    auto id = c->Send(*key, vm::TransferPayload{*addr, o->amount}, 100'000);
    if (!id.ok()) return Fail(g, id.status());
    auto r = c->WaitReceipt(*id);
    if (!r.ok()) return Fail(g, r.status());
    Print(g, *r,
          std::string((*r)["success"].get<bool>() ? "sent " : "FAILED ") + std::to_string(o->amount) + " to " +
              addr->Hex() + " in block " + std::to_string((*r)["height"].get<std::uint64_t>()) + "\n");
    return (*r)["success"].get<bool>() ? 0 : 1;
  }));
}

}  // namespace vt::cli
