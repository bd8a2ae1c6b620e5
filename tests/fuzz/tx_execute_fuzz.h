#pragma once
// The input format of tx_execute_fuzz, shared with the corpus generator: a
// sequence of records, each one transaction that the harness signs with the
// key of a scenario agent (so that execution, not the signature check, is
// what gets fuzzed):
//   u8 agent (mod 4: client, solver, challenger, an unfunded stranger)
//   u8 kind  (0: transfer of 8 LE bytes of args to agent (args[8] mod 4);
//             otherwise the referee method with this number)
//   u16 LE length ‖ length bytes of call arguments
#include <cstdint>
#include <vector>

#include "common/bytes.h"

namespace vt::fuzz {

struct ExecRecord {
  std::uint8_t agent = 0;
  std::uint8_t kind = 0;
  Bytes args;
};

inline constexpr std::size_t kMaxExecRecords = 8;

inline std::vector<ExecRecord> ParseExecInput(const std::uint8_t* data, std::size_t size) {
  std::vector<ExecRecord> out;
  std::size_t at = 0;
  while (out.size() < kMaxExecRecords && at + 4 <= size) {
    ExecRecord r;
    r.agent = data[at];
    r.kind = data[at + 1];
    const std::size_t len = static_cast<std::size_t>(data[at + 2]) | static_cast<std::size_t>(data[at + 3]) << 8;
    at += 4;
    const std::size_t take = len < size - at ? len : size - at;
    r.args.assign(data + at, data + at + take);
    at += take;
    out.push_back(std::move(r));
  }
  return out;
}

inline Bytes EncodeExecInput(const std::vector<ExecRecord>& records) {
  Bytes out;
  for (const ExecRecord& r : records) {
    out.push_back(r.agent);
    out.push_back(r.kind);
    out.push_back(static_cast<std::uint8_t>(r.args.size()));
    out.push_back(static_cast<std::uint8_t>(r.args.size() >> 8));
    out.insert(out.end(), r.args.begin(), r.args.end());
  }
  return out;
}

}  // namespace vt::fuzz
