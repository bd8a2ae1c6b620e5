// The vt binary's usage errors need no node: numbers are parsed strictly
// (no `--amount -1` wrapping to 2^64-1, no overflow), and mistakes in a job
// file are named with the fix — before any key or node is asked for.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "tests/support/run_command.h"

#ifndef VT_BIN
#error "VT_BIN must name the vt binary"
#endif

namespace {

namespace fs = std::filesystem;

using vt::test::CliRun;

// stdout and stderr together, with a home that holds no keys.
CliRun Vt(const std::string& args) {
  return vt::test::RunCommand(std::string(VT_BIN) + " --home /nonexistent/vt-home " + args + " 2>&1");
}

TEST(VtCli, NumbersAreParsedStrictly) {
  struct Case {
    std::string args;
    std::string says;  // in the message
  };
  const Case cases[] = {
      {"account transfer --from a --to b --amount -1", "--amount"},
      {"account transfer --from a --to b --amount -1", "negative"},
      {"account transfer --from a --to b --amount 18446744073709551616", "too large"},
      {"account transfer --from a --to b --amount 0x10", "decimal digits only"},
      {"account transfer --from a --to b --amount 0", "below 1"},
      {"bounty post --from a --job /etc/hostname --solver-bond -1", "--solver-bond"},
      {"bounty post --from a --job /etc/hostname --reward 99999999999999999999", "--reward"},
      {"bounty show 1.5", "decimal digits only"},
      {"bounty watch 3 --timeout -5", "--timeout"},
      {"dispute show 18446744073709551616", "too large"},
      {"testnet up --validators 4294967297", "--validators"},
      {"solver --key k --data d --job j --threads -2", "--threads"},
      {"bounty result 0 --out x --checkpoint -1", "--checkpoint"},
      {"bounty result 0 --out x --checkpoint 18446744073709551616", "too large"},
  };
  for (const Case& c : cases) {
    const CliRun r = Vt(c.args);
    EXPECT_EQ(r.code, 2) << c.args << "\n" << r.out;
    EXPECT_NE(r.out.find(c.says), std::string::npos) << c.args << "\n" << r.out;
  }
}

class VtJobErrors : public ::testing::Test {
 protected:
  void SetUp() override {
    m_dir = fs::temp_directory_path() / ("vt-cli-test-" + std::to_string(::getpid()));
    fs::create_directories(m_dir);
  }
  void TearDown() override { fs::remove_all(m_dir); }
  std::string Job(const std::string& name, const std::string& text) {
    std::ofstream(m_dir / name) << text;
    return (m_dir / name).string();
  }
  fs::path m_dir;
};

TEST_F(VtJobErrors, JobMistakesAreNamedWithTheFix) {
  const std::string base = R"("optimizer": {"kind": "sgd", "lr": 0.05},
    "seed": 7, "steps": 4, "checkpoint_interval": 2, "mode": "repops")";
  struct Case {
    std::string job;
    std::vector<std::string> says;
  };
  const Case cases[] = {
      {R"({"model": "mlp-tiny", "dataset": {"kind": "synthetic", "seed": 3, "count": 8, "input_dim": 16,
          "classes": 4}, "batch_size": 9, )" + base + "}",
       {"job-dataset-mismatch", "batch_size 9 exceeds the dataset's 8 examples", "lower batch_size"}},
      {R"({"model": "mlp-tiny", "dataset": {"kind": "synthetic", "seed": 3, "count": 8, "input_dim": 16,
          "classes": 4}, "batch_sise": 4, )" + base + "}",
       {"job-unknown-option", "batch_sise"}},
      {R"({"model": "mlp-tiny", "dataset": {"kind": "text", "path": "no-such-corpus.txt", "window": 8},
          "batch_size": 4, )" + base + "}",
       {"no-such-corpus.txt", "fix: check the path"}},
  };
  int i = 0;
  for (const Case& c : cases) {
    const std::string job = Job("job" + std::to_string(i++) + ".json", c.job);
    const CliRun r = Vt("bounty post --from nobody --job " + job);
    EXPECT_EQ(r.code, 1) << r.out;
    for (const std::string& s : c.says) EXPECT_NE(r.out.find(s), std::string::npos) << s << " in:\n" << r.out;
    EXPECT_EQ(r.out.find("key-unknown"), std::string::npos) << "the job is checked before the key";
  }
  // --init naming weights of another shape: the first mismatch, by name.
  const std::string job = Job("ok.json", R"({"model": "mlp-tiny", "dataset": {"kind": "synthetic", "seed": 3,
      "count": 8, "input_dim": 16, "classes": 4}, "batch_size": 4, )" + base + "}");
  const CliRun r = Vt("bounty post --from nobody --job " + job + " --init " + job);
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("safetensors"), std::string::npos) << r.out;
}

// Failures that come back as a bare reason (here: no node at --rpc) carry
// the fix, in text and in --json.
TEST(VtCli, BareReasonsComeWithTheirFix) {
  CliRun r = Vt("--rpc 127.0.0.1:1 bounty show 0");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("rpc-transport"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("fix: no node answers there"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("vt testnet up"), std::string::npos) << r.out;
  r = Vt("--json --rpc 127.0.0.1:1 bounty result 0 --checkpoint 2 --out x");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find(R"("reason":"rpc-transport")"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(R"("fix":"no node answers there)"), std::string::npos) << r.out;
}

}  // namespace
