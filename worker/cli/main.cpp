// vt-worker: train a job, audit a solver's run, inspect worker files,
// export weights, answer dispute questions. Parses options into a Config
// and calls the command (worker/cli/commands.h).
//
// Exit codes: 0 success, 1 failure (an audit that finds a divergence
// included), 2 usage error.

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <string>
#include <thread>

#include <CLI/CLI.hpp>

#include "common/cli_number.h"
#include "common/log.h"
#include "worker/cli/commands.h"

namespace {

using namespace vt::worker::cli;
using vt::cli::AddNumber;

void AddCommon(CLI::App* cmd, Common& c, bool compute) {
  cmd->add_flag("--json", c.json, "print one JSON object on stdout instead of text");
  if (compute) {
    // Every core by default: the thread count never changes a repops/rounded result.
    c.threads = static_cast<int>(std::clamp(std::thread::hardware_concurrency(), 1u, 1024u));
    AddNumber(cmd, "--threads", c.threads, "worker threads (default: every core; never changes a repops/rounded result)",
              1, 1024);
    cmd->add_option("--simd", c.simd, "repops vector path: auto, scalar, avx2, avx512")
        ->check(CLI::IsMember({"auto", "scalar", "avx2", "avx512"}));
    cmd->add_option("--device", c.device,
                    "where GEMMs run: cpu or cuda (never changes a repops/certified result; rounded replays stay on "
                    "the CPU)")
        ->check(CLI::IsMember({"cpu", "cuda"}));
    cmd->add_flag("!--no-progress", c.progress, "no progress line on stderr");
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"vt-worker: deterministic training jobs, checkpoints, signed commitments, audits and dispute answers"};
  app.option_defaults()->always_capture_default();
  app.require_subcommand(1);
  app.set_help_all_flag("--help-all", "help for every command");

  TrainConfig train;
  CLI::App* t = app.add_subcommand("train", "train a job, checkpoint every k steps, commit and sign");
  t->add_option("--job", train.job, "job file (JSON)")->required()->check(CLI::ExistingFile);
  t->add_option("--out", train.out, "run directory (checkpoints, logs, manifest, commitment)")->required();
  t->add_flag("--resume", train.resume, "continue the run in --out from its last checkpoint");
  AddNumber(t, "--resume-step", train.resume_step, "continue from the checkpoint at this step (implies --resume)");
  AddNumber(t, "--stop-at-step", train.stop_at_step, "stop once this step is reached (resume later)");
  t->add_option("--key", train.key, "worker key file, created when absent (default: <out>/worker.key)");
  t->add_option("--passphrase-env", train.passphrase_env, "environment variable holding the key passphrase");
  AddNumber(t, "--bounty-id", train.bounty_id, "bounty id written into the commitment");
  t->add_option("--adversary", train.adversary,
                "TEST ONLY: cheat on purpose, e.g. wrong-lr:step=7,factor=10 (kinds: poison-labels, tamper-weight, "
                "skip-steps, wrong-lr, forge-log, wrong-output)");
  t->add_option(
       "--fp64-gemm", train.fp64_gemm,
       "rounded jobs: the fp64 GEMM the trainer records on: auto (the faster here), vendor (OpenBLAS "
       "dgemm) or reference (the canonical one every replay runs); never changes whether a replay "
       "accepts the logs")
      ->check(CLI::IsMember({"auto", "vendor", "reference"}));
  AddCommon(t, train.common, true);

  AuditConfig audit;
  CLI::App* a = app.add_subcommand("audit", "replay a solver's run and compare every checkpoint hash");
  a->add_option("--job", audit.job, "job file (JSON)")->required()->check(CLI::ExistingFile);
  a->add_option("--solver", audit.solver, "the solver's run directory")->required()->check(CLI::ExistingDirectory);
  a->add_option("--commitment", audit.commitment, "the solver's commitment (default: <solver>/commitment.bin)");
  a->add_option("--out", audit.out, "keep this challenger's own checkpoints here (for dispute answers)");
  a->add_flag("--no-logs", audit.no_logs, "rounded mode: do not follow the solver's logs (shows why they are needed)");
  a->add_flag("--locate", audit.locate,
              "on divergence, narrow it down to the step and node and re-execute that node (answers the solver's "
              "questions from its run directory)");
  a->add_option("--solver-adversary", audit.solver_adversary,
                "TEST ONLY: the adversary the solver trained with, so its answers stay consistent");
  AddCommon(a, audit.common, true);

  InspectConfig inspect;
  CLI::App* i = app.add_subcommand("inspect", "show a run directory, checkpoint, commitment, rounding log, "
                                              "node-inputs file or job file");
  i->add_option("path", inspect.path, "file or run directory")->required();
  i->add_flag("--tensors", inspect.tensors, "list every tensor with its norm and hash");
  AddCommon(i, inspect.common, false);

  ExportConfig exp;
  CLI::App* e = app.add_subcommand("export", "write a checkpoint's weights as safetensors");
  e->add_option("--run", exp.run, "run directory")->required()->check(CLI::ExistingDirectory);
  e->add_option("--out", exp.out, "output .safetensors file")->required();
  auto* ck = AddNumber(e, "--checkpoint", exp.checkpoint, "checkpoint index (default: the last)");
  AddNumber(e, "--step", exp.step, "checkpoint at this step")->excludes(ck);
  e->add_flag("--include-optimizer", exp.include_optimizer, "also write the optimizer state (opt.*)");
  AddCommon(e, exp.common, false);

  DisputeConfig dispute;
  CLI::App* d = app.add_subcommand("dispute", "answer dispute questions from a run");
  d->require_subcommand(1);
  auto add_run = [&](CLI::App* cmd) {
    cmd->add_option("--job", dispute.job, "job file (JSON)")->required()->check(CLI::ExistingFile);
    cmd->add_option("--run", dispute.run, "the answering party's run directory")->required()->check(CLI::ExistingDirectory);
    cmd->add_option("--logs", dispute.logs, "rounded mode: the run whose logs to follow (default: --run)");
    cmd->add_option("--adversary", dispute.adversary, "TEST ONLY: answer as the cheating solver that trained with it");
    AddCommon(cmd, dispute.common, true);
  };
  CLI::App* ds = d->add_subcommand("steps", "(a) per-step state hashes of one checkpoint interval");
  add_run(ds);
  AddNumber(ds, "--checkpoint", dispute.checkpoint, "the interval ending at this checkpoint index")->required();
  CLI::App* dr = d->add_subcommand("records", "(b) the node records of one step, in canonical order");
  add_run(dr);
  AddNumber(dr, "--step", dispute.step, "step t (the transition h_t -> h_t+1)")->required();
  CLI::App* di = d->add_subcommand("inputs", "(c) one node's inputs with Merkle proofs, to a file");
  add_run(di);
  AddNumber(di, "--step", dispute.step, "step t")->required();
  AddNumber(di, "--node", dispute.node, "node index")->required();
  di->add_option("--out", dispute.inputs, "node-inputs file to write")->required();
  CLI::App* dx = d->add_subcommand("exec", "(d) check a node-inputs file's proofs and re-execute the node alone");
  dx->add_option("--job", dispute.job, "job file (JSON)")->required()->check(CLI::ExistingFile);
  dx->add_option("--inputs", dispute.inputs, "node-inputs file")->required()->check(CLI::ExistingFile);
  AddCommon(dx, dispute.common, false);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& ex) {
    return app.exit(ex) == 0 ? kExitOk : kExitUsage;
  } catch (const CLI::CallForAllHelp& ex) {
    return app.exit(ex) == 0 ? kExitOk : kExitUsage;
  } catch (const CLI::ParseError& ex) {
    app.exit(ex);
    return kExitUsage;
  }
  if (const char* spec = std::getenv("VT_LOG")) (void)vt::log::SetLevels(spec);

  if (t->parsed()) return RunTrain(train);
  if (a->parsed()) return RunAudit(audit);
  if (i->parsed()) return RunInspect(inspect);
  if (e->parsed()) return RunExport(exp);
  if (d->parsed()) {
    if (ds->parsed()) dispute.what = "steps";
    if (dr->parsed()) dispute.what = "records";
    if (di->parsed()) dispute.what = "inputs";
    if (dx->parsed()) dispute.what = "exec";
    return RunDispute(dispute);
  }
  return kExitUsage;
}
