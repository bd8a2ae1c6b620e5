// The seeds of the checked-in fuzz corpora (tests/fuzz/corpus/<target>/),
// made from a real dispute of the scenario harness: its transactions and
// blocks, every referee call's arguments, job specs, node records, rounding
// logs, a log bundle and safetensors files, plus a few truncated and
// bit-flipped variants. The test checks that every intact seed decodes
// (so the corpora start where the decoders accept); with
// VT_FUZZ_CORPUS_OUT=<dir> it also writes them to <dir>/<target>/.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "common/limits.h"
#include "contract_vm/arbitration.h"
#include "contract_vm/block.h"
#include "contract_vm/tx.h"
#include "kernels/ops/registry.h"
#include "protocol/state.h"
#include "referee/messages.h"
#include "tests/contract_vm/test_chain.h"
#include "tests/fuzz/tx_execute_fuzz.h"
#include "tests/referee/history.h"
#include "tests/referee/scenario.h"
#include "worker/log_bundle.h"
#include "worker/run_dir.h"
#include "worker/safetensors.h"

namespace vt::test {
namespace {

using Corpus = std::map<std::string, std::vector<Bytes>>;

Bytes With(std::uint8_t selector, ByteSpan body) {
  // Sized up front (g++ 12 misreads an insert into a one-byte vector as out of bounds).
  Bytes out(body.size() + 1);
  out[0] = selector;
  std::copy(body.begin(), body.end(), out.begin() + 1);
  return out;
}

// Damaged copies: the decoder's error paths start from real bytes.
void AddVariants(std::vector<Bytes>& seeds, const Bytes& seed, std::size_t keep_prefix) {
  if (seed.size() > keep_prefix + 2) {
    seeds.push_back(Bytes(seed.begin(), seed.begin() + static_cast<std::ptrdiff_t>(keep_prefix + (seed.size() - keep_prefix) / 2)));
    Bytes flipped = seed;
    flipped[keep_prefix + (seed.size() - keep_prefix) / 3] ^= 0x41;
    seeds.push_back(std::move(flipped));
  }
}

std::size_t AgentOf(const ScenarioDriver& d, const vm::Transaction& tx) {
  for (std::size_t a = 0; a < 3; ++a)
    if (d.key(a).public_key().bytes() == tx.sender) return a;
  return 3;
}

// Referee method → referee_args_fuzz selector.
std::optional<std::uint8_t> ArgsSelector(std::uint16_t method) {
  switch (static_cast<referee::Method>(method)) {
    case referee::Method::kPostBounty: return 0;
    case referee::Method::kClaim:
    case referee::Method::kRefund:
    case referee::Method::kFinalize: return 1;
    case referee::Method::kCommit: return 2;
    case referee::Method::kOpenGame: return 3;
    case referee::Method::kRevealChildren: return 4;
    case referee::Method::kPostStepRoot: return 5;
    case referee::Method::kPostNodeRoot: return 6;
    case referee::Method::kRevealRecord: return 7;
    case referee::Method::kArbitrate: return 8;
    case referee::Method::kClaimTimeout:
    case referee::Method::kCloseGame: return 9;  // both take GameIdArgs
    case referee::Method::kPostChunkRoot: return 12;
    case referee::Method::kRevealChunk: return 13;
    case referee::Method::kPostPartialsRoot: return 14;
    case referee::Method::kRevealStep: return 15;
    case referee::Method::kOpenElement: return 16;
    case referee::Method::kRevealReduceStep: return 17;
  }
  return std::nullopt;
}

// The first node of step `step` of the scenario's tiny job with this op
// kind (linear_backward: the one whose inputs are not the batch).
std::uint32_t NodeOf(const ScenarioConfig& config, kernels::OpKind op, std::uint64_t step) {
  const auto h = Train(MakeTinyJob(config.steps, config.interval, config.mode, 42, config.hidden), {});
  EXPECT_TRUE(h.ok()) << h.status().ToString();
  const auto& records = h->records[step];
  for (std::uint32_t n = 0; n + 1 < records.size(); ++n) {
    bool batch = false;
    for (const auto& ref : records[n].inputs) batch = batch || ref.source == protocol::InputSource::kBatch;
    if (records[n].op_kind == static_cast<std::uint16_t>(op) &&
        (!batch || op != kernels::OpKind::kLinearBackward))
      return n;
  }
  ADD_FAILURE() << "no node of op " << static_cast<int>(op);
  return 0;
}

// A dispute of the fuzz world's shape (tx_execute_fuzz.cpp), mode `mode`
// (a certified one with element_level: exact partial sums on the wire);
// with `element_level` the solver plants one wrong value of `op`'s output
// `slot` (linear_backward's dW: the dot rule; its db, or the cross-entropy
// gradient: the reduction rule) with made-up partial sums and both sides
// descend into the node (levels 4 and 5b), so the element-level moves
// become seeds too.
void AddDispute(Corpus& c, kernels::Mode mode, bool exec_seeds, bool element_level = false,
                std::uint32_t slot = 1, kernels::OpKind op = kernels::OpKind::kLinearBackward) {
  ScenarioConfig config;
  config.mode = mode;
  config.solver.lies = {Lie{mode == kernels::Mode::kRounded ? LieKind::kLog : LieKind::kOutput, 4, 2}};
  config.challengers = {AgentPlan{}};
  if (element_level) {
    config.element_level_enabled = true;
    config.solver.lies = {Lie{LieKind::kOneValue, 4, NodeOf(config, op, 4), slot, 0}};
    config.solver.element_level = true;
    // Made up from the first step; the cross-entropy gradient's only the
    // last, so the final move is its final step (it reads the row's max and sum).
    config.solver.sums =
        SumsPlan{SumsLie::kMadeUp, op == kernels::OpKind::kLinearBackward ? 1 : ~std::uint64_t{0}};
    config.challengers[0].element_level = true;
  }
  ScenarioDriver d(config);
  d.Start();
  std::size_t block_index = 0;
  auto harvest = [&](std::size_t from) {
    const auto& blocks = d.chain().blocks();
    for (std::size_t b = from; b < blocks.size(); ++b) {
      const vm::Block& block = blocks[b];
      if (c["tx_decode_fuzz"].size() < 40) c["tx_decode_fuzz"].push_back(With(1, EncodeToBytes(block)));
      std::vector<fuzz::ExecRecord> records;
      for (const vm::Transaction& tx : block.txs) {
        c["tx_decode_fuzz"].push_back(With(0, vm::EncodeTransaction(tx)));
        const auto* call = std::get_if<vm::CallPayload>(&tx.payload);
        if (call == nullptr) continue;
        if (auto sel = ArgsSelector(call->method)) {
          c["referee_args_fuzz"].push_back(With(*sel, call->args));
          if (*sel == 8) {
            auto args = DecodeExact<referee::ArbitrateArgs>(call->args);
            EXPECT_TRUE(args.ok());
            if (args.ok()) {
              c["referee_args_fuzz"].push_back(With(11, args->payload));
              if (args->log_proofs) c["referee_args_fuzz"].push_back(With(10, EncodeToBytes(*args->log_proofs)));
            }
          }
        }
        records.push_back(fuzz::ExecRecord{static_cast<std::uint8_t>(AgentOf(d, tx)),
                                           static_cast<std::uint8_t>(call->method), call->args});
      }
      if (exec_seeds && !records.empty()) c["tx_execute_fuzz"].push_back(fuzz::EncodeExecInput(records));
    }
  };
  harvest(0);
  for (int i = 0; i < 3; ++i) d.Step();  // the fuzz world starts here
  block_index = d.chain().blocks().size();
  while (d.Step()) {
  }
  harvest(block_index);

  // Protocol objects of the solver's history.
  const History& h = d.history(1);
  c["protocol_fuzz"].push_back(With(0, protocol::EncodeJobSpec(h.job)));
  for (std::size_t i = 0; i < h.records[0].size(); i += 3)
    c["protocol_fuzz"].push_back(With(1, protocol::EncodeNodeRecord(h.records[0][i])));
  c["protocol_fuzz"].push_back(With(3, EncodeToBytes(h.headers[0])));
  c["protocol_fuzz"].push_back(With(3, EncodeToBytes(h.headers.back())));
  c["protocol_fuzz"].push_back(
      With(2, protocol::EncodeCommitment(MakeCommit(h, 1, d.key(1)).commitment)));

  if (mode == kernels::Mode::kRounded) {
    // Rounding logs, an interval log file and a bundle holding it.
    for (std::size_t s = 0; s < h.logs.size(); ++s)
      for (std::size_t n = 0; n < h.logs[s].size() && c["log_bundle_fuzz"].size() < 16; ++n)
        if (!h.logs[s][n].entries.empty())
          c["log_bundle_fuzz"].push_back(With(2, kernels::EncodeRoundingLog(h.logs[s][n])));
    worker::IntervalLogs logs;
    logs.first_step = 0;
    for (std::uint64_t s = 0; s < h.job.checkpoint_interval; ++s) logs.steps.push_back(h.logs[s]);
    const Bytes file = worker::EncodeIntervalLogFile(logs);
    c["log_bundle_fuzz"].push_back(With(1, file));
    worker::RunManifest m;
    m.job_hash = protocol::JobHash(h.job);
    m.num_steps = h.job.num_steps;
    m.interval = h.job.checkpoint_interval;
    m.mode = h.job.mode;
    for (std::uint64_t i = 0; i < 2; ++i)
      m.checkpoints.push_back(worker::CheckpointEntry{i, i * m.interval, h.h[i * m.interval]});
    worker::IntervalLogEntry e;
    e.index = 0;
    e.first_step = 0;
    e.steps = m.interval;
    e.hash = worker::IntervalLogHash(logs);
    e.file_bytes = file.size();
    e.entries = worker::CountLogEntries(logs);
    m.logs.push_back(e);
    for (std::uint64_t s = 0; s < m.interval; ++s) m.losses.push_back(0.5f);
    Writer w;
    w.PutU32(0x424C5456);  // "VTLB"
    w.PutU16(worker::kLogBundleVersion);
    w.PutString(worker::ManifestToJson(m));
    w.PutVarint(1);
    w.PutBytes(file);
    c["log_bundle_fuzz"].push_back(With(0, w.bytes()));
  }

  // Safetensors of the initial and the final state.
  for (std::size_t s : {std::size_t{0}, h.states.size() - 1}) {
    worker::TensorMap tensors;
    for (std::size_t i = 0; i < h.states[s].size(); ++i)
      tensors.emplace(h.headers[s].tensor_names[i], h.states[s][i]);
    c["safetensors_fuzz"].push_back(worker::EncodeSafetensors(tensors, {{"step", std::to_string(s)}}));
  }
}

Corpus MakeCorpus() {
  Corpus c;
  AddDispute(c, kernels::Mode::kRepops, true);
  AddDispute(c, kernels::Mode::kRounded, false);
  AddDispute(c, kernels::Mode::kRepops, false, /*element_level=*/true);
  // Certified mode's element-level moves carry exact partial sums (verify::PartialLeaf).
  AddDispute(c, kernels::Mode::kCertified, false, /*element_level=*/true);
  // … and its sums' moves too (a certified db: reveal-reduce-step with exact leaves).
  AddDispute(c, kernels::Mode::kCertified, false, /*element_level=*/true, /*slot=*/2);
  // … and a composite one's (the cross-entropy gradient: held values and a `right` operand leaf).
  AddDispute(c, kernels::Mode::kCertified, false, /*element_level=*/true, /*slot=*/0,
             kernels::OpKind::kCrossEntropyBackward);
  // Transfers, a stranger's call, and an empty record set for the executor.
  c["tx_execute_fuzz"].push_back(fuzz::EncodeExecInput({{0, 0, Bytes{1, 0, 0, 0, 0, 0, 0, 0, 3}},
                                                       {3, 0, Bytes{1, 0, 0, 0, 0, 0, 0, 0, 0}},
                                                       {2, 16, Bytes(8, 0)}}));
  // Limits: a job at each bound and one past it.
  protocol::JobSpec job = DecodeExact<protocol::JobSpec>(ByteSpan(c["protocol_fuzz"][0]).subspan(1)).value();
  job.dataset_size = limits::kMaxDatasetSize;
  job.batch_size = limits::kMaxBatchSize;
  c["protocol_fuzz"].push_back(With(0, protocol::EncodeJobSpec(job)));
  job.dataset_size += 1;
  c["protocol_fuzz"].push_back(With(0, protocol::EncodeJobSpec(job)));
  // Damaged copies of the first seeds of every target.
  for (auto& [target, seeds] : c) {
    const std::size_t n = std::min<std::size_t>(seeds.size(), 12);
    const std::size_t prefix = target == "safetensors_fuzz" || target == "tx_execute_fuzz" ? 0 : 1;
    for (std::size_t i = 0; i < n; ++i) AddVariants(seeds, Bytes(seeds[i]), prefix);
  }
  return c;
}

TEST(FuzzCorpus, SeedsComeFromARealDisputeAndDecode) {
  const Corpus c = MakeCorpus();
  for (const char* target : {"tx_decode_fuzz", "tx_execute_fuzz", "referee_args_fuzz", "protocol_fuzz",
                             "log_bundle_fuzz", "safetensors_fuzz"}) {
    ASSERT_TRUE(c.count(target)) << target;
    EXPECT_GE(c.at(target).size(), 8u) << target;
  }
  // Intact seeds decode.
  EXPECT_TRUE(vm::DecodeTransaction(ByteSpan(c.at("tx_decode_fuzz")[1]).subspan(1)).ok() ||
              DecodeExact<vm::Block>(ByteSpan(c.at("tx_decode_fuzz")[1]).subspan(1)).ok());
  EXPECT_TRUE(DecodeExact<vm::Block>(ByteSpan(c.at("tx_decode_fuzz")[0]).subspan(1)).ok());
  EXPECT_TRUE(protocol::DecodeJobSpec(ByteSpan(c.at("protocol_fuzz")[0]).subspan(1)).ok());
  EXPECT_TRUE(worker::DecodeSafetensors(c.at("safetensors_fuzz")[0]).ok());
  for (const Bytes& seed : c.at("referee_args_fuzz")) {
    if (seed[0] != 8) continue;
    EXPECT_TRUE(DecodeExact<referee::ArbitrateArgs>(ByteSpan(seed).subspan(1)).ok() ||
                seed.size() < 4) << "an arbitration seed";
    break;
  }
  std::size_t exact_reduce_steps = 0, exact_right = 0;
  for (const Bytes& seed : c.at("referee_args_fuzz")) {
    if (seed[0] != 17) continue;  // reveal-reduce-step (ArgsSelector)
    auto step = DecodeExact<referee::RevealReduceStepArgs>(ByteSpan(seed).subspan(1));
    if (!step.ok() || !std::holds_alternative<verify::ExactPartial>(step->next)) continue;
    ++exact_reduce_steps;
    exact_right += step->right ? 1 : 0;
  }
  EXPECT_GE(exact_reduce_steps, 2u) << "certified sums' final moves";
  EXPECT_GE(exact_right, 1u) << "a certified step that reads a second leaf";
  const auto& bundles = c.at("log_bundle_fuzz");
  bool bundle_ok = false;
  for (const Bytes& seed : bundles) {
    if (seed[0] != 0) continue;
    const auto dir = std::filesystem::temp_directory_path() / ("vt-corpus-bundle-" + std::to_string(::getpid()));
    auto m = worker::ImportLogBundle(ByteSpan(seed).subspan(1), dir);
    std::filesystem::remove_all(dir);
    EXPECT_TRUE(m.ok()) << m.status().ToString();
    bundle_ok = m.ok();
    break;
  }
  EXPECT_TRUE(bundle_ok) << "the log bundle seed";

  if (const char* out = std::getenv("VT_FUZZ_CORPUS_OUT")) {
    for (const auto& [target, seeds] : c) {
      const std::filesystem::path dir = std::filesystem::path(out) / target;
      std::filesystem::create_directories(dir);
      for (std::size_t i = 0; i < seeds.size(); ++i) {
        char name[32];
        std::snprintf(name, sizeof name, "seed-%03zu", i);
        std::ofstream f(dir / name, std::ios::binary);
        f.write(reinterpret_cast<const char*>(seeds[i].data()), static_cast<std::streamsize>(seeds[i].size()));
      }
    }
  }
}

}  // namespace
}  // namespace vt::test
