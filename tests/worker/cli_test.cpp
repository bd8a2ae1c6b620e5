// The vt-worker binary as a user (and a CI script) runs it: help and exit
// codes, train → audit → inspect → export, clear errors for bad files, and
// determinism across OpenBLAS core types and thread counts, which only
// separate processes can show (OPENBLAS_CORETYPE is read at load time), and
// kill -9 at any moment of a run.

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "crypto/keyfile.h"
#include "tests/support/test_seed.h"
#include "tests/worker/train_fixtures.h"
#include "worker/safetensors.h"
#include "worker/trainer.h"

#ifndef VT_WORKER_BIN
#error "VT_WORKER_BIN must name the vt-worker binary"
#endif

namespace vt::worker {
namespace {

using nlohmann::json;
using test::Family;

struct CliRun {
  int code = -1;
  std::string out;
  std::string err;
  json Json() const {
    json j = json::parse(out, nullptr, false);
    if (j.is_discarded()) ADD_FAILURE() << "stdout is not JSON:\n" << out << "\nstderr:\n" << err;
    return j;
  }
};

std::string Slurp(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string Quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

class Cli {
 public:
  // k.key: a worker key with cheap scrypt parameters, so that the many
  // short runs here do not spend their time deriving the key.
  Cli() {
    m_key = m_dir / "k.key";
    auto key = crypto::SecretKey::Generate();
    if (!key.ok() || !crypto::WriteKeyFile(m_key, *key, "", crypto::ScryptParams{10, 8, 1}).ok()) {
      throw std::runtime_error("cannot write the test key");
    }
  }
  const test::TempDir& dir() const { return m_dir; }
  const std::filesystem::path& key() const { return m_key; }

  // Runs vt-worker with `args` (and `env` assignments) in the temp directory.
  CliRun operator()(const std::vector<std::string>& args, const std::string& env = "") const {
    std::string cmd = "cd " + Quote(m_dir.path().string()) + " && env " + (env.empty() ? "" : env + " ") +
                      Quote(VT_WORKER_BIN);
    for (const std::string& a : args) cmd += " " + Quote(a);
    cmd += " > out.txt 2> err.txt";
    const int status = std::system(cmd.c_str());
    CliRun r;
    r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.out = Slurp(m_dir / "out.txt");
    r.err = Slurp(m_dir / "err.txt");
    return r;
  }

  void Write(const std::string& name, const std::string& text) const {
    test::WriteBytes(m_dir / name, AsBytes(text));
  }

 private:
  test::TempDir m_dir;
  std::filesystem::path m_key;
};

bool CpuHas(const std::string& flag) {
  const std::string info = Slurp("/proc/cpuinfo");
  return info.find(" " + flag + " ") != std::string::npos || info.find(" " + flag + "\n") != std::string::npos;
}

TEST(CliTest, HelpShowsCommandsAndDefaults) {
  Cli cli;
  CliRun r = cli({"--help"});
  EXPECT_EQ(r.code, 0);
  for (const char* cmd : {"train", "audit", "inspect", "export", "dispute"}) {
    EXPECT_NE(r.out.find(cmd), std::string::npos) << cmd;
  }
  r = cli({"train", "--help"});
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("--threads"), std::string::npos);
  EXPECT_NE(r.out.find("VT_PASSPHRASE"), std::string::npos) << r.out;  // a default shown
  EXPECT_NE(r.out.find("TEST ONLY"), std::string::npos);                // the adversary flag is marked
}

TEST(CliTest, UsageErrorsExitWithTwo) {
  Cli cli;
  EXPECT_EQ(cli({}).code, 2);
  EXPECT_EQ(cli({"frobnicate"}).code, 2);
  EXPECT_EQ(cli({"train"}).code, 2);                                             // --job and --out missing
  EXPECT_EQ(cli({"train", "--job", "missing.json", "--out", "r"}).code, 2);     // no such file
  EXPECT_EQ(cli({"train", "--job", "x", "--out", "r", "--threads", "0"}).code, 2);
  EXPECT_EQ(cli({"dispute"}).code, 2);
  cli.Write("job.json", test::JobJson(Family::kMlp, "repops"));
  const CliRun tpu = cli({"train", "--job", "job.json", "--out", "r", "--device", "tpu"});
  EXPECT_EQ(tpu.code, 2);
  EXPECT_NE(tpu.err.find("--device"), std::string::npos) << tpu.err;
}

TEST(CliTest, TrainAuditInspectExport) {
  Cli cli;
  cli.Write("job.json", test::JobJson(Family::kMlp, "rounded"));
  CliRun train = cli({"train", "--job", "job.json", "--out", "run", "--json", "--bounty-id", "9"});  // creates run/worker.key
  ASSERT_EQ(train.code, 0) << train.err;
  const json t = train.Json();
  EXPECT_TRUE(t["complete"].get<bool>());
  EXPECT_EQ(t["commitment"]["bounty_id"], 9);
  EXPECT_GT(t["logs"]["entries"].get<std::uint64_t>(), 0u);
  EXPECT_NE(train.err.find("step 8/8"), std::string::npos) << train.err;  // the progress line

  CliRun audit = cli({"audit", "--job", "job.json", "--solver", "run", "--threads", "2", "--json"});
  EXPECT_EQ(audit.code, 0) << audit.err;
  EXPECT_EQ(audit.Json()["verdict"], "agree");
  audit = cli({"audit", "--job", "job.json", "--solver", "run", "--no-progress"});
  EXPECT_EQ(audit.code, 0);
  EXPECT_NE(audit.out.find("verdict: agree"), std::string::npos) << audit.out;

  CliRun c = cli({"inspect", "run/commitment.bin", "--json"});
  ASSERT_EQ(c.code, 0) << c.err;
  EXPECT_EQ(c.Json()["type"], "commitment");
  EXPECT_TRUE(c.Json()["signature_valid"].get<bool>());
  EXPECT_EQ(c.Json()["checkpoint_root"], t["commitment"]["checkpoint_root"]);

  CliRun r = cli({"inspect", "run", "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.Json()["commitment_check"], "ok");
  EXPECT_EQ(r.Json()["checkpoints"], 4);
  const std::string final_hash = t["commitment"]["final_state_hash"];
  CliRun ck = cli({"inspect", "run/checkpoints/" + final_hash + ".ckpt", "--json", "--tensors"});
  ASSERT_EQ(ck.code, 0) << ck.err;
  EXPECT_EQ(ck.Json()["step"], 8);
  EXPECT_EQ(ck.Json()["state_hash"], final_hash);
  CliRun log = cli({"inspect", "run/logs/000000.vtlog", "--json"});
  ASSERT_EQ(log.code, 0) << log.err;
  EXPECT_EQ(log.Json()["steps"], 3);
  CliRun human = cli({"inspect", "run/logs/000000.vtlog"});
  EXPECT_NE(human.out.find("entries"), std::string::npos);

  CliRun ex = cli({"export", "--run", "run", "--out", "model.safetensors", "--json"});
  ASSERT_EQ(ex.code, 0) << ex.err;
  auto st = LoadSafetensors(cli.dir() / "model.safetensors");
  ASSERT_TRUE(st.ok()) << st.status().ToString();
  EXPECT_EQ(st->metadata["veritrain.state_hash"], final_hash);
  auto run = RunDir::Open(cli.dir() / "run", false);
  auto state = LoadCheckpoint(*run, *run->LoadManifest(), 3);
  ASSERT_TRUE(state.ok());
  std::size_t params = 0;
  for (const auto& [name, tensor] : state->tensors) {
    if (name.rfind("opt.", 0) == 0) {
      EXPECT_EQ(st->tensors.count(name), 0u) << name;
      continue;
    }
    ++params;
    ASSERT_EQ(st->tensors.count(name), 1u) << name;
    EXPECT_TRUE(st->tensors.at(name).BitwiseEqual(tensor)) << name;
  }
  EXPECT_EQ(st->tensors.size(), params);
  EXPECT_EQ(cli({"export", "--run", "run", "--out", "m2.safetensors", "--step", "5"}).code, 1);  // not a checkpoint
}

TEST(CliTest, StopAndResumeGivesTheSameCommitment) {
  Cli cli;
  cli.Write("job.json", test::JobJson(Family::kCnn, "repops"));
  CliRun full = cli({"train", "--job", "job.json", "--out", "full", "--json", "--key", "k.key"});
  ASSERT_EQ(full.code, 0) << full.err;
  CliRun part = cli({"train", "--job", "job.json", "--out", "part", "--json", "--stop-at-step", "4", "--key", "k.key"});
  ASSERT_EQ(part.code, 0) << part.err;
  EXPECT_FALSE(part.Json()["complete"].get<bool>());
  EXPECT_EQ(cli({"train", "--job", "job.json", "--out", "part", "--key", "k.key"}).code, 1);  // run-exists
  CliRun rest = cli({"train", "--job", "job.json", "--out", "part", "--json", "--resume", "--key", "k.key"});
  ASSERT_EQ(rest.code, 0) << rest.err;
  // Same key and same run: the same signed message (signatures use fresh randomness).
  EXPECT_EQ(rest.Json()["commitment"]["signing_hash"], full.Json()["commitment"]["signing_hash"]);
}

// What a kill -9 leaves, whenever it lands: the checkpoints are written in
// the background, in batches when the writer falls behind
// (worker/checkpoint_queue.h), and still a manifest on disk names only
// checkpoints and log files that load and verify; resuming gives the
// uninterrupted run's commitment. Eight kills spread over the run's length.
TEST(CliTest, KilledAtAnyMomentResumesToTheSameCommitment) {
  Cli cli;
  cli.Write("job.json", test::JobJson(Family::kMlp, "rounded", /*steps=*/60, /*interval=*/2));
  const auto t0 = std::chrono::steady_clock::now();
  const CliRun full = cli({"train", "--job", "job.json", "--out", "full", "--json", "--key", "k.key"});
  const double full_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_EQ(full.code, 0) << full.err;
  const json want = full.Json()["commitment"]["signing_hash"];

  std::mt19937_64 rng(vt::test::TestSeed());
  std::uniform_real_distribution<double> when(0.0, 1.2 * full_ms);
  for (int trial = 0; trial < 8; ++trial) {
    const std::string out = "killed" + std::to_string(trial);
    const std::string job = (cli.dir().path() / "job.json").string(), dir = (cli.dir().path() / out).string(),
                      key = cli.key().string();
    std::vector<std::string> args = {VT_WORKER_BIN, "train", "--job", job,     "--out",
                                     dir,           "--key", key,     "--json"};
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t quiet;
    posix_spawn_file_actions_init(&quiet);
    posix_spawn_file_actions_addopen(&quiet, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&quiet, 2, "/dev/null", O_WRONLY, 0);
    pid_t pid = 0;
    ASSERT_EQ(posix_spawn(&pid, VT_WORKER_BIN, &quiet, nullptr, argv.data(), environ), 0);
    posix_spawn_file_actions_destroy(&quiet);
    const double kill_ms = when(rng);
    std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(kill_ms));
    ::kill(pid, SIGKILL);
    int status = 0;
    ::waitpid(pid, &status, 0);

    std::size_t listed = 0;
    if (std::filesystem::exists(std::filesystem::path(dir) / "run.json")) {
      auto run = RunDir::Open(dir, /*create=*/false);
      ASSERT_TRUE(run.ok()) << run.status().ToString();
      auto manifest = run->LoadManifest();
      ASSERT_TRUE(manifest.ok()) << "trial " << trial << ": " << manifest.status().ToString();
      listed = manifest->checkpoints.size();
      for (std::uint64_t i = 0; i < listed; ++i) {
        EXPECT_TRUE(LoadCheckpoint(*run, *manifest, i).ok()) << "trial " << trial << ", checkpoint " << i;
      }
      for (const IntervalLogEntry& e : manifest->logs) {
        EXPECT_TRUE(run->LoadIntervalLogs(e).ok()) << "trial " << trial << ", log " << e.index;
      }
    }
    const CliRun rest =
        cli({"train", "--job", "job.json", "--out", out, "--json", "--resume", "--key", "k.key"});
    ASSERT_EQ(rest.code, 0) << "trial " << trial << ": " << rest.err;
    EXPECT_EQ(rest.Json()["commitment"]["signing_hash"], want) << "trial " << trial;
    std::printf("[kill -9] trial %d: killed at %.0f of %.0f ms (%s), %zu of 31 checkpoints listed\n", trial,
                kill_ms, full_ms, WIFSIGNALED(status) ? "running" : "had exited", listed);
  }
}

TEST(CliTest, ClearErrorsForBadInput) {
  Cli cli;
  cli.Write("job.json", test::JobJson(Family::kMlp, "repops"));
  ASSERT_EQ(cli({"train", "--job", "job.json", "--out", "run", "--no-progress", "--key", "k.key"}).code, 0);
  auto expect_error = [&](const std::vector<std::string>& args, const std::string& reason) {
    CliRun r = cli(args);
    EXPECT_EQ(r.code, 1) << reason;
    EXPECT_NE(r.err.find(reason), std::string::npos) << "expected " << reason << " in: " << r.err;
    CliRun j = cli([&] {
      auto a = args;
      a.push_back("--json");
      return a;
    }());
    EXPECT_EQ(j.Json()["error"]["reason"], reason);
  };
  // An unknown model option.
  std::string typo = test::JobJson(Family::kMlp, "repops");
  typo.replace(typo.find("\"mlp-tiny\""), 10, R"({"preset": "mlp-tiny", "widths": [3]})");
  cli.Write("typo.json", typo);
  expect_error({"train", "--job", "typo.json", "--out", "r2"}, "job-unknown-option");
  // A dataset that does not match its root.
  std::string rooted = test::JobJson(Family::kMlp, "repops");
  rooted.insert(rooted.size() - 1, ", \"dataset_root\": \"" + std::string(64, '0') + "\"");
  cli.Write("rooted.json", rooted);
  expect_error({"train", "--job", "rooted.json", "--out", "r3"}, "dataset-root-mismatch");
  // Missing, truncated and corrupted files.
  expect_error({"inspect", "nothing.ckpt"}, "file-not-found");
  const RunManifest m = test::ManifestOf(cli.dir() / "run");
  const std::string ck = "run/checkpoints/" + m.checkpoints[1].state_hash.Hex() + ".ckpt";
  const Bytes good = test::ReadAll(cli.dir() / ck);
  test::WriteBytes(cli.dir() / ck, ByteSpan(good).first(good.size() - 10));
  expect_error({"inspect", ck}, "checkpoint-truncated");
  Bytes bad = good;
  bad[good.size() / 2] ^= 0x5a;
  test::WriteBytes(cli.dir() / ck, bad);
  expect_error({"inspect", ck}, "checkpoint-corrupt");
  expect_error({"export", "--run", "run", "--out", "x.safetensors", "--checkpoint", "1"}, "checkpoint-corrupt");
  expect_error({"train", "--job", "job.json", "--out", "run", "--resume-step", "3"}, "checkpoint-corrupt");
  const Bytes commitment = test::ReadAll(cli.dir() / "run/commitment.bin");
  test::WriteBytes(cli.dir() / "short.bin", ByteSpan(commitment).first(50));
  expect_error({"inspect", "short.bin"}, "inspect-unknown-file");
  expect_error({"audit", "--job", "job.json", "--solver", "run", "--commitment", "short.bin"}, "commitment-corrupt");
  expect_error({"train", "--job", "job.json", "--out", "r4", "--adversary", "steal:step=1"}, "adversary-bad-spec");
}

TEST(CliTest, AnAdversaryIsCaughtAndLocated) {
  Cli cli;
  cli.Write("job.json", test::JobJson(Family::kMlp, "repops"));
  const std::string adv = "wrong-lr:step=4,factor=10";
  CliRun train = cli({"train", "--job", "job.json", "--out", "run", "--adversary", adv, "--no-progress", "--key", "k.key"});
  ASSERT_EQ(train.code, 0) << train.err;
  EXPECT_NE(train.err.find("TEST-ONLY"), std::string::npos);
  CliRun audit = cli({"audit", "--job", "job.json", "--solver", "run", "--locate", "--solver-adversary", adv, "--json"});
  EXPECT_EQ(audit.code, 1) << audit.err;
  const json a = audit.Json();
  EXPECT_EQ(a["verdict"], "diverged");
  EXPECT_EQ(a["first_divergent_checkpoint"], 2);
  EXPECT_EQ(a["location"]["step"], 4);
  EXPECT_EQ(a["location"]["node_name"], "lr");
  EXPECT_FALSE(a["location"]["solver_right"].get<bool>());
  EXPECT_TRUE(a["location"]["challenger_right"].get<bool>());

  // The same through the dispute commands: records, inputs, re-execution.
  CliRun records = cli({"dispute", "records", "--job", "job.json", "--run", "run", "--step", "4", "--adversary", adv, "--json"});
  ASSERT_EQ(records.code, 0) << records.err;
  const std::uint64_t node = a["location"]["node"];
  CliRun inputs = cli({"dispute", "inputs", "--job", "job.json", "--run", "run", "--step", "4", "--node",
                    std::to_string(node), "--adversary", adv, "--out", "node.bin"});
  ASSERT_EQ(inputs.code, 0) << inputs.err;
  CliRun exec = cli({"dispute", "exec", "--job", "job.json", "--inputs", "node.bin", "--json"});
  ASSERT_EQ(exec.code, 0) << exec.err;
  EXPECT_EQ(exec.Json()["verdict"], "executed");
  EXPECT_FALSE(exec.Json()["record_confirmed"].get<bool>());  // the cheater's record is wrong
  CliRun inspect = cli({"inspect", "node.bin", "--json"});
  EXPECT_EQ(inspect.Json()["node"], node);
  CliRun steps = cli({"dispute", "steps", "--job", "job.json", "--run", "run", "--checkpoint", "2", "--json"});
  ASSERT_EQ(steps.code, 0);
  EXPECT_EQ(steps.Json()["hashes"].size(), 4u);
}

// The same job under different OpenBLAS core types and thread counts:
// identical commitments in repops and rounded mode, different ones in
// native mode, for each model family.
// --fp64-gemm: a rounded trainer on OpenBLAS dgemm or on the canonical
// reference reports which it ran, and a challenger audits either run clean;
// an unknown choice is a usage error.
TEST(CliTest, RoundedTrainerOnEitherFp64GemmAuditsClean) {
  Cli cli;
  cli.Write("job.json", test::JobJson(Family::kGpt, "rounded"));
  for (const char* gemm : {"vendor", "reference"}) {
    const std::string out = std::string("run_") + gemm;
    CliRun train = cli({"train", "--job", "job.json", "--out", out, "--fp64-gemm", gemm, "--json", "--key",
                        "k.key", "--no-progress"});
    ASSERT_EQ(train.code, 0) << train.err;
    EXPECT_EQ(train.Json()["config"]["fp64_gemm"], gemm);
    CliRun audit = cli({"audit", "--job", "job.json", "--solver", out, "--no-progress", "--threads", "2"});
    EXPECT_EQ(audit.code, 0) << gemm << "\n" << audit.out << audit.err;
  }
  CliRun plain = cli({"train", "--job", "job.json", "--out", "run_auto", "--key", "k.key", "--no-progress"});
  ASSERT_EQ(plain.code, 0) << plain.err;
  EXPECT_NE(plain.err.find("rounded trainer: fp64 GEMM"), std::string::npos) << plain.err;
  EXPECT_EQ(cli({"train", "--job", "job.json", "--out", "r", "--fp64-gemm", "openblas"}).code, 2);
}

TEST(CliTest, CommitmentsAcrossCoreTypesAndThreads) {
  std::vector<std::pair<std::string, std::string>> configs;  // core type, threads
  if (CpuHas("avx2") && CpuHas("fma")) configs.emplace_back("Haswell", "1");
  if (CpuHas("avx")) configs.emplace_back("Sandybridge", "2");
  configs.emplace_back("Prescott", "1");
  if (configs.size() < 2) GTEST_SKIP() << "this CPU offers fewer than two OpenBLAS core types to compare";
  Cli cli;
  for (Family f : {Family::kMlp, Family::kCnn, Family::kGpt}) {
    for (const char* mode : {"native", "repops", "rounded"}) {
      const std::string job = std::string(test::FamilyName(f)) + "_" + mode + ".json";
      cli.Write(job, test::JobJson(f, mode));
      std::set<std::string> roots, messages, cores;
      std::string first_run;
      for (const auto& [core, threads] : configs) {
        const std::string out = job + "." + core;
        CliRun r = cli({"train", "--job", job, "--out", out, "--threads", threads, "--json", "--key", "k.key",
                     "--no-progress"},
                    "OPENBLAS_CORETYPE=" + core);
        ASSERT_EQ(r.code, 0) << r.err;
        const json c = r.Json()["commitment"];
        roots.insert(c["checkpoint_root"].get<std::string>() + c["log_root"].get<std::string>());
        messages.insert(c["signing_hash"]);
        cores.insert(r.Json()["config"]["blas_core"].get<std::string>());
        if (first_run.empty()) first_run = out;
      }
      const std::string what = std::string(test::FamilyName(f)) + " " + mode;
      if (std::string(mode) == "native") {
        if (cores.size() < 2) {
          // An OpenBLAS built for one CPU ignores OPENBLAS_CORETYPE.
          std::cerr << "[note] OpenBLAS ran one kernel for every core type; native-mode difference not checked\n";
          continue;
        }
        EXPECT_GT(roots.size(), 1u) << what << ": native mode gave the same bits on every configuration";
      } else {
        EXPECT_EQ(roots.size(), 1u) << what;
        EXPECT_EQ(messages.size(), 1u) << what;
        // A challenger on the last configuration audits the first run.
        CliRun audit = cli({"audit", "--job", job, "--solver", first_run, "--no-progress", "--threads", configs.back().second},
                        "OPENBLAS_CORETYPE=" + configs.back().first);
        EXPECT_EQ(audit.code, 0) << what << "\n" << audit.out << audit.err;
      }
    }
  }
}

// --device cuda: where a CUDA device is present, the GEMMs run there and the
// commitments of repops and certified jobs equal the CPU's bit for bit (a
// rounded run trained on the GPU audits clean on the CPU); where none is,
// the command refuses before any work with the reason.
TEST(CliTest, CommitmentsOnCpuAndCuda) {
  Cli cli;
  cli.Write("probe.json", test::JobJson(Family::kMlp, "repops", 2, 1));
  const CliRun probe = cli({"train", "--job", "probe.json", "--out", "probe", "--device", "cuda", "--json",
                            "--key", "k.key", "--no-progress"});
  if (probe.code != 0) {
    EXPECT_EQ(probe.code, 1) << probe.err;
    EXPECT_EQ(probe.Json()["error"]["reason"], "cuda-unavailable") << probe.out;
    EXPECT_FALSE(std::filesystem::exists(cli.dir() / "probe" / "commitment.bin"));
    GTEST_SKIP() << "no usable CUDA device (refused with cuda-unavailable as it should): " << probe.err;
  }
  EXPECT_EQ(probe.Json()["config"]["device"], "cuda");
  for (Family f : {Family::kMlp, Family::kCnn, Family::kGpt}) {
    for (const char* mode : {"repops", "certified", "rounded"}) {
      const std::string job = std::string(test::FamilyName(f)) + "_" + mode + ".json";
      const std::string what = std::string(test::FamilyName(f)) + " " + mode;
      cli.Write(job, test::JobJson(f, mode));
      std::map<std::string, json> commitments;
      for (const char* device : {"cpu", "cuda"}) {
        CliRun r = cli({"train", "--job", job, "--out", job + "." + device, "--device", device, "--json", "--key",
                        "k.key", "--no-progress"});
        ASSERT_EQ(r.code, 0) << what << " on " << device << "\n" << r.err;
        EXPECT_EQ(r.Json()["config"]["device"], device);
        if (std::string(device) == "cuda") {
          EXPECT_EQ(r.Json()["config"]["device_fallbacks"], 0) << what;
        }
        commitments[device] = r.Json()["commitment"];
      }
      if (std::string(mode) == "rounded") {
        CliRun audit = cli({"audit", "--job", job, "--solver", job + ".cuda", "--device", "cpu", "--no-progress"});
        EXPECT_EQ(audit.code, 0) << what << ": the GPU-trained run does not audit on the CPU\n" << audit.out << audit.err;
      } else {
        EXPECT_EQ(commitments["cpu"]["checkpoint_root"], commitments["cuda"]["checkpoint_root"]) << what;
        EXPECT_EQ(commitments["cpu"]["final_state_hash"], commitments["cuda"]["final_state_hash"]) << what;
      }
    }
  }
}

TEST(CliTest, FashionMnistEndToEnd) {
  const std::filesystem::path data = "/usr/share/datasets/fashion-mnist";
  if (!std::filesystem::exists(data / "train-images-idx3-ubyte.gz")) {
    GTEST_SKIP() << "Fashion-MNIST not found in " << data << ": the end-to-end test on real data is skipped";
  }
  Cli cli;
  cli.Write("fashion.json", R"({
    "model": "mlp-fashion",
    "optimizer": {"kind": "adamw", "lr": 0.003},
    "dataset": {"kind": "idx", "dir": ")" + data.string() + R"(", "split": "train", "limit": 512},
    "seed": 1, "batch_size": 32, "steps": 12, "checkpoint_interval": 4, "mode": "repops"})");
  CliRun train = cli({"train", "--job", "fashion.json", "--out", "run", "--json", "--no-progress", "--key", "k.key"});
  ASSERT_EQ(train.code, 0) << train.err;
  const RunManifest m = test::ManifestOf(cli.dir() / "run");
  ASSERT_EQ(m.losses.size(), 12u);
  EXPECT_LT(m.losses.back(), m.losses.front()) << "the loss did not go down on Fashion-MNIST";
  CliRun audit = cli({"audit", "--job", "fashion.json", "--solver", "run", "--threads", "2", "--json", "--no-progress"});
  EXPECT_EQ(audit.code, 0) << audit.out << audit.err;
  CliRun job = cli({"inspect", "fashion.json", "--json"});
  ASSERT_EQ(job.code, 0) << job.err;
  EXPECT_EQ(job.Json()["job_hash"], train.Json()["job_hash"]);
}

}  // namespace
}  // namespace vt::worker
