// vt: the veritrain command line (docs/node.md, "CLI").
//   vt keys new|list|show                key files under <home>/keys      (keys.cpp)
//   vt account balance|transfer                                           (account.cpp)
//   vt bounty post|show|list|watch|result                                 (bounty.cpp)
//   vt dispute show                                                       (dispute.cpp)
//   vt validators                                                         (validators.cpp)
//   vt testnet up|down|status            a local testnet under <home>/testnet (testnet.cpp)
//   vt solver | vt challenger            the worker daemons               (daemons.cpp)
// Readable output by default, --json for scripts. Exit codes: 0 success,
// 1 failure, 2 usage error (a bad option or number, named with the fix).
#include "node/bin/vt/vt_cli.h"

int main(int argc, char** argv) {
  vt::cli::Globals g;
  CLI::App app{"vt: the veritrain command line"};
  app.require_subcommand(1);
  app.fallthrough();  // global options may follow the subcommand
  app.add_option("--home", g.home, "state directory (keys, testnet); default $VT_HOME or ~/.veritrain");
  app.add_option("--rpc", g.rpc, "node JSON-RPC host:port; default $VT_RPC, the local testnet, 127.0.0.1:8545");
  app.add_flag("--json", g.json, "machine-readable output");
  app.add_option("--passphrase-file", g.passphrase_file, "key passphrase file (else env VT_PASSPHRASE)");

  vt::cli::AddKeyCommands(app, g);
  vt::cli::AddAccountCommands(app, g);
  vt::cli::AddBountyCommands(app, g);
  vt::cli::AddDisputeCommands(app, g);
  vt::cli::AddTestnetCommands(app, g);
  vt::cli::AddDaemonCommands(app, g);
  vt::cli::AddValidatorCommands(app, g);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }
  return g.rc;
}
