#!/usr/bin/env python3
"""The PyTorch anchor of train_bench (worker/bench/train_bench.cpp): one fp32
training step of the job's model in PyTorch — forward, cross-entropy,
backward, global gradient-norm clipping, AdamW — on the same model, batch
size, optimizer settings and thread count as ours.

    python3 tools/torch_step_bench.py --threads N [--iters K] [--min-seconds S] < JOB.json

JOB.json is a job file in full form (worker JobToJson: "model" a family
object, "optimizer", "batch_size"). Prints one JSON line:
{"torch": VERSION, "threads": N, "iters": K, "ms_min": ..., "cpu_ms_min": ..., "ms_median": ...,
 "peak_rss_kb": ...}
— the fastest single step in wall time and in the process's CPU time (all
threads), which train_bench compares with its own fastest step (on a shared
machine load only ever adds time), the median wall time, and the process's
peak resident set (VmHWM: the interpreter, torch, model, optimizer state and
the steps; not ru_maxrss, which after an exec also counts the memory of the
process that spawned this one).
The modules are tools/torch_modules.py's (the ones our exported weights load
into). Inputs are synthetic; the step's time does not depend on their values.
Exits 3 with "PyTorch: not installed" on stderr when torch is missing.
"""
import argparse
import json
import os
import sys
import time

try:
    import torch
    from torch import nn
except ImportError:
    print("PyTorch: not installed (apt-get install python3-torch)", file=sys.stderr)
    sys.exit(3)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_modules  # noqa: E402


def batch_for(family, spec, batch):
    g = torch.Generator().manual_seed(2024)
    if family == "gpt":
        tokens = torch.randint(0, spec["vocab"], (batch, spec["context"]), generator=g)
        targets = torch.randint(0, spec["vocab"], (batch, spec["context"]), generator=g)
        return tokens, targets
    if family == "cnn":
        x = torch.randn(batch, spec["in_channels"], spec["height"], spec["width"], generator=g)
    else:
        x = torch.randn(batch, spec["input_dim"], generator=g)
    return x, torch.randint(0, spec["classes"], (batch,), generator=g)


def peak_rss_kb():
    """This process's peak resident set in kB (Linux's VmHWM; 0 elsewhere)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--iters", type=int, default=0, help="fixed step count (0: until --min-seconds)")
    ap.add_argument("--min-seconds", type=float, default=1.0)
    args = ap.parse_args()
    torch.set_num_threads(max(1, args.threads))
    torch.manual_seed(1)

    job = json.load(sys.stdin)
    spec = dict(job["model"])
    family = spec.pop("family")
    opt = job.get("optimizer", {})
    if opt.get("kind", "adamw") != "adamw":
        raise SystemExit("torch_step_bench: only AdamW jobs are anchored")
    model = torch_modules.FAMILIES[family](**spec)
    model.train()
    x, y = batch_for(family, spec, int(job["batch_size"]))
    optimizer = torch.optim.AdamW(model.parameters(), lr=opt.get("lr", 1e-3),
                                  betas=(opt.get("beta1", 0.9), opt.get("beta2", 0.999)),
                                  eps=opt.get("eps", 1e-8), weight_decay=opt.get("weight_decay", 0.0))
    clip = float(opt.get("clip_norm", 0.0))
    loss_fn = nn.CrossEntropyLoss()

    def step():
        optimizer.zero_grad(set_to_none=True)
        logits = model(x)
        loss = loss_fn(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))
        loss.backward()
        if clip > 0:
            nn.utils.clip_grad_norm_(model.parameters(), clip)
        optimizer.step()
        return loss

    step()  # warm-up: allocator, optimizer state
    times, cpu = [], []
    start = time.perf_counter()
    while True:
        t0, c0 = time.perf_counter(), time.process_time()
        step()
        times.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
        if args.iters > 0:
            if len(times) >= args.iters:
                break
        elif time.perf_counter() - start >= args.min_seconds and len(times) >= 3:
            break
    print(json.dumps({"torch": torch.__version__, "threads": torch.get_num_threads(), "iters": len(times),
                      "ms_min": 1e3 * min(times), "cpu_ms_min": 1e3 * min(cpu),
                      "ms_median": 1e3 * sorted(times)[len(times) // 2],
                      "peak_rss_kb": peak_rss_kb()}))


if __name__ == "__main__":
    main()
