#pragma once
// The element-level game as the referee plays it (docs/referee.md,
// "Element-level descent"): the pieces of its phases that the referee and
// every worker predicting it both need, written once. The rules themselves
// are verify/descent.h (dot rule: DisputedValue, CheckPartialsEnds,
// JudgeDotStepClaim, JudgeDotEpilogue, VerifyInputHash) and
// verify/element_rules.h (pointwise and row: PlanElement, ReexecuteElement),
// verify/reduce_rule.h and verify/certified_sum.h (the reductions, repops
// and certified);
// this file only chooses among them, reads shapes from the step graph, opens
// input slices chunk by chunk and gives the wire codecs of the moves' parts.
//
// Protocol-facing: referee/ reaches the kernels types it needs (shapes,
// chunk openings) through the aliases below.

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "common/bytes.h"
#include "common/encoding.h"
#include "common/result.h"
#include "crypto/merkle.h"
#include "kernels/chunk_tree.h"
#include "kernels/mode.h"
#include "kernels/rounding_log_tree.h"
#include "kernels/tensor.h"
#include "protocol/types.h"
#include "verify/descent.h"
#include "verify/element_rules.h"
#include "verify/node_spec.h"
#include "verify/reduce_rule.h"

namespace vt::verify {

using Shape = kernels::Shape;
using ChunkOpening = kernels::ChunkOpening;
using RngAddress = kernels::RngAddress;
using LogOpening = kernels::LogOpening;  // kernels/rounding_log_tree.h, with its codec
using RoundingSpec = kernels::RoundingSpec;
using kernels::OpenLogAt;
inline constexpr std::int64_t kChunkValues = kernels::kChunkValues;

// Which rule judges value e of output `slot`: the dot rule (level 5b) when
// DotElementAt accepts it, else the reduction rule (level 5b over the fixed
// tree) when ReduceElementAt does, else the pointwise/row rule when
// PlanElement does. The assemble node's output h_{t+1} is walked leaf by
// leaf instead (kState, verify/state_walk.h).
enum class ElementKind : std::uint8_t { kDot = 0, kPlan = 1, kReduce = 2, kState = 3 };

// The most chunks the final move of the pointwise/row rule may open, over
// all its inputs: 48 KiB of values, so that move always fits a 64 KiB
// transaction. A value whose slices need more is not played at the element
// level ("elem-too-wide": its node is arbitrated whole), so an honest party
// can never be steered to a final move it cannot send.
inline constexpr std::int64_t kMaxOpenedChunks = 48;
// Likewise the most inputs one final move opens, and the most examples of
// the batch (verify/batch_opening.h) it opens.
inline constexpr std::size_t kMaxOpenedInputs = 32;
inline constexpr std::int64_t kMaxOpenedExamples = 4;

// Whether a job's mode plays rule `kind` at the element level for a value
// of an `op_kind` node: repops every rule; certified the dot rule and the
// reduction rule over exact partial sums (DotPartialRule;
// verify/certified_sum.h, where CertifiedSumAt covers the value:
// ChooseElementRule asks it) and the pointwise/row rule (ReexecuteElement
// runs the certified kernels); rounded the pointwise rule of the element-wise
// operators exact in fp64 (ReexecutesRoundedValue: their values need no log
// opening), the rounded dot rule of the GEMMs whose rounding it reproduces
// (RoundedDotRuleCovers: fp64 partial results, the epilogue by the log's
// entry at the value) and the reduction rule over fp64 sums where the
// kernel's sum is the rule's, its β with it where the kernel's dots are
// vendor dgemm's (RoundedReduceRuleCovers; the epilogue likewise) —
// attention's y and attention_backward have none yet. Every mode walks
// the assemble node (kState).
// Invalid "elem-mode-no-rule" otherwise: the node is arbitrated whole.
Status CheckRuleInMode(std::uint8_t job_mode, ElementKind kind, std::uint16_t op_kind);

// The job's mode as ReexecuteElement needs it: in rounded mode the job's
// bits, and neither τ nor a log entry — CheckRuleInMode plays only the
// operators exact in fp64, where τ does not apply and no entry can change
// a value.
ElementMode ElementModeOf(std::uint8_t job_mode, std::uint8_t rounding_bits);

// The op kinds whose dot-rule values rounded mode plays: linear's y,
// linear_backward's dx and dW, matmul's c, conv2d's y (its bias per output
// channel), conv2d_backward's dW (one sum over image and position) — one
// fp64 dot product (plus the bias) rounded with β = kernels::GemmSlackValue
// over K (+1) terms (RoundedLinearValue). Not attention's y, which reads an
// fp64 att the record does not hold.
bool RoundedDotRuleCovers(std::uint16_t op_kind);
// The op kinds whose reduction-rule values rounded mode plays: those whose
// rounded kernels compute the rule's sum in fixed-sequence fp64
// (verify/reduce_rule.h, ReduceElement::fp64), or over vendor-dgemm dots
// whose β the description carries (conv2d_backward's dx, attention's att:
// ReduceSlack) — every reduction but attention_backward's. ReduceRuleAt
// refuses a value whose description is neither (elem-mode-no-rule).
bool RoundedReduceRuleCovers(std::uint16_t op_kind);

// A value's position in its node's rounding log: the node's outputs
// concatenated in slot order (kernels::LogEntry), value e of `slot`.
std::uint64_t LogPositionOf(std::span<const Shape> output_shapes, std::uint32_t slot, std::int64_t e);

// A partial result as a move carries it (post-partials-root's p_K, the
// reveals' leaves): the fp32 value in a repops job, the exact sum's
// canonical encoding in a certified one (verify/element.h), for the dot and
// the reduction rule alike; a rounded job's dot rule the fp64 sums
// (RoundedPartial), its reduction rule one fp64 sum (double,
// verify/reduce_rule.h). On the wire a tag byte says which (0: 4 bytes of
// fp32, 1: 81 bytes exact, 2: 24 bytes of three fp64, 3: 8 bytes of fp64);
// the job's mode and the game's rule say which a move must carry
// (CheckLeafKind).
using PartialLeaf = std::variant<float, ExactPartial, RoundedPartial, double>;
// Invalid "elem-wrong-leaf" unless `leaf` is the kind of leaf the job's
// mode plays in rule `kind` (kDot or kReduce).
Status CheckLeafKind(std::uint8_t job_mode, ElementKind kind, const PartialLeaf& leaf);
// The wire bytes of the widest leaf the job's mode plays (tag included).
std::uint64_t PartialLeafBytes(std::uint8_t job_mode);
// The dot rule's checks (verify/descent.h) over moves' leaves, each for the
// kind of leaf they hold; a claim whose leaves mix kinds is Invalid
// "elem-wrong-leaf" (CheckLeafKind checked each move's).
Status CheckPartialsEnds(const Hash256& root, std::uint64_t k, const PartialLeaf& p_k,
                         const crypto::MerkleProof& first, const crypto::MerkleProof& last);
Result<StepVerdict> JudgeDotStepClaim(const DotElement& element, const DotFactors& factors,
                                      const std::array<Hash256, 2>& roots,
                                      const DotStepClaimOf<PartialLeaf>& claim,
                                      const OpenedBatch* batch = nullptr);
// The epilogue over the agreed p_K. A rounded leaf's value also needs the
// job's rounding and the log's entry at the value (`rounded`:
// JudgeRoundedDotEpilogue, whose "log-entry-outside-region" loses the
// solver); Invalid "elem-wrong-leaf" for a rounded leaf without it, or
// with it for another leaf.
// Its price in flops (two square roots, β, the rounding and the entry's
// test: a few dozen operations, priced with room).
inline constexpr std::uint64_t kRoundedEpilogueFlops = 256;
struct RoundedEpilogue {
  std::int64_t k = 0;  // the dot product's terms (a dot epilogue's)
  kernels::RoundingSpec spec;
  std::optional<bool> logged;  // the log's direction at the value (kernels::OpenLogAt)
  // A reduction with a slack (ReduceElement::slack): the value's leaf,
  // opened apart (OpenValueLeaf); p_K is then the slack's fold.
  std::optional<double> value_leaf;
};
Result<StepVerdict> JudgeDotEpilogue(const PartialLeaf& p_k, std::optional<float> bias, float y_a, float y_b,
                                     const RoundedEpilogue* rounded = nullptr);

// The reduction rule as a job's mode plays it at value e: repops over the
// fixed tree's partial results (ReduceElementAt: Steps() + 1 fp32 leaves),
// certified over the same description with exact sums (CertifiedSumAt:
// Steps() + 1 exact leaves), rounded over fp64 sums (ReduceElement::fp64;
// a clip's gradients and a batch norm's running mean by
// RoundedElementAt, the kernel reading its own unrounded statistic). Invalid "elem-mode-no-rule" in
// a mode without it; the element functions' reasons otherwise. Its walk's steps: Steps(); a step's reads:
// StepReadsAt.
Result<ReduceElement> ReduceRuleAt(std::uint8_t job_mode, std::uint16_t op_kind, ByteSpan attrs,
                                   std::uint32_t slot, std::int64_t e, std::span<const Shape> input_shapes);

// The reduction rule's final move over moves' leaves: the step's operand
// leaves `left` and, for the steps that read it, `right`, the parties'
// next leaves and the step's reads — the repops claim (ReduceStepClaim) in
// fp32 leaves, the certified one (CertifiedSumStepClaim) in exact ones. The
// leaves' kind says which; a claim whose leaves mix kinds, or are not the
// description's kind (ReduceElement::exact), is Invalid "elem-wrong-leaf".
struct ReduceMoveClaim {
  std::uint64_t m = 0;
  PartialLeaf left = 0.0f;
  crypto::MerkleProof left_proof;
  std::optional<std::pair<PartialLeaf, crypto::MerkleProof>> right;
  std::array<PartialLeaf, 2> next{};
  std::array<crypto::MerkleProof, 2> next_proof;
  std::vector<ValueOpening> reads;  // the step's reads of hashed inputs (StepReads order)
  bool operator==(const ReduceMoveClaim&) const = default;
};
Result<StepVerdict> JudgeReduceStepClaim(const ReduceElement& element, std::span<const InputTensor> inputs,
                                         const std::array<Hash256, 2>& roots, const ReduceMoveClaim& claim,
                                         const OpenedBatch* batch = nullptr,
                                         std::span<const InputTensor> own = {});
// The epilogue over the agreed last leaf (JudgeReduceEpilogue,
// JudgeCertifiedSumEpilogue; a rounded job's JudgeRoundedReduceEpilogue
// with `rounded`: the job's rounding, the node's τ where it applies — see
// RoundedReduceEpilogueOf — and the log's entry at the value, whose
// "log-entry-outside-region" loses the solver); Invalid "elem-wrong-leaf"
// for a leaf not the element's kind, or an fp64 sum without `rounded`.
Result<StepVerdict> JudgeReduceEpilogue(const ReduceElement& element, const PartialLeaf& p_k, float y_a,
                                        float y_b, const RoundedEpilogue* rounded = nullptr);
// A partial result opened with its proof.
using LeafOpening = std::pair<PartialLeaf, crypto::MerkleProof>;
// The epilogue of a rounded reduction with a slack (ReduceElement::slack)
// opens the value's leaf (ValueSteps()) against the agreed partials `root`,
// its p_K being the slack's fold: returns it; std::nullopt for an element
// without a slack, which opens none. Invalid "elem-bad-leaf" for a missing
// or unwanted opening, or a proof that does not check out,
// "elem-wrong-leaf" for a leaf that is not fp64. Charge: one proof of
// ⌈log₂(Steps()+1)⌉ siblings.
Result<std::optional<double>> OpenValueLeaf(const ReduceElement& element, const Hash256& root,
                                            const std::optional<LeafOpening>& opening);
// How a rounded job rounds a reduction's value of an `op_kind` node: the
// job's bits, the node's τ unless the operator is exact in fp64
// (kernels::OpFp64IsExact: RunOp turns τ off there, so no entry is ever
// logged or accepted), and the log's entry at the value. `k` is unused.
RoundedEpilogue RoundedReduceEpilogueOf(std::uint16_t op_kind, std::uint8_t bits, std::uint32_t node_tau_q16,
                                        std::optional<bool> logged);

// The rule of (op, attrs, slot, e) that the job's mode plays — the
// attribute overloads of DotElementAt, ReduceRuleAt and PlanElement, then
// CheckRuleInMode — and the node inputs it opens by their
// tensor hashes (each has one: a state tensor or an earlier node's output)
// or from the batch (batch_inputs: examples
// opened against the dataset commitment). Not among them: a dot factor or
// plan slice of the node's own output (kOwnOutput + s, output_slot ≥ 0:
// opened against the records' common output hash of slot s, which
// SlotWalkOrder makes agreed) and a plan slice with count 0 (the input is
// not read). Invalid "elem-mode-no-rule" when the value's rule is not the
// mode's, "elem-no-rule" when no rule accepts the value,
// "elem-batch-input" when a rule would open a batch input by its hash,
// "elem-too-wide" when its slices span more than kMaxOpenedChunks chunks
// (or it opens more than kMaxOpenedInputs inputs or kMaxOpenedExamples
// examples).
// Whether the dot rule judges value e: DotElementAt describes it, and the
// job's mode has no description of its own — in rounded mode attention's y
// is a reduction over the kernel's unrounded att (RoundedElementAt), not
// the dot rule's over the committed att.
bool DotRuleJudges(std::uint8_t job_mode, std::uint16_t op_kind, ByteSpan attrs, std::uint32_t slot,
                   std::int64_t e, std::span<const Shape> input_shapes);
struct ElementChoice {
  ElementKind kind = ElementKind::kDot;
  std::vector<std::uint32_t> opened_inputs;  // increasing node input indices
  std::vector<std::uint32_t> own_slots;      // the node's own output slots read, increasing
  std::vector<std::uint32_t> batch_inputs;   // increasing node input indices of the batch read
  std::int64_t batch_examples = 0;           // examples the final move opens
};
Result<ElementChoice> ChooseElementRule(std::uint8_t job_mode, std::uint16_t op_kind, ByteSpan attrs,
                                        std::uint32_t slot, std::int64_t e,
                                        std::span<const protocol::InputRef> inputs,
                                        std::span<const Shape> input_shapes);

// Whether node input `input` is read from the batch (its values come from
// examples, verify/batch_opening.h, never by a tensor hash); false past the
// node's inputs (an own output slot, kOwnOutput + s).
bool IsBatchInput(std::span<const protocol::InputRef> inputs, std::uint32_t input);

// The own output slot a dot factor index names (kOwnOutput + s), if it does.
std::optional<std::uint32_t> OwnOutputSlot(std::uint32_t factor_input);

// The batch positions (examples) the plan's batch slices read, merged and
// increasing: what a final move's verify::BatchOpening must open, exactly.
std::vector<std::uint64_t> PlanBatchPositions(const ElementPlan& plan,
                                              std::span<const protocol::InputRef> inputs,
                                              std::span<const Shape> input_shapes);

// The same for step m of the dot rule: the examples holding its factors of
// the batch (the first layer's x), none when neither factor is of the batch.
std::vector<std::uint64_t> DotStepBatchPositions(const DotElement& element, std::uint64_t m,
                                                 std::span<const protocol::InputRef> inputs,
                                                 std::span<const Shape> input_shapes);

// The same for one step of the reduction rule: the examples holding the
// batch values the step reads (verify::StepReads), merged and increasing.
std::vector<std::uint64_t> StepBatchPositions(std::span<const StepRead> reads,
                                              std::span<const protocol::InputRef> inputs,
                                              std::span<const Shape> input_shapes);

// The declared shapes of a node's inputs (state, batch, earlier outputs) in
// its input order, from the step graph. Error "graph-invalid" on a
// reference outside the graph (ValidateStepGraph rules it out).
Result<std::vector<Shape>> NodeInputShapes(const StepGraph& graph, const NodeSpec& node);

// The first output slot, in SlotWalkOrder(op_kind), whose hashes differ
// between two records of the same node (same output count: both passed
// CheckRecordAgainstSpec): every slot before it in that order — the ones
// other slots' rules read — is agreed. Invalid "elem-same-outputs" when
// none differs.
Result<std::uint32_t> FirstDifferingSlot(std::uint16_t op_kind, const protocol::NodeRecord& a,
                                         const protocol::NodeRecord& b);

// Where the element level of a disputed node starts (docs/referee.md, "How
// the referee plays them"). The assemble node, in every mode: the walk over
// h_{t+1}'s StateLeafCount leaves (`assemble`; verify/state_walk.h). Any
// other node: value 0 of the first differing slot (FirstDifferingSlot) has
// a rule (ChooseElementRule) over the shapes the step graph declares —
// never a party's — that the job's mode plays. The referee checks a
// descent with it; a worker asks it whether to descend or send the whole
// node's inputs. Invalid "elem-mode-no-rule" (CheckRuleInMode), "elem-no-rule"
// (an empty output) or the reasons of FirstDifferingSlot and ChooseElementRule.
struct DescentStart {
  bool assemble = false;
  std::uint32_t slot = 0;
  std::uint32_t num_state_tensors = 0;
  std::vector<Shape> input_shapes;
  std::vector<Shape> output_shapes;  // every slot's
  std::uint64_t chunks = 0;          // of `slot`; the assemble node: h_{t+1}'s leaves
  std::uint32_t tau_q16 = 0;         // rounded mode: the node's τ (NodeSpec), for its epilogues
};
Result<DescentStart> StartDescent(std::uint8_t job_mode, const StepGraph& graph, std::uint64_t node_index,
                                  const protocol::NodeRecord& a, const protocol::NodeRecord& b);

// The longest element level a game over this step graph can play, for the
// bond minimum (referee/bonds.h): one party's moves from the descent to its
// last move — chunk root, the chunk walk (at most the output's chunk-tree
// height), chunk reveal, partial-results root, their walk (at most that
// tree's height), step reveal or open-element — over every node and output
// slot where StartDescent can start (a rule for value 0), and the deepest
// trees its moves open leaves of. A rule's kind depends on the slot, but
// how many partial results and openings it has may grow with the value
// (attention's rows with t, its backward's dk with T − u, a window clipped
// at the border): the bound takes the largest over the slot's widest
// values — the first, the last, an image's middle, attention_backward's
// last dq row and first dk column
// (`Scenario.TheDecidingMoveBoundHoldsAtEveryValue` checks random values
// against it, a long-context GPT's included). The assemble node's walk (root, h_{t+1}'s height, the final
// opening) counts in every mode: its tree is counted in chunk_height, and its final move may open the header
// of h_t (`header_opening`).
struct DescentBound {
  std::uint64_t moves = 0;
  std::uint64_t chunk_height = 0;     // the deepest chunk tree of an output walked or an input opened
  std::uint64_t partials_height = 0;  // the deepest partial-results tree
  std::uint64_t leaf_bytes = 0;  // a partial result's wire bytes (PartialLeafBytes; 0 without value rules)
  // The tallest rounding log a deciding move may open (a rounded epilogue):
  // a tree of at most one entry a value of its node's outputs.
  std::uint64_t log_height = 0;
  std::uint64_t opening_height = 0;   // an input's hash opening: the state tree or the node tree
  std::uint64_t shape_bytes = 0;      // the most shape bytes a node's element state holds (8 a dimension)
  // What one deciding move opens at most, rule by rule (DecidingMoveBound),
  // not the protocol's caps (kMaxOpenedChunks, kMaxOpenedInputs,
  // kMaxOpenedExamples): the pointwise/row rule's slices in chunks, the
  // inputs opened by their hash (at least 1: the assemble node's walk), the
  // examples of the batch (the batch's size at most).
  std::uint64_t final_chunks = 0;
  std::uint64_t final_openings = 0;
  std::uint64_t batch_examples = 0;
  bool header_opening = false;  // a deciding move may open the header of h_t (the assemble node's walk)
  bool value_rules = false;     // some node's values can be descended into, not only the assemble node
};
Result<DescentBound> BoundDescent(std::uint8_t job_mode, const StepGraph& graph);

// What the deciding move of value e's rule opens at most wherever the value
// lies in its output: a pointwise/row plan's slices do not change length
// with e, only where they start, so each is taken at its worst alignment
// (⌊(L + 254) / 256⌋ + 1 chunks for L values, at most the tensor's chunks;
// a slice of the batch spans at most ⌊(L + P − 2) / P⌋ + 1 examples of P
// values, at most the batch's). The dot and reduction rules' deciding moves
// are one step's reveal (no chunks beyond a move's): their opened inputs
// and batch reads. BoundDescent takes it at each output's widest values
// (above); `Scenario.TheDecidingMoveBoundHoldsAtEveryValue`
// (referee_scenario_economics_test) checks it against the real openings of
// random values of every node of the presets and larger jobs.
struct DecidingMoveBound {
  ElementKind kind = ElementKind::kDot;  // the value's rule
  std::uint64_t chunks = 0;
  std::uint64_t openings = 0;
  std::uint64_t examples = 0;
};
Result<DecidingMoveBound> BoundDecidingMove(std::uint8_t job_mode, const NodeSpec& node,
                                            std::span<const Shape> input_shapes, std::uint32_t slot,
                                            std::int64_t e);

// Whether node `node_index` can always be settled at the element level:
// the assemble node in every mode (its walk), any other with a rule the
// job's mode plays (ChooseElementRule) for the first and the last value of
// every output (the rules depend on the slot, and their openings grow, if at all, towards
// the last value — attention's causal rows) whose slices stay within the
// caps wherever they start (BoundDecidingMove), so whichever slot a liar
// makes differ and whichever value the walk ends at, the honest party descends
// and never has to send the node's inputs whole. PostBounty then does not
// need the node's arbitration transaction to fit a block
// (referee/bonds.h, BondTerms::required_tx_bytes).
bool ElementCoversNode(std::uint8_t job_mode, const StepGraph& graph, std::uint64_t node_index);

// A party's chunk root of an output: its record's output hash must be
// TensorHashFromRoot(shape, root). Invalid "elem-bad-chunk-root". Charge:
// hashing the header and the root.
Status CheckChunkRoot(const Hash256& output_hash, const Shape& shape, const Hash256& root);
std::uint64_t ChunkCountOf(const Shape& shape);

// The pointwise/row rule's final move opens, for each opened input, the
// chunks covering its slice [first, first + count) in order. Returns the
// slice's values, each chunk checked against the tensor hash (VerifyValue).
// A slice of count 0 (an input the rule does not read) takes no chunk and
// gives no value. Invalid "elem-bad-slice" (wrong number of chunks) or
// VerifyValue's reasons.
// Charge: the chunks' bytes and proofs.
Result<std::vector<float>> VerifySlice(const Hash256& tensor_hash, const Shape& shape, const InputSlice& slice,
                                       std::span<const ChunkOpening> chunks);
// A worker's opening of the same slice.
std::vector<ChunkOpening> OpenSlice(const kernels::Tensor& t, const InputSlice& slice);
// The number of chunks covering a slice.
std::int64_t SliceChunks(const InputSlice& slice);

// The verdict on a re-executed value: which party's committed value it is.
StepVerdict JudgeElementValue(float value, float y_a, float y_b);

// One input of the disputed node opened by its tensor hash (the arguments of
// VerifyInputHash): a state tensor's proof in h_t, or the producer's record
// with its proof in the node tree.
struct InputHashOpening {
  std::uint32_t input = 0;  // the node's input index
  Hash256 tensor_hash;
  crypto::MerkleProof proof;
  std::optional<protocol::NodeRecord> producer;
  bool operator==(const InputHashOpening&) const = default;
};

// Wire codecs. A chunk carries at most kernels::kChunkValues values.
void Encode(Writer& w, const InputHashOpening& v);
Result<InputHashOpening> Decode(Reader& r, DecodeAs<InputHashOpening>);
void Encode(Writer& w, const PartialLeaf& v);
Result<PartialLeaf> Decode(Reader& r, DecodeAs<PartialLeaf>);
void EncodeChunk(Writer& w, const ChunkOpening& v);
Result<ChunkOpening> DecodeChunk(Reader& r);
void Encode(Writer& w, const ValueOpening& v);
Result<ValueOpening> Decode(Reader& r, DecodeAs<ValueOpening>);

}  // namespace vt::verify
