// Protocol objects: round trips, golden bytes and hashes (docs/formats.md,
// "Protocol objects"), every rejection of the strict decoders, the signing
// hash, and the checkpoint index arithmetic.

#include "protocol/types.h"

#include <gtest/gtest.h>

#include <random>
#include <string>

#include "common/encoding.h"
#include "crypto/sha256.h"
#include "crypto/tags.h"
#include "tests/support/test_seed.h"

namespace vt::protocol {
namespace {

Hash256 Filled(std::uint8_t start) {
  Hash256 h;
  for (std::size_t i = 0; i < h.bytes.size(); ++i) h.bytes[i] = static_cast<std::uint8_t>(start + i);
  return h;
}

JobSpec SampleJob() {
  JobSpec job;
  job.model = {0xaa, 0xbb};
  job.optimizer = {0xcc};
  job.dataset_root = Filled(0x10);
  job.dataset_size = 60000;
  job.seed = 0x0102030405060708ull;
  job.batch_size = 32;
  job.num_steps = 1000;
  job.checkpoint_interval = 100;
  job.mode = 1;
  job.rounding_bits = 32;
  return job;
}

JobSpec SampleRoundedJob() {
  JobSpec job = SampleJob();
  job.mode = 2;
  job.rounding_bits = 24;
  job.tau_table = {0x01, 0x02, 0x03};
  return job;
}

Commitment SampleCommitment() {
  Commitment c;
  c.bounty_id = 7;
  c.job_hash = Filled(0x20);
  c.checkpoint_root = Filled(0x40);
  c.final_state_hash = Filled(0x60);
  c.log_root = Filled(0x80);
  for (std::size_t i = 0; i < c.solver.size(); ++i) c.solver[i] = static_cast<std::uint8_t>(0xa0 + i);
  for (std::size_t i = 0; i < c.signature.size(); ++i) c.signature[i] = static_cast<std::uint8_t>(0x01 + i);
  return c;
}

NodeRecord SampleNode() {
  NodeRecord r;
  r.op_kind = 0x0203;
  r.attrs = {0x05, 0x06};
  r.inputs = {{InputSource::kState, 3, 0}, {InputSource::kBatch, 1, 0}, {InputSource::kNode, 9, 2}};
  r.output_hashes = {Filled(0x30)};
  r.log_hash = Filled(0x50);
  return r;
}

std::string Hex(const Bytes& b) { return ToHex(b); }

// ---- JobSpec ------------------------------------------------------------------------

TEST(JobSpecTest, RoundTrip) {
  for (const JobSpec& job : {SampleJob(), SampleRoundedJob()}) {
    const Bytes enc = EncodeJobSpec(job);
    auto dec = DecodeJobSpec(enc);
    ASSERT_TRUE(dec.ok()) << dec.status().ToString();
    EXPECT_EQ(*dec, job);
    EXPECT_EQ(EncodeJobSpec(*dec), enc);
  }
}

TEST(JobSpecTest, GoldenBytes) {
  // u32 version | bytes model | bytes optimizer | hash dataset_root | u64 size | u64 seed
  // | u32 batch | u64 steps | u64 interval | u8 mode | u8 bits | bytes tau_table
  const std::string expected =
      "01000000"                                                          // version 1
      "02aabb"                                                            // model
      "01cc"                                                              // optimizer
      "101112131415161718191a1b1c1d1e1f202122232425262728292a2b2c2d2e2f"  // dataset root
      "60ea000000000000"                                                  // 60000
      "0807060504030201"                                                  // seed
      "20000000"                                                          // batch 32
      "e803000000000000"                                                  // 1000 steps
      "6400000000000000"                                                  // k = 100
      "01"                                                                // repops
      "20"                                                                // 32 bits
      "00";                                                               // empty tau table
  EXPECT_EQ(Hex(EncodeJobSpec(SampleJob())), expected);
}

TEST(JobSpecTest, HashIsTaggedHashOfEncoding) {
  const JobSpec job = SampleJob();
  EXPECT_EQ(JobHash(job), crypto::TaggedHash("veritrain/job/v1", EncodeJobSpec(job)));
  // Golden value (also computed independently with Python hashlib), so that an
  // accidental change of the format or tag shows.
  EXPECT_EQ(JobHash(job).Hex(), "4759ea42f3441ec2d6cc5b861163055ef45c7eaee319728caa0cefae64771595");
}

TEST(JobSpecTest, EveryFieldChangesTheHash) {
  const Hash256 base = JobHash(SampleJob());
  std::vector<JobSpec> variants(11, SampleJob());
  variants[0].model.push_back(0);
  variants[1].optimizer.push_back(0);
  variants[2].dataset_root.bytes[31] ^= 1;
  variants[3].dataset_size += 1;
  variants[4].seed += 1;
  variants[5].batch_size += 1;
  variants[6].num_steps += 1;
  variants[7].checkpoint_interval += 1;
  variants[8].mode = 0;
  variants[9] = SampleRoundedJob();
  variants[10] = SampleRoundedJob();
  variants[10].rounding_bits = 25;
  for (std::size_t i = 0; i < variants.size(); ++i) {
    ASSERT_TRUE(ValidateJobSpec(variants[i]).ok()) << i;
    EXPECT_NE(JobHash(variants[i]), base) << "field variant " << i;
  }
}

Status DecodeStatus(const JobSpec& job) { return DecodeJobSpec(EncodeJobSpec(job)).status(); }

TEST(JobSpecTest, RejectsEachSemanticError) {
  struct Case {
    const char* reason;
    JobSpec job;
  };
  std::vector<Case> cases;
  auto add = [&](const char* reason, auto mutate, JobSpec base = SampleJob()) {
    mutate(base);
    cases.push_back({reason, base});
  };
  add("job-bad-version", [](JobSpec& j) { j.version = 2; });
  add("job-bad-version", [](JobSpec& j) { j.version = 0; });
  add("job-bad-mode", [](JobSpec& j) { j.mode = 4; });  // 3 is certified
  add("job-bad-rounding", [](JobSpec& j) { j.rounding_bits = 22; }, SampleRoundedJob());
  add("job-bad-rounding", [](JobSpec& j) { j.rounding_bits = 33; }, SampleRoundedJob());
  add("job-bad-rounding", [](JobSpec& j) { j.rounding_bits = 24; });               // repops with b != 32
  add("job-bad-rounding", [](JobSpec& j) { j.tau_table = {1}; });                  // repops with a tau table
  add("job-bad-rounding", [](JobSpec& j) { j.mode = 0; j.tau_table = {1}; });      // native with a tau table
  add("job-bad-batch-size", [](JobSpec& j) { j.batch_size = 0; });
  add("job-bad-dataset-size", [](JobSpec& j) { j.dataset_size = 0; });
  add("job-bad-steps", [](JobSpec& j) { j.num_steps = 0; });
  add("job-bad-interval", [](JobSpec& j) { j.checkpoint_interval = 0; });
  add("job-too-many-checkpoints", [](JobSpec& j) { j.num_steps = kMaxCheckpoints; j.checkpoint_interval = 1; });
  for (const Case& c : cases) {
    const Status direct = ValidateJobSpec(c.job);
    EXPECT_TRUE(direct.is_invalid()) << c.reason;
    EXPECT_EQ(direct.reason(), c.reason);
    const Status decoded = DecodeStatus(c.job);
    EXPECT_TRUE(decoded.is_invalid()) << c.reason;
    EXPECT_EQ(decoded.reason(), c.reason);
  }
  // The boundary itself is fine: 2^24 - 1 steps at k = 1 is 2^24 checkpoints.
  JobSpec edge = SampleJob();
  edge.num_steps = kMaxCheckpoints - 1;
  edge.checkpoint_interval = 1;
  EXPECT_TRUE(ValidateJobSpec(edge).ok());
}

TEST(JobSpecTest, RejectsEveryTruncationAndTrailingBytes) {
  const Bytes enc = EncodeJobSpec(SampleRoundedJob());
  for (std::size_t n = 0; n < enc.size(); ++n) {
    auto dec = DecodeJobSpec(ByteSpan(enc.data(), n));
    ASSERT_FALSE(dec.ok()) << "prefix of " << n << " bytes decoded";
    EXPECT_EQ(dec.status().reason(), "enc-truncated") << n;
  }
  Bytes longer = enc;
  longer.push_back(0);
  EXPECT_EQ(DecodeJobSpec(longer).status().reason(), "enc-trailing-bytes");
}

TEST(JobSpecTest, RejectsOversizedAndNonMinimalLengths) {
  // Model length of kMaxSpecBytes + 1: rejected on the length, before reading.
  Writer w;
  w.PutU32(1);
  w.PutVarint(kMaxSpecBytes + 1);
  EXPECT_EQ(DecodeJobSpec(w.bytes()).status().reason(), "enc-length-over-cap");

  // The model length 2 written as a two-byte varint (0x82 0x00).
  Bytes enc = EncodeJobSpec(SampleJob());
  ASSERT_EQ(enc[4], 0x02);
  enc[4] = 0x82;
  enc.insert(enc.begin() + 5, 0x00);
  EXPECT_EQ(DecodeJobSpec(enc).status().reason(), "enc-non-minimal-varint");
}

// ---- checkpoints ------------------------------------------------------------------

TEST(CheckpointStepsTest, MultipleOfInterval) {
  EXPECT_EQ(CheckpointSteps(10, 5), (std::vector<std::uint64_t>{0, 5, 10}));
  EXPECT_EQ(CheckpointCount(10, 5), 3u);
}

TEST(CheckpointStepsTest, NotAMultipleEndsAtN) {
  EXPECT_EQ(CheckpointSteps(10, 4), (std::vector<std::uint64_t>{0, 4, 8, 10}));
  EXPECT_EQ(CheckpointCount(10, 4), 4u);
}

TEST(CheckpointStepsTest, IntervalAtOrAboveN) {
  EXPECT_EQ(CheckpointSteps(3, 5), (std::vector<std::uint64_t>{0, 3}));
  EXPECT_EQ(CheckpointSteps(5, 5), (std::vector<std::uint64_t>{0, 5}));
  EXPECT_EQ(CheckpointSteps(1, 1), (std::vector<std::uint64_t>{0, 1}));
}

TEST(CheckpointStepsTest, ZeroIntervalIsInvalidAndEmpty) {
  EXPECT_TRUE(CheckpointSteps(10, 0).empty());
  EXPECT_EQ(CheckpointCount(10, 0), 0u);
}

TEST(CheckpointStepsTest, ZeroStepsIsTheInitialStateOnly) {
  EXPECT_EQ(CheckpointSteps(0, 3), (std::vector<std::uint64_t>{0}));
}

TEST(CheckpointStepsTest, HugeValuesDoNotOverflow) {
  const std::uint64_t max = ~std::uint64_t{0};
  EXPECT_EQ(CheckpointSteps(max, std::uint64_t{1} << 63),
            (std::vector<std::uint64_t>{0, std::uint64_t{1} << 63, max}));
  EXPECT_EQ(CheckpointSteps(max, max), (std::vector<std::uint64_t>{0, max}));
  EXPECT_EQ(CheckpointCount(max, 1), 0u) << "the count wraps only at N = 2^64-1, k = 1, which no job passes";
}

TEST(CheckpointStepsTest, RandomAgreesWithDefinition) {
  std::mt19937_64 rng(vt::test::TestSeed());
  for (int iter = 0; iter < 500; ++iter) {
    const std::uint64_t n = rng() % 200;
    const std::uint64_t k = 1 + rng() % 50;
    std::vector<std::uint64_t> expected;
    for (std::uint64_t s = 0; s <= n; s += k) expected.push_back(s);
    if (expected.back() != n) expected.push_back(n);
    const auto steps = CheckpointSteps(n, k);
    ASSERT_EQ(steps, expected) << "N=" << n << " k=" << k;
    ASSERT_EQ(CheckpointCount(n, k), expected.size());
    for (std::uint64_t i = 0; i < expected.size(); ++i) ASSERT_EQ(CheckpointStepAt(n, k, i), expected[i]);
  }
}

// ---- Commitment --------------------------------------------------------------------

TEST(CommitmentTest, RoundTripAndSize) {
  const Commitment c = SampleCommitment();
  const Bytes enc = EncodeCommitment(c);
  EXPECT_EQ(enc.size(), 8u + 5 * 32 + 64);
  auto dec = DecodeCommitment(enc);
  ASSERT_TRUE(dec.ok()) << dec.status().ToString();
  EXPECT_EQ(*dec, c);
}

TEST(CommitmentTest, GoldenBytes) {
  const Bytes enc = EncodeCommitment(SampleCommitment());
  const std::string hex = Hex(enc);
  EXPECT_EQ(hex.substr(0, 16), "0700000000000000");
  EXPECT_EQ(hex.substr(16, 64), Filled(0x20).Hex());
  EXPECT_EQ(hex.substr(80, 64), Filled(0x40).Hex());
  EXPECT_EQ(hex.substr(144, 64), Filled(0x60).Hex());
  EXPECT_EQ(hex.substr(208, 64), Filled(0x80).Hex());
  EXPECT_EQ(hex.substr(272, 64), Filled(0xa0).Hex());
  EXPECT_EQ(hex.substr(336, 4), "0102");
  EXPECT_EQ(hex.substr(hex.size() - 4), "3f40");
}

TEST(CommitmentTest, SigningHashExcludesSignature) {
  Commitment c = SampleCommitment();
  const Hash256 signing = CommitmentSigningHash(c);
  const Bytes enc = EncodeCommitment(c);
  // Exactly the tagged hash of the encoding minus the 64 signature bytes.
  EXPECT_EQ(signing, crypto::TaggedHash("veritrain/commitment/v1", ByteSpan(enc.data(), enc.size() - 64)));
  c.signature.fill(0);
  EXPECT_EQ(CommitmentSigningHash(c), signing);
  c.signature[17] = 0x99;
  EXPECT_EQ(CommitmentSigningHash(c), signing);
  EXPECT_EQ(signing.Hex(), "9ba80d94e6f5590a1f0f46dc42124c4eaf1ca5ea532e8fcdb7dd41c593b4c5c4");
}

TEST(CommitmentTest, SigningHashCoversEveryOtherField) {
  const Hash256 base = CommitmentSigningHash(SampleCommitment());
  std::vector<Commitment> variants(6, SampleCommitment());
  variants[0].bounty_id += 1;
  variants[1].job_hash.bytes[0] ^= 1;
  variants[2].checkpoint_root.bytes[0] ^= 1;
  variants[3].final_state_hash.bytes[0] ^= 1;
  variants[4].log_root.bytes[0] ^= 1;
  variants[5].solver[31] ^= 1;
  for (std::size_t i = 0; i < variants.size(); ++i)
    EXPECT_NE(CommitmentSigningHash(variants[i]), base) << "field " << i;
}

TEST(CommitmentTest, RejectsEveryTruncationAndTrailingBytes) {
  const Bytes enc = EncodeCommitment(SampleCommitment());
  for (std::size_t n = 0; n < enc.size(); ++n)
    EXPECT_EQ(DecodeCommitment(ByteSpan(enc.data(), n)).status().reason(), "enc-truncated") << n;
  Bytes longer = enc;
  longer.push_back(0xff);
  EXPECT_EQ(DecodeCommitment(longer).status().reason(), "enc-trailing-bytes");
}

// ---- NodeRecord --------------------------------------------------------------------

TEST(NodeRecordTest, RoundTrip) {
  const NodeRecord r = SampleNode();
  auto dec = DecodeNodeRecord(EncodeNodeRecord(r));
  ASSERT_TRUE(dec.ok()) << dec.status().ToString();
  EXPECT_EQ(*dec, r);

  NodeRecord empty;  // no inputs, no outputs, no attrs
  auto dec_empty = DecodeNodeRecord(EncodeNodeRecord(empty));
  ASSERT_TRUE(dec_empty.ok()) << dec_empty.status().ToString();
  EXPECT_EQ(*dec_empty, empty);
}

TEST(NodeRecordTest, GoldenBytes) {
  const std::string expected = std::string("0302")  // op kind 0x0203
                               + "020506"            // attrs
                               + "03"                // 3 inputs
                               + "00" + "03000000" + "00000000"   // state 3
                               + "01" + "01000000" + "00000000"   // batch 1
                               + "02" + "09000000" + "02000000"   // node 9 slot 2
                               + "01" + Filled(0x30).Hex()        // one output hash
                               + Filled(0x50).Hex();              // log hash
  EXPECT_EQ(Hex(EncodeNodeRecord(SampleNode())), expected);
}

TEST(NodeRecordTest, HashIsTaggedHashOfEncoding) {
  const NodeRecord r = SampleNode();
  EXPECT_EQ(NodeRecordHash(r), crypto::TaggedHash("veritrain/node-record/v1", EncodeNodeRecord(r)));
  NodeRecord other = r;
  other.inputs[2].slot = 1;
  EXPECT_NE(NodeRecordHash(other), NodeRecordHash(r));
}

TEST(NodeRecordTest, RejectsUnknownSource) {
  Bytes enc = EncodeNodeRecord(SampleNode());
  // The first input's source byte sits after op kind (2), attrs (3) and count (1).
  ASSERT_EQ(enc[6], 0x00);
  enc[6] = 0x03;
  EXPECT_EQ(DecodeNodeRecord(enc).status().reason(), "enc-unknown-enum");
}

TEST(NodeRecordTest, RejectsSlotOnStateOrBatchInput) {
  for (InputSource src : {InputSource::kState, InputSource::kBatch}) {
    NodeRecord r = SampleNode();
    r.inputs[0] = {src, 0, 1};
    const Status st = DecodeNodeRecord(EncodeNodeRecord(r)).status();
    EXPECT_TRUE(st.is_invalid());
    EXPECT_EQ(st.reason(), "node-bad-input-ref");
  }
}

TEST(NodeRecordTest, RejectsCountsAndAttrsOverCap) {
  {
    Writer w;
    w.PutU16(1);
    w.PutVarint(kMaxNodeAttrBytes + 1);
    EXPECT_EQ(DecodeNodeRecord(w.bytes()).status().reason(), "enc-length-over-cap");
  }
  {
    Writer w;
    w.PutU16(1);
    w.PutBytes({});
    w.PutVarint(kMaxNodeInputs + 1);
    EXPECT_EQ(DecodeNodeRecord(w.bytes()).status().reason(), "enc-length-over-cap");
  }
  {
    Writer w;
    w.PutU16(1);
    w.PutBytes({});
    w.PutVarint(0);
    w.PutVarint(kMaxNodeOutputs + 1);
    EXPECT_EQ(DecodeNodeRecord(w.bytes()).status().reason(), "enc-length-over-cap");
  }
}

TEST(NodeRecordTest, RejectsEveryTruncationAndTrailingBytes) {
  const Bytes enc = EncodeNodeRecord(SampleNode());
  for (std::size_t n = 0; n < enc.size(); ++n)
    EXPECT_EQ(DecodeNodeRecord(ByteSpan(enc.data(), n)).status().reason(), "enc-truncated") << n;
  Bytes longer = enc;
  longer.push_back(0);
  EXPECT_EQ(DecodeNodeRecord(longer).status().reason(), "enc-trailing-bytes");
}

TEST(ProtocolTagsTest, ProtocolTagsAreRegistered) {
  for (std::string_view tag : {crypto::tags::kJob, crypto::tags::kCommitment, crypto::tags::kNodeRecord,
                               crypto::tags::kStateHeader}) {
    int count = 0;
    for (std::string_view t : crypto::tags::kAll) count += (t == tag) ? 1 : 0;
    EXPECT_EQ(count, 1) << tag;
  }
}

}  // namespace
}  // namespace vt::protocol
