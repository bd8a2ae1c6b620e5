#!/usr/bin/env python3
"""One training step of veritrain checked against PyTorch in fp64: the test
worker_torch_step_test (tests/worker/torch_step_test.cpp) runs it.

    python3 tools/torch_step_check.py JOB.json START.safetensors BATCH.safetensors OURS.safetensors

JOB.json is a job file in full form (worker JobToJson); START and OURS are the
model weights before and after our step as `ModelWeightsForTorch` names them
(aliases included); BATCH holds "inputs" and "targets" (fp32, class indices as
floats). The reference loads START into tools/torch_modules.py's module for
the job's family, converted to fp64, and takes one step in fp64 — forward,
mean cross-entropy, backward, global gradient-norm clipping, AdamW with the
job's (constant) lr, betas, eps and weight decay — then checks
every element of every tensor of OURS against it:

    |ours - ref| <= 2 * ulp32(max|ref_T|),  ulp32(r) = 2^(max(floor(log2|r|), -126) - 23)  (2^-149 for r = 0)

(normwise, per tensor T). Where PyTorch's own fp32 step lands farther than
2 such ulps from the fp64 one (an ill-conditioned tensor: a batch-norm
bias, whose gradient is a cancelling sum over the batch and the image), the
bound for T is PyTorch fp32's distance instead: ours must be no worse.

A ReLU is a kink: where the reference's input to it lies within rounding
noise of 0 (closer than KINK_ULPS fp32 ulps of that tensor's largest value),
an fp32 computation may land on the other side and pass or drop a large
gradient that the fp64 step does not, so no bound on the updated weights can
hold. The check measures that first and refuses such a batch.

Prints one line per tensor (max error in fp32 ulps of the reference) and
exits 0 when every element passes, 1 when one does not, 3 without torch, 4
when a ReLU input of the reference lies within noise of its kink (the batch
cannot be compared; take another).
"""
import json
import math
import os
import sys

try:
    import torch
    from torch import nn
except ImportError:
    print("PyTorch: not installed (apt-get install python3-torch)", file=sys.stderr)
    sys.exit(3)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_modules  # noqa: E402

MAX_ULPS = 2.0
KINK_ULPS = 4.0
NOT_COMPARABLE = 4


def ulp32(ref):
    """fp32 ulp at each fp64 reference value (normal binade of |ref|; subnormal spacing below)."""
    exp = torch.frexp(ref.abs())[1].to(torch.float64) - 1  # floor(log2|ref|) for ref != 0
    exp = torch.where(ref == 0, torch.full_like(exp, -126.0), exp.clamp(min=-126.0))
    return torch.pow(2.0, exp - 23.0)


def take_step(family, spec, opt, start, batch, dtype):
    """One step of the job in `dtype`: (updated state_dict, loss, ReLU inputs of the forward pass)."""
    model = torch_modules.FAMILIES[family](**spec).to(dtype)
    model.load_state_dict({k: v.to(dtype) for k, v in start.items()}, strict=True)
    model.train()
    if family == "gpt":
        x = batch["inputs"].long()
    elif family == "cnn":
        x = batch["inputs"].to(dtype).reshape(-1, spec["in_channels"], spec["height"], spec["width"])
    else:
        x = batch["inputs"].to(dtype).reshape(-1, spec["input_dim"])
    y = batch["targets"].long().reshape(-1)

    optimizer = torch.optim.AdamW(model.parameters(), lr=opt["lr"], betas=(opt["beta1"], opt["beta2"]),
                                  eps=opt["eps"], weight_decay=opt["weight_decay"])
    # Every ReLU of torch_modules goes through torch.relu (nn.ReLU through
    # F.relu): record its inputs during the forward pass.
    relu_inputs = []
    relu = torch.relu

    def recording_relu(t):
        relu_inputs.append(t.detach())
        return relu(t)

    torch.relu = recording_relu
    try:
        logits = model(x)
    finally:
        torch.relu = relu
    loss = nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), y)
    loss.backward()
    if float(opt.get("clip_norm", 0.0)) > 0:
        nn.utils.clip_grad_norm_(model.parameters(), float(opt["clip_norm"]))
    optimizer.step()
    return model.state_dict(), float(loss), relu_inputs


def normwise_ulps(values, ref):
    """|values - ref| in fp32 ulps of max|ref|, per element."""
    scale = ref.abs().max() if ref.numel() else torch.zeros((), dtype=torch.float64)
    return (values.double() - ref).abs() / ulp32(scale)


def main():
    job_path, start_path, batch_path, ours_path = sys.argv[1:5]
    job = json.load(open(job_path))
    spec = dict(job["model"])
    family = spec.pop("family")
    opt = job["optimizer"]
    if opt.get("kind") != "adamw" or opt.get("schedule", "constant") != "constant":
        raise SystemExit("torch_step_check: only AdamW jobs with a constant learning rate are checked")
    start = torch_modules.load_file(start_path)
    batch = torch_modules.load_file(batch_path)
    reference, loss, relu_inputs = take_step(family, spec, opt, start, batch, torch.float64)
    nearest = min((float((t.abs() / ulp32(t.abs().max())).min()) for t in relu_inputs if t.numel()),
                  default=math.inf)
    print(f"{len(relu_inputs)} ReLU inputs, nearest to the kink {nearest:.3g} ulp of max|input|")
    if nearest < KINK_ULPS:
        print(f"not comparable: a ReLU input lies within {KINK_ULPS:g} ulps of 0")
        return NOT_COMPARABLE
    # PyTorch's own fp32 step, for scale: how far an ordinary fp32 computation lands.
    torch_fp32, _, _ = take_step(family, spec, opt, start, batch, torch.float32)

    ours = torch_modules.load_file(ours_path)
    if set(ours) != set(reference):
        print(f"tensor names differ: ours only {sorted(set(ours) - set(reference))}, "
              f"reference only {sorted(set(reference) - set(ours))}")
        return 1
    failed = 0
    for name in sorted(reference):
        ref = reference[name].double()
        if ref.shape != ours[name].shape:
            print(f"{name}: shape {tuple(ours[name].shape)} != {tuple(ref.shape)}")
            failed += 1
            continue
        ulps = normwise_ulps(ours[name], ref)
        worst = float(ulps.max()) if ulps.numel() else 0.0
        theirs = float(normwise_ulps(torch_fp32[name], ref).max()) if ref.numel() else 0.0
        # An ill-conditioned tensor (a batch-norm bias: its gradient is a
        # cancelling sum) is out of any fp32 computation's reach of 2 ulps;
        # there ours must land no farther than PyTorch's own fp32 step.
        allowed = max(MAX_ULPS, theirs)
        bad = int((ulps > allowed).sum())
        elementwise = float(((ours[name].double() - ref).abs() / ulp32(ref)).max()) if ref.numel() else 0.0
        print(f"{name}: {ref.numel()} values, max {worst:.3f} ulp of max|ref| ({elementwise:.3g} of its own), "
              f"{bad} over {allowed:.3g}; PyTorch fp32 {theirs:.3f}")
        failed += bad > 0 or math.isnan(worst)
    print(f"loss {loss:.9g}; {len(reference)} tensors, {failed} failing")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
