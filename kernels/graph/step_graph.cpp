// Step graphs of the three model families. The node order written here IS
// the protocol (node i of a step is what both parties and the referee
// execute): change it only with a new model-spec version. The order and the
// names are documented in docs/models.md.

#include "kernels/graph/step_graph.h"

#include <algorithm>
#include <cassert>
#include <map>
#include <new>

#include "kernels/calibration.h"
#include "kernels/ops/conv.h"
#include "kernels/ops/norm.h"
#include "kernels/ops/optim.h"

namespace vt::kernels::graph {

namespace {

// Operators reject any tensor above this many elements (kernels/ops/op_util.h).
constexpr std::int64_t kMaxNodeElements = 2147483647;
constexpr std::uint64_t kMaxStep = (std::uint64_t{1} << 62) - 1;
constexpr std::uint64_t kMaxDropoutStep = 0xFFFFFFFFu;

// Fixed hyper-parameters of model-spec version 1.
constexpr float kNormEps = 1e-5f;
constexpr float kBatchNormMomentum = 0.1f;

class Builder {
 public:
  Builder(StepGraph& g, const OptimizerSpec& opt) : m_g(g), m_opt(opt) {}

  NodeInput State(const std::string& name) const {
    const auto it = std::lower_bound(m_g.state_names.begin(), m_g.state_names.end(), name);
    assert(it != m_g.state_names.end() && *it == name && "state tensor missing from the layout");
    return NodeInput::State(static_cast<std::uint32_t>(it - m_g.state_names.begin()));
  }

  const Shape& ShapeOf(const NodeInput& in) const { return InputShape(m_g, in); }

  // Appends a node; returns its index.
  std::uint32_t Add(OpKind kind, OpAttrs attrs, std::vector<NodeInput> inputs, std::vector<Shape> outputs,
                    std::string name) {
    for (const Shape& s : outputs) {
      std::int64_t n = 1;
      for (std::int64_t d : s) {
        if (d > kMaxNodeElements || n > kMaxNodeElements / d) {
          m_too_large = true;
          n = 1;
          break;
        }
        n *= d;
      }
    }
    m_g.nodes.push_back(Node{kind, std::move(attrs), std::move(inputs), std::move(outputs), std::move(name)});
    return static_cast<std::uint32_t>(m_g.nodes.size() - 1);
  }

  // Single-output node: returns its output.
  NodeInput Add1(OpKind kind, OpAttrs attrs, std::vector<NodeInput> inputs, Shape output, std::string name) {
    return Out(Add(kind, std::move(attrs), std::move(inputs), {std::move(output)}, std::move(name)), 0);
  }

  static NodeInput Out(std::uint32_t node, std::uint32_t slot) { return NodeInput::Node(node, slot); }

  // Gradient contributions to parameter `name` (several when it is shared).
  void Grad(const std::string& name, NodeInput g) { m_grads[name].push_back(g); }
  // The next value of a buffer (batch-norm running statistics).
  void NextBuffer(const std::string& name, NodeInput v) { m_next[name] = v; }

  // dloss = 1: the registry has no constant operator, so the seed of the
  // backward pass is a zero-input lr_schedule node (constant kind, base 1,
  // step 0) whose output [1] is exactly 1 in every mode.
  NodeInput LossSeed() {
    LrScheduleParams p;
    p.kind = LrScheduleKind::kConstant;
    p.base_lr = 1.0f;
    p.min_lr = 0.0f;
    return Add1(OpKind::kLrSchedule, LrScheduleAttrs(p, 0), {}, {1}, "loss.seed");
  }

  // Gradient accumulation, clipping, schedule and optimizer nodes, then the
  // next-state map. `params` are the trainable parameters in name order.
  void Finish(const std::vector<TensorSpec>& params) {
    std::vector<NodeInput> grads;
    for (const TensorSpec& p : params) {
      std::vector<NodeInput>& contributions = m_grads[p.name];
      assert(!contributions.empty() && "every parameter receives a gradient");
      NodeInput g = contributions[0];
      for (std::size_t k = 1; k < contributions.size(); ++k) {
        g = Add1(OpKind::kAdd, {}, {g, contributions[k]}, p.shape, p.name + ".grad.accumulate");
      }
      grads.push_back(g);
    }
    if (m_opt.clip_norm > 0.0f) {
      std::vector<Shape> shapes;
      for (const TensorSpec& p : params) shapes.push_back(p.shape);
      shapes.push_back({1});
      const std::uint32_t clip = Add(OpKind::kClipGradNorm, ClipGradNormAttrs(m_opt.clip_norm), grads,
                                     std::move(shapes), "clip_grad_norm");
      for (std::size_t i = 0; i < grads.size(); ++i) grads[i] = Out(clip, static_cast<std::uint32_t>(i));
    }
    // Optimizer step t (0-based) uses schedule position t and AdamW's
    // 1-based bias-correction step t + 1: the only step-dependent attributes.
    const auto step = static_cast<std::int64_t>(m_g.step);
    const NodeInput lr =
        Add1(OpKind::kLrSchedule, LrScheduleAttrs(ScheduleParams(m_opt), step), {}, {1}, "lr");
    for (std::size_t i = 0; i < params.size(); ++i) {
      const TensorSpec& p = params[i];
      const NodeInput param = State(p.name);
      if (m_opt.kind == OptimizerKind::kSgd) {
        SgdParams sp;
        sp.momentum = m_opt.momentum;
        sp.weight_decay = m_opt.weight_decay;
        sp.nesterov = m_opt.nesterov;
        const std::string buf = "opt.momentum." + p.name;
        const std::uint32_t n = Add(OpKind::kSgd, SgdAttrs(sp), {param, grads[i], State(buf), lr},
                                    {p.shape, p.shape}, "sgd." + p.name);
        m_next[p.name] = Out(n, 0);
        m_next[buf] = Out(n, 1);
      } else {
        AdamWParams ap;
        ap.beta1 = m_opt.beta1;
        ap.beta2 = m_opt.beta2;
        ap.eps = m_opt.eps;
        ap.weight_decay = m_opt.weight_decay;
        ap.step = step + 1;
        const std::string m = "opt.m." + p.name, v = "opt.v." + p.name;
        const std::uint32_t n = Add(OpKind::kAdamW, AdamWAttrs(ap), {param, grads[i], State(m), State(v), lr},
                                    {p.shape, p.shape, p.shape}, "adamw." + p.name);
        m_next[p.name] = Out(n, 0);
        m_next[m] = Out(n, 1);
        m_next[v] = Out(n, 2);
      }
    }
    m_g.next_state.clear();
    for (const std::string& name : m_g.state_names) {
      const auto it = m_next.find(name);
      assert(it != m_next.end() && "every state tensor has a next value");
      m_g.next_state.push_back(it->second);
    }
  }

  bool too_large() const { return m_too_large; }

 private:
  StepGraph& m_g;
  const OptimizerSpec& m_opt;
  std::map<std::string, std::vector<NodeInput>> m_grads;
  std::map<std::string, NodeInput> m_next;
  bool m_too_large = false;
};

OpAttrs NoAttrs() { return {}; }

// ---- MLP ----------------------------------------------------------------------

void BuildMlp(Builder& b, const MlpSpec& m, std::int64_t batch) {
  const OpKind act = m.activation == Activation::kRelu ? OpKind::kRelu : OpKind::kGelu;
  const OpKind act_back = m.activation == Activation::kRelu ? OpKind::kReluBackward : OpKind::kGeluBackward;
  const std::string act_name = m.activation == Activation::kRelu ? ".relu" : ".gelu";
  struct Layer {
    std::string prefix;
    NodeInput in, pre;
  };
  std::vector<Layer> layers;
  NodeInput x = NodeInput::Batch(kBatchInputs);
  for (std::size_t i = 0; i < m.hidden.size(); ++i) {
    const std::string p = "fc." + std::to_string(i);
    const Shape s{batch, m.hidden[i]};
    const NodeInput pre =
        b.Add1(OpKind::kLinear, NoAttrs(), {x, b.State(p + ".weight"), b.State(p + ".bias")}, s, p);
    layers.push_back({p, x, pre});
    x = b.Add1(act, NoAttrs(), {pre}, s, p + act_name);
  }
  const NodeInput targets = NodeInput::Batch(kBatchTargets);
  const NodeInput hw = b.State("head.weight");
  const NodeInput logits =
      b.Add1(OpKind::kLinear, NoAttrs(), {x, hw, b.State("head.bias")}, {batch, m.classes}, "head");
  b.Add1(OpKind::kCrossEntropy, NoAttrs(), {logits, targets}, {1}, "loss");

  const NodeInput seed = b.LossSeed();
  const NodeInput dlogits = b.Add1(OpKind::kCrossEntropyBackward, NoAttrs(), {seed, logits, targets},
                                   {batch, m.classes}, "loss.backward");
  std::uint32_t lb = b.Add(OpKind::kLinearBackward, NoAttrs(), {dlogits, x, hw},
                           {b.ShapeOf(x), b.ShapeOf(hw), {m.classes}}, "head.backward");
  b.Grad("head.weight", Builder::Out(lb, 1));
  b.Grad("head.bias", Builder::Out(lb, 2));
  for (std::size_t k = layers.size(); k-- > 0;) {
    const Layer& l = layers[k];
    const NodeInput w = b.State(l.prefix + ".weight");
    const NodeInput dpre = b.Add1(act_back, NoAttrs(), {Builder::Out(lb, 0), l.pre}, b.ShapeOf(l.pre),
                                  l.prefix + act_name + ".backward");
    lb = b.Add(OpKind::kLinearBackward, NoAttrs(), {dpre, l.in, w},
               {b.ShapeOf(l.in), b.ShapeOf(w), {m.hidden[k]}}, l.prefix + ".backward");
    b.Grad(l.prefix + ".weight", Builder::Out(lb, 1));
    b.Grad(l.prefix + ".bias", Builder::Out(lb, 2));
  }
}

// ---- CNN ----------------------------------------------------------------------

struct ConvBn {
  std::string conv, bn;  // parameter prefixes
  NodeInput in;          // conv input
  NodeInput conv_out;
  std::uint32_t bn_node = 0;  // outputs y, running_mean', running_var', mean, rstd
};

ConvBn AddConvBn(Builder& b, const std::string& conv, const std::string& bn, NodeInput in,
                 const Shape& out_shape) {
  Conv2dParams cp;
  cp.pad_h = cp.pad_w = 1;
  ConvBn r{conv, bn, in, {}, 0};
  r.conv_out = b.Add1(OpKind::kConv2d, Conv2dAttrs(cp), {in, b.State(conv + ".weight")}, out_shape, conv);
  BatchNormParams bp;
  bp.eps = kNormEps;
  bp.momentum = kBatchNormMomentum;
  const Shape c{out_shape[1]};
  r.bn_node = b.Add(OpKind::kBatchNorm2dTrain, BatchNormAttrs(bp),
                    {r.conv_out, b.State(bn + ".weight"), b.State(bn + ".bias"),
                     b.State(bn + ".running_mean"), b.State(bn + ".running_var")},
                    {out_shape, c, c, c, c}, bn);
  b.NextBuffer(bn + ".running_mean", Builder::Out(r.bn_node, 1));
  b.NextBuffer(bn + ".running_var", Builder::Out(r.bn_node, 2));
  return r;
}

// Backward of conv → bn from dy (the gradient of the bn output); returns dx
// of the conv input.
NodeInput ConvBnBackward(Builder& b, const ConvBn& r, NodeInput dy) {
  const Shape& y = b.ShapeOf(r.conv_out);
  const Shape c{y[1]};
  const std::uint32_t bnb = b.Add(
      OpKind::kBatchNorm2dBackward, NoAttrs(),
      {dy, r.conv_out, b.State(r.bn + ".weight"), Builder::Out(r.bn_node, 3), Builder::Out(r.bn_node, 4)},
      {y, c, c}, r.bn + ".backward");
  b.Grad(r.bn + ".weight", Builder::Out(bnb, 1));
  b.Grad(r.bn + ".bias", Builder::Out(bnb, 2));
  Conv2dParams cp;
  cp.pad_h = cp.pad_w = 1;
  const NodeInput w = b.State(r.conv + ".weight");
  const std::uint32_t cb = b.Add(OpKind::kConv2dBackward, Conv2dAttrs(cp), {Builder::Out(bnb, 0), r.in, w},
                                 {b.ShapeOf(r.in), b.ShapeOf(w), c}, r.conv + ".backward");
  b.Grad(r.conv + ".weight", Builder::Out(cb, 1));
  return Builder::Out(cb, 0);
}

void BuildCnn(Builder& b, const CnnSpec& m, std::int64_t batch) {
  const std::int64_t c = m.channels;
  std::int64_t h = m.height, w = m.width;
  const NodeInput x = NodeInput::Batch(kBatchInputs);
  const ConvBn stem = AddConvBn(b, "stem.conv", "stem.bn", x, {batch, c, h, w});
  const NodeInput stem_relu =
      b.Add1(OpKind::kRelu, NoAttrs(), {Builder::Out(stem.bn_node, 0)}, {batch, c, h, w}, "stem.relu");
  NodeInput cur = stem_relu;
  Pool2dParams max_pool;  // 2×2, stride 2, no padding
  if (m.stem_pool) {
    h /= 2;
    w /= 2;
    cur = b.Add1(OpKind::kMaxPool2d, Pool2dAttrs(max_pool), {stem_relu}, {batch, c, h, w}, "stem.pool");
  }
  const Shape fmap{batch, c, h, w};
  struct Block {
    std::string prefix;
    ConvBn first, second;
    NodeInput relu1, sum;
  };
  std::vector<Block> blocks;
  for (std::int64_t j = 0; j < m.blocks; ++j) {
    const std::string p = "blocks." + std::to_string(j);
    Block blk;
    blk.prefix = p;
    blk.first = AddConvBn(b, p + ".conv1", p + ".bn1", cur, fmap);
    blk.relu1 = b.Add1(OpKind::kRelu, NoAttrs(), {Builder::Out(blk.first.bn_node, 0)}, fmap, p + ".relu1");
    blk.second = AddConvBn(b, p + ".conv2", p + ".bn2", blk.relu1, fmap);
    blk.sum =
        b.Add1(OpKind::kAdd, NoAttrs(), {Builder::Out(blk.second.bn_node, 0), cur}, fmap, p + ".residual");
    cur = b.Add1(OpKind::kRelu, NoAttrs(), {blk.sum}, fmap, p + ".relu2");
    blocks.push_back(std::move(blk));
  }
  Pool2dParams gap;  // global average pool: one window over the whole map
  gap.kernel_h = gap.stride_h = h;
  gap.kernel_w = gap.stride_w = w;
  const NodeInput pooled = b.Add1(OpKind::kAvgPool2d, Pool2dAttrs(gap), {cur}, {batch, c, 1, 1}, "pool");
  const NodeInput flat = b.Add1(OpKind::kReshape, ReshapeAttrs({batch, c}), {pooled}, {batch, c}, "flatten");
  const NodeInput hw = b.State("head.weight");
  const NodeInput targets = NodeInput::Batch(kBatchTargets);
  const NodeInput logits =
      b.Add1(OpKind::kLinear, NoAttrs(), {flat, hw, b.State("head.bias")}, {batch, m.classes}, "head");
  b.Add1(OpKind::kCrossEntropy, NoAttrs(), {logits, targets}, {1}, "loss");

  const NodeInput seed = b.LossSeed();
  const NodeInput dlogits = b.Add1(OpKind::kCrossEntropyBackward, NoAttrs(), {seed, logits, targets},
                                   {batch, m.classes}, "loss.backward");
  const std::uint32_t lb = b.Add(OpKind::kLinearBackward, NoAttrs(), {dlogits, flat, hw},
                                 {{batch, c}, b.ShapeOf(hw), {m.classes}}, "head.backward");
  b.Grad("head.weight", Builder::Out(lb, 1));
  b.Grad("head.bias", Builder::Out(lb, 2));
  const NodeInput dpooled = b.Add1(OpKind::kReshape, ReshapeAttrs({batch, c, 1, 1}), {Builder::Out(lb, 0)},
                                   {batch, c, 1, 1}, "flatten.backward");
  NodeInput d = b.Add1(OpKind::kAvgPool2dBackward, Pool2dAttrs(gap), {dpooled, cur}, fmap, "pool.backward");
  for (std::size_t k = blocks.size(); k-- > 0;) {
    const Block& blk = blocks[k];
    // d is the gradient of relu2's output; the residual add passes its
    // gradient unchanged to both summands (no node: AddBackward is a copy).
    const NodeInput dsum =
        b.Add1(OpKind::kReluBackward, NoAttrs(), {d, blk.sum}, fmap, blk.prefix + ".relu2.backward");
    const NodeInput drelu1 = ConvBnBackward(b, blk.second, dsum);
    const NodeInput dbn1 =
        b.Add1(OpKind::kReluBackward, NoAttrs(), {drelu1, Builder::Out(blk.first.bn_node, 0)}, fmap,
               blk.prefix + ".relu1.backward");
    const NodeInput dbranch = ConvBnBackward(b, blk.first, dbn1);
    d = b.Add1(OpKind::kAdd, NoAttrs(), {dbranch, dsum}, fmap, blk.prefix + ".residual.backward");
  }
  const Shape full{batch, c, m.height, m.width};
  if (m.stem_pool) {
    d = b.Add1(OpKind::kMaxPool2dBackward, Pool2dAttrs(max_pool), {d, stem_relu}, full, "stem.pool.backward");
  }
  const NodeInput dstem = b.Add1(OpKind::kReluBackward, NoAttrs(), {d, Builder::Out(stem.bn_node, 0)}, full,
                                 "stem.relu.backward");
  ConvBnBackward(b, stem, dstem);  // its dx (the gradient of the images) is unused
}

// ---- GPT ----------------------------------------------------------------------

void BuildGpt(Builder& b, const GptSpec& m, std::int64_t batch) {
  const std::int64_t t = m.context, c = m.d_model, v = m.vocab;
  const Shape act{batch, t, c}, act4{batch, t, 4 * c}, rows{batch * t};
  const bool dropout = m.dropout > 0.0f;
  const OpAttrs drop_attrs = DropoutAttrs(m.dropout);
  const OpAttrs ln_attrs = LayerNormAttrs(kNormEps);
  const NodeInput idx = NodeInput::Batch(kBatchInputs);
  const NodeInput targets = NodeInput::Batch(kBatchTargets);
  const NodeInput wte = b.State("wte.weight");

  // Embeddings. Positions are 0..T−1 for every sequence, so the position
  // embedding is wpe broadcast over the batch: sum_backward over axis 0.
  const NodeInput tok = b.Add1(OpKind::kEmbedding, NoAttrs(), {idx, wte}, act, "wte");
  const NodeInput pos =
      b.Add1(OpKind::kSumBackward, ReduceAttrs(0), {b.State("wpe.weight"), tok}, act, "wpe.broadcast");
  NodeInput x = b.Add1(OpKind::kAdd, NoAttrs(), {tok, pos}, act, "embed");
  std::uint32_t embed_drop = 0;
  if (dropout) {
    embed_drop = b.Add(OpKind::kDropout, drop_attrs, {x}, {act, act}, "embed.dropout");
    x = Builder::Out(embed_drop, 0);
  }

  struct Layer {
    std::string p;
    NodeInput x_in;
    std::uint32_t ln1 = 0, attn = 0, proj_drop = 0, ln2 = 0, mlp_drop = 0;
    NodeInput qkv, proj, x1, fc, gelu;
  };
  std::vector<Layer> layers;
  for (std::int64_t l = 0; l < m.layers; ++l) {
    Layer L;
    L.p = "h." + std::to_string(l);
    const std::string& p = L.p;
    L.x_in = x;
    L.ln1 = b.Add(OpKind::kLayerNorm, ln_attrs, {x, b.State(p + ".ln_1.weight"), b.State(p + ".ln_1.bias")},
                  {act, rows, rows}, p + ".ln_1");
    L.qkv = b.Add1(OpKind::kLinear, NoAttrs(),
                   {Builder::Out(L.ln1, 0), b.State(p + ".attn.qkv.weight"), b.State(p + ".attn.qkv.bias")},
                   {batch, t, 3 * c}, p + ".attn.qkv");
    L.attn = b.Add(OpKind::kAttention, AttentionAttrs(m.heads), {L.qkv}, {act, {batch, m.heads, t, t}},
                   p + ".attn");
    L.proj =
        b.Add1(OpKind::kLinear, NoAttrs(),
               {Builder::Out(L.attn, 0), b.State(p + ".attn.proj.weight"), b.State(p + ".attn.proj.bias")},
               act, p + ".attn.proj");
    NodeInput branch = L.proj;
    if (dropout) {
      L.proj_drop = b.Add(OpKind::kDropout, drop_attrs, {L.proj}, {act, act}, p + ".attn.dropout");
      branch = Builder::Out(L.proj_drop, 0);
    }
    L.x1 = b.Add1(OpKind::kAdd, NoAttrs(), {x, branch}, act, p + ".attn.residual");
    L.ln2 =
        b.Add(OpKind::kLayerNorm, ln_attrs, {L.x1, b.State(p + ".ln_2.weight"), b.State(p + ".ln_2.bias")},
              {act, rows, rows}, p + ".ln_2");
    L.fc = b.Add1(OpKind::kLinear, NoAttrs(),
                  {Builder::Out(L.ln2, 0), b.State(p + ".mlp.fc.weight"), b.State(p + ".mlp.fc.bias")}, act4,
                  p + ".mlp.fc");
    L.gelu = b.Add1(OpKind::kGelu, NoAttrs(), {L.fc}, act4, p + ".mlp.gelu");
    const NodeInput mp = b.Add1(OpKind::kLinear, NoAttrs(),
                                {L.gelu, b.State(p + ".mlp.proj.weight"), b.State(p + ".mlp.proj.bias")}, act,
                                p + ".mlp.proj");
    branch = mp;
    if (dropout) {
      L.mlp_drop = b.Add(OpKind::kDropout, drop_attrs, {mp}, {act, act}, p + ".mlp.dropout");
      branch = Builder::Out(L.mlp_drop, 0);
    }
    x = b.Add1(OpKind::kAdd, NoAttrs(), {L.x1, branch}, act, p + ".mlp.residual");
    layers.push_back(std::move(L));
  }
  const std::uint32_t lnf =
      b.Add(OpKind::kLayerNorm, ln_attrs, {x, b.State("ln_f.weight"), b.State("ln_f.bias")},
            {act, rows, rows}, "ln_f");
  // Tied head: logits = ln_f(x) · wteᵀ, a linear layer without bias on wte [V, C].
  const NodeInput logits =
      b.Add1(OpKind::kLinear, NoAttrs(), {Builder::Out(lnf, 0), wte}, {batch, t, v}, "lm_head");
  b.Add1(OpKind::kCrossEntropy, NoAttrs(), {logits, targets}, {1}, "loss");

  const NodeInput seed = b.LossSeed();
  const NodeInput dlogits = b.Add1(OpKind::kCrossEntropyBackward, NoAttrs(), {seed, logits, targets},
                                   {batch, t, v}, "loss.backward");
  const std::uint32_t hb = b.Add(OpKind::kLinearBackward, NoAttrs(), {dlogits, Builder::Out(lnf, 0), wte},
                                 {act, {v, c}, {v}}, "lm_head.backward");
  b.Grad("wte.weight", Builder::Out(hb, 1));  // db (slot 2) is unused: the head has no bias
  const std::uint32_t lnfb =
      b.Add(OpKind::kLayerNormBackward, NoAttrs(),
            {Builder::Out(hb, 0), x, b.State("ln_f.weight"), Builder::Out(lnf, 1), Builder::Out(lnf, 2)},
            {act, {c}, {c}}, "ln_f.backward");
  b.Grad("ln_f.weight", Builder::Out(lnfb, 1));
  b.Grad("ln_f.bias", Builder::Out(lnfb, 2));
  NodeInput d = Builder::Out(lnfb, 0);

  const auto linear_back = [&](NodeInput dy, NodeInput in, const std::string& name, const Shape& in_shape) {
    const NodeInput w = b.State(name + ".weight");
    const Shape& ws = b.ShapeOf(w);
    const std::uint32_t n =
        b.Add(OpKind::kLinearBackward, NoAttrs(), {dy, in, w}, {in_shape, ws, {ws[0]}}, name + ".backward");
    b.Grad(name + ".weight", Builder::Out(n, 1));
    b.Grad(name + ".bias", Builder::Out(n, 2));
    return Builder::Out(n, 0);
  };
  const auto ln_back = [&](NodeInput dy, NodeInput in, std::uint32_t ln, const std::string& name) {
    const std::uint32_t n =
        b.Add(OpKind::kLayerNormBackward, NoAttrs(),
              {dy, in, b.State(name + ".weight"), Builder::Out(ln, 1), Builder::Out(ln, 2)}, {act, {c}, {c}},
              name + ".backward");
    b.Grad(name + ".weight", Builder::Out(n, 1));
    b.Grad(name + ".bias", Builder::Out(n, 2));
    return Builder::Out(n, 0);
  };
  for (std::size_t k = layers.size(); k-- > 0;) {
    const Layer& L = layers[k];
    const std::string& p = L.p;
    // d: gradient of this block's output x_out = x1 + branch_mlp.
    NodeInput dmlp = d;
    if (dropout) {
      dmlp = b.Add1(OpKind::kDropoutBackward, drop_attrs, {d, Builder::Out(L.mlp_drop, 1)}, act,
                    p + ".mlp.dropout.backward");
    }
    const NodeInput dgelu = linear_back(dmlp, L.gelu, p + ".mlp.proj", act4);
    const NodeInput dfc =
        b.Add1(OpKind::kGeluBackward, NoAttrs(), {dgelu, L.fc}, act4, p + ".mlp.gelu.backward");
    const NodeInput dln2 = linear_back(dfc, Builder::Out(L.ln2, 0), p + ".mlp.fc", act);
    const NodeInput dx1_ln = ln_back(dln2, L.x1, L.ln2, p + ".ln_2");
    const NodeInput dx1 = b.Add1(OpKind::kAdd, NoAttrs(), {d, dx1_ln}, act, p + ".mlp.residual.backward");
    NodeInput dproj = dx1;
    if (dropout) {
      dproj = b.Add1(OpKind::kDropoutBackward, drop_attrs, {dx1, Builder::Out(L.proj_drop, 1)}, act,
                     p + ".attn.dropout.backward");
    }
    const NodeInput dattn = linear_back(dproj, Builder::Out(L.attn, 0), p + ".attn.proj", act);
    const NodeInput dqkv =
        b.Add1(OpKind::kAttentionBackward, AttentionAttrs(m.heads), {dattn, L.qkv, Builder::Out(L.attn, 1)},
               {batch, t, 3 * c}, p + ".attn.backward");
    const NodeInput dln1 = linear_back(dqkv, Builder::Out(L.ln1, 0), p + ".attn.qkv", act);
    const NodeInput dx_ln = ln_back(dln1, L.x_in, L.ln1, p + ".ln_1");
    d = b.Add1(OpKind::kAdd, NoAttrs(), {dx1, dx_ln}, act, p + ".attn.residual.backward");
  }
  if (dropout) {
    d = b.Add1(OpKind::kDropoutBackward, drop_attrs, {d, Builder::Out(embed_drop, 1)}, act,
               "embed.dropout.backward");
  }
  b.Grad("wpe.weight", b.Add1(OpKind::kSum, ReduceAttrs(0), {d}, {t, c}, "wpe.backward"));
  b.Grad("wte.weight",
         b.Add1(OpKind::kEmbeddingBackward, EmbeddingBackwardAttrs(v), {d, idx}, {v, c}, "wte.backward"));
}

Status CheckBatch(const ModelSpec& model, std::span<const Shape> batch_shapes, std::int64_t* batch) {
  if (batch_shapes.size() != 2 || batch_shapes[0].empty()) {
    return Status::Invalid("graph-bad-batch", "a batch is two tensors: inputs and targets");
  }
  *batch = batch_shapes[0][0];
  auto expected = BatchShapes(model, *batch);
  if (!expected.ok()) return expected.status();
  if (batch_shapes[0] != (*expected)[0] || batch_shapes[1] != (*expected)[1]) {
    return Status::Invalid("graph-bad-batch", "batch shapes " + ShapeToString(batch_shapes[0]) + ", " +
                                                  ShapeToString(batch_shapes[1]) + " do not fit the model");
  }
  return Status::Ok();
}

}  // namespace

Result<std::vector<Shape>> BatchShapes(const ModelSpec& model, std::int64_t batch_size) {
  VT_TRY(ValidateModelSpec(model));
  if (batch_size < 1 || batch_size > kMaxDim) {
    return Status::Invalid("graph-bad-batch", "batch size must be in [1, 2^20]");
  }
  const std::int64_t n = batch_size;
  return std::visit(
      [n](const auto& m) -> std::vector<Shape> {
        using M = std::decay_t<decltype(m)>;
        if constexpr (std::is_same_v<M, MlpSpec>) {
          return {{n, m.input_dim}, {n}};
        } else if constexpr (std::is_same_v<M, CnnSpec>) {
          return {{n, m.in_channels, m.height, m.width}, {n}};
        } else {
          return {{n, m.context}, {n, m.context}};
        }
      },
      model.arch);
}

Result<StepGraph> BuildStepGraph(const ModelSpec& model, const OptimizerSpec& opt, std::uint64_t step,
                                 std::span<const Shape> batch_shapes) {
  VT_ASSIGN_OR_RETURN(std::vector<TensorSpec> state, StateSpecs(model, opt));
  std::int64_t batch = 0;
  VT_TRY(CheckBatch(model, batch_shapes, &batch));
  const bool has_dropout =
      model.family() == ModelFamily::kGpt && std::get<GptSpec>(model.arch).dropout > 0.0f;
  if (step > kMaxStep || (has_dropout && step > kMaxDropoutStep)) {
    return Status::Invalid("graph-bad-step",
                           "step " + std::to_string(step) + " is beyond the schedule range");
  }
  try {
    StepGraph g;
    g.step = step;
    for (const TensorSpec& s : state) {
      g.state_names.push_back(s.name);
      g.state_shapes.push_back(s.shape);
    }
    g.batch_shapes.assign(batch_shapes.begin(), batch_shapes.end());
    Builder b(g, opt);
    std::visit(
        [&](const auto& m) {
          using M = std::decay_t<decltype(m)>;
          if constexpr (std::is_same_v<M, MlpSpec>) {
            BuildMlp(b, m, batch);
          } else if constexpr (std::is_same_v<M, CnnSpec>) {
            BuildCnn(b, m, batch);
          } else {
            BuildGpt(b, m, batch);
          }
        },
        model.arch);
    for (std::size_t i = 0; i < g.nodes.size(); ++i) {
      if (g.nodes[i].kind == OpKind::kCrossEntropy) {
        g.loss = NodeInput::Node(static_cast<std::uint32_t>(i), 0);
        break;
      }
    }
    std::vector<TensorSpec> params;
    for (const TensorSpec& s : state) {
      if (s.role == TensorRole::kParameter) params.push_back(s);
    }
    b.Finish(params);
    if (b.too_large()) {
      return Status::Invalid("graph-too-large", "a node output has more than 2^31 - 1 elements");
    }
    return g;
  } catch (const std::bad_alloc&) {
    return Status::Error("out-of-memory", "building the step graph");
  }
}

Result<std::size_t> NodeCount(const ModelSpec& model, const OptimizerSpec& opt, std::uint64_t step,
                              std::span<const Shape> batch_shapes) {
  VT_ASSIGN_OR_RETURN(StepGraph g, BuildStepGraph(model, opt, step, batch_shapes));
  return g.nodes.size();
}

Result<Node> StepNode(const ModelSpec& model, const OptimizerSpec& opt, std::uint64_t step,
                      std::span<const Shape> batch_shapes, std::size_t i) {
  VT_ASSIGN_OR_RETURN(StepGraph g, BuildStepGraph(model, opt, step, batch_shapes));
  if (i >= g.nodes.size()) {
    return Status::Invalid("node-out-of-range",
                           "node " + std::to_string(i) + " of a step with " + std::to_string(g.nodes.size()));
  }
  return std::move(g.nodes[i]);
}

const Shape& InputShape(const StepGraph& graph, const NodeInput& in) {
  switch (in.source) {
    case NodeInputSource::kState:
      return graph.state_shapes[in.index];
    case NodeInputSource::kBatch:
      return graph.batch_shapes[in.index];
    case NodeInputSource::kNode:
      break;
  }
  return graph.nodes[in.index].output_shapes[in.slot];
}

std::string NodeTauKey(const StepGraph& graph, std::size_t i) {
  const std::vector<Shape> shapes = NodeInputShapes(graph, i);
  return TauKeyForInputs(OpKindName(graph.nodes[i].kind), shapes);
}

std::vector<Shape> NodeInputShapes(const StepGraph& graph, std::size_t i) {
  std::vector<Shape> out;
  for (const NodeInput& in : graph.nodes[i].inputs) out.push_back(InputShape(graph, in));
  return out;
}

Status CheckGraph(const StepGraph& graph) {
  const auto bad = [](const std::string& what) { return Status::Invalid("graph-malformed", what); };
  if (graph.state_names.size() != graph.state_shapes.size())
    return bad("state names and shapes differ in count");
  if (!std::is_sorted(graph.state_names.begin(), graph.state_names.end()) ||
      std::adjacent_find(graph.state_names.begin(), graph.state_names.end()) != graph.state_names.end()) {
    return bad("state names are not strictly increasing");
  }
  const auto valid_input = [&](const NodeInput& in, std::size_t before) {
    switch (in.source) {
      case NodeInputSource::kState:
        return in.slot == 0 && in.index < graph.state_shapes.size();
      case NodeInputSource::kBatch:
        return in.slot == 0 && in.index < graph.batch_shapes.size();
      case NodeInputSource::kNode:
        return in.index < before && in.slot < graph.nodes[in.index].num_outputs();
    }
    return false;
  };
  for (std::size_t i = 0; i < graph.nodes.size(); ++i) {
    const Node& n = graph.nodes[i];
    const OpInfo* info = FindOp(n.kind);
    if (info == nullptr) return bad("node " + std::to_string(i) + ": unknown operator");
    const auto inputs = static_cast<int>(n.inputs.size());
    if (inputs < info->min_inputs || inputs > info->max_inputs) {
      return bad("node " + std::to_string(i) + " (" + n.name + "): input count");
    }
    if (static_cast<int>(n.num_outputs()) != NumOutputs(*info, inputs)) {
      return bad("node " + std::to_string(i) + " (" + n.name + "): output count");
    }
    for (const NodeInput& in : n.inputs) {
      if (!valid_input(in, i)) return bad("node " + std::to_string(i) + " (" + n.name + "): dangling input");
    }
  }
  if (graph.next_state.size() != graph.state_shapes.size()) return bad("next state does not cover the state");
  for (std::size_t k = 0; k < graph.next_state.size(); ++k) {
    const NodeInput& in = graph.next_state[k];
    if (!valid_input(in, graph.nodes.size())) return bad("next state " + graph.state_names[k] + ": dangling");
    if (InputShape(graph, in) != graph.state_shapes[k])
      return bad("next state " + graph.state_names[k] + ": shape");
  }
  if (graph.loss.source != NodeInputSource::kNode || !valid_input(graph.loss, graph.nodes.size()) ||
      InputShape(graph, graph.loss) != Shape{1}) {
    return bad("loss is not a node output of shape [1]");
  }
  return Status::Ok();
}

}  // namespace vt::kernels::graph
