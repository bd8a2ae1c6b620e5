#!/usr/bin/env python3
"""PyTorch modules equivalent to veritrain's model families (docs/models.md,
"PyTorch names"): the weights `vt bounty result` and `vt-worker export` write
load into them with `load_state_dict(strict=True)`.

    python3 tools/torch_modules.py MODEL.json WEIGHTS.safetensors

MODEL.json is a model object of a job file in full form, e.g.
{"family": "gpt", "vocab": 256, "context": 32, "layers": 2, "heads": 2, "d_model": 64, "dropout": 0.1}.
Loads strictly, runs one forward pass on a small input, prints
"loaded N tensors, forward OK" and exits 0, or raises. Needs torch (Debian:
python3-torch); uses the safetensors package when present, else the small
reader below (Debian 12 packages no safetensors).
"""
import json
import struct
import sys

import torch
from torch import nn

try:
    from safetensors.torch import load_file
except ImportError:
    _DTYPES = {"F32": torch.float32, "F64": torch.float64, "F16": torch.float16, "BF16": torch.bfloat16,
               "I64": torch.int64, "I32": torch.int32, "U8": torch.uint8}

    def load_file(path):
        """safetensors: u64 little-endian header length, JSON header, then the tensors' bytes."""
        data = open(path, "rb").read()
        (n,) = struct.unpack("<Q", data[:8])
        header = json.loads(data[8:8 + n])
        base = 8 + n
        out = {}
        for name, info in header.items():
            if name == "__metadata__":
                continue
            begin, end = info["data_offsets"]
            t = torch.frombuffer(bytearray(data[base + begin:base + end]), dtype=_DTYPES[info["dtype"]])
            out[name] = t.reshape(info["shape"])
        return out


class Mlp(nn.Module):
    def __init__(self, input_dim, hidden, classes, activation="relu", **_):
        super().__init__()
        widths = [input_dim] + list(hidden)
        self.fc = nn.ModuleList(nn.Linear(a, b) for a, b in zip(widths, widths[1:]))
        self.head = nn.Linear(widths[-1], classes)
        self.act = nn.ReLU() if activation == "relu" else nn.GELU(approximate="tanh")

    def forward(self, x):
        for layer in self.fc:
            x = self.act(layer(x))
        return self.head(x)


class ConvBn(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(cout, eps=1e-5, momentum=0.1)


class Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.conv1 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(c)
        self.conv2 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(c)

    def forward(self, x):
        y = torch.relu(self.bn1(self.conv1(x)))
        return torch.relu(self.bn2(self.conv2(y)) + x)


class Cnn(nn.Module):
    def __init__(self, in_channels, channels, blocks, stem_pool, classes, **_):
        super().__init__()
        self.stem = ConvBn(in_channels, channels)
        self.stem_pool = stem_pool
        self.blocks = nn.ModuleList(Block(channels) for _ in range(blocks))
        self.head = nn.Linear(channels, classes)

    def forward(self, x):
        x = torch.relu(self.stem.bn(self.stem.conv(x)))
        if self.stem_pool:
            x = nn.functional.max_pool2d(x, 2, 2)
        for b in self.blocks:
            x = b(x)
        return self.head(x.mean(dim=(2, 3)))


class Attention(nn.Module):
    def __init__(self, c, heads, dropout=0.0):
        super().__init__()
        self.heads = heads
        self.c_attn = nn.Linear(c, 3 * c)
        self.c_proj = nn.Linear(c, c)
        self.resid_dropout = nn.Dropout(dropout)  # no parameters: the state dict is unchanged

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.c_attn(x).split(c, dim=2)
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
        # Causal softmax attention, spelled out (torch 1.13 has no scaled_dot_product_attention).
        att = (q @ k.transpose(-2, -1)) / (k.shape[-1] ** 0.5)
        att = att.masked_fill(torch.ones(t, t, dtype=torch.bool).triu(1), float("-inf"))
        y = torch.softmax(att, dim=-1) @ v
        return self.resid_dropout(self.c_proj(y.transpose(1, 2).reshape(b, t, c)))


class GptMlp(nn.Module):
    def __init__(self, c, dropout=0.0):
        super().__init__()
        self.c_fc = nn.Linear(c, 4 * c)
        self.c_proj = nn.Linear(4 * c, c)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        return self.dropout(self.c_proj(nn.functional.gelu(self.c_fc(x), approximate="tanh")))


class GptBlock(nn.Module):
    def __init__(self, c, heads, dropout=0.0):
        super().__init__()
        self.ln_1 = nn.LayerNorm(c, eps=1e-5)
        self.attn = Attention(c, heads, dropout)
        self.ln_2 = nn.LayerNorm(c, eps=1e-5)
        self.mlp = GptMlp(c, dropout)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class Gpt(nn.Module):
    """nanoGPT's GPT layout: transformer.{wte,wpe,h,ln_f}, tied lm_head. Dropout
    (training only) where ours has it: after the embedding sum and on each
    residual branch (docs/models.md)."""

    def __init__(self, vocab, context, layers, heads, d_model, dropout=0.0, **_):
        super().__init__()
        self.drop = nn.Dropout(dropout)
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(vocab, d_model),
            wpe=nn.Embedding(context, d_model),
            h=nn.ModuleList(GptBlock(d_model, heads, dropout) for _ in range(layers)),
            ln_f=nn.LayerNorm(d_model, eps=1e-5),
        ))
        self.lm_head = nn.Linear(d_model, vocab, bias=False)
        self.lm_head.weight = self.transformer.wte.weight

    def forward(self, idx):
        t = idx.shape[1]
        x = self.drop(self.transformer.wte(idx) + self.transformer.wpe(torch.arange(t)))
        for block in self.transformer.h:
            x = block(x)
        return self.lm_head(self.transformer.ln_f(x))


FAMILIES = {"mlp": Mlp, "cnn": Cnn, "gpt": Gpt}


def sample_input(family, spec):
    """A batch of 2 inputs of the model's shape."""
    if family == "gpt":
        return torch.randint(0, spec["vocab"], (2, spec["context"]))
    if family == "cnn":
        return torch.randn(2, spec["in_channels"], spec.get("height", 32), spec.get("width", 32))
    return torch.randn(2, spec["input_dim"])


def main():
    spec = json.load(open(sys.argv[1]))
    family = spec.pop("family")
    model = FAMILIES[family](**spec)
    state = load_file(sys.argv[2])
    model.load_state_dict(state, strict=True)
    model.eval()
    with torch.no_grad():
        out = model(sample_input(family, spec))
    if not torch.isfinite(out).all():
        raise SystemExit("forward pass gave non-finite outputs")
    print(f"loaded {len(state)} tensors, forward OK, output shape {tuple(out.shape)}")


if __name__ == "__main__":
    main()
