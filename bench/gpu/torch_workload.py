# SPDX-License-Identifier: Apache-2.0
"""GPU workloads for bench/gpu.sh: PyTorch on a real CUDA device, timed by the workload itself.

  train   a training step of a small transformer encoder (forward, backward, AdamW step) on
          random tokens; each step ends with torch.cuda.synchronize(), so a step's time is what
          the GPU and the host together took. Prints the median step time over --steps steps
          after --warmup steps.
  launch  a launch-bound loop: --launches tiny in-place adds on one tensor (each a kernel
          launch that the GPU finishes long before the next is issued), synchronized at the
          end: host time per launch, the case where a probe's cost is most visible.

Output: one JSON line on stdout (the figures) so the harness needs no parsing beyond that.
usage: python3 torch_workload.py {train,launch} [--steps N] [--warmup N] [--launches N]
"""
import argparse
import json
import statistics
import sys
import time


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["train", "launch"])
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--launches", type=int, default=50000)
    args = ap.parse_args()

    import torch  # imported late: --help works without PyTorch

    if not torch.cuda.is_available():
        print("torch_workload: no CUDA device visible to PyTorch", file=sys.stderr)
        return 2
    dev = torch.device("cuda")
    torch.manual_seed(0)

    if args.mode == "launch":
        x = torch.zeros(1, device=dev)
        for _ in range(1000):  # warm-up: context, allocator, kernel cache
            x.add_(1.0)
        torch.cuda.synchronize()
        t0 = time.perf_counter_ns()
        for _ in range(args.launches):
            x.add_(1.0)
        torch.cuda.synchronize()
        elapsed = time.perf_counter_ns() - t0
        print(json.dumps({"mode": "launch", "launches": args.launches,
                          "us_per_launch": elapsed / args.launches / 1000.0}))
        return 0

    layer = torch.nn.TransformerEncoderLayer(d_model=512, nhead=8, dim_feedforward=2048,
                                             batch_first=True)
    model = torch.nn.Sequential(torch.nn.Embedding(32000, 512),
                                torch.nn.TransformerEncoder(layer, num_layers=6),
                                torch.nn.Linear(512, 32000)).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    loss_fn = torch.nn.CrossEntropyLoss()
    tokens = torch.randint(0, 32000, (16, 256), device=dev)
    target = torch.randint(0, 32000, (16, 256), device=dev)
    times = []
    for step in range(args.warmup + args.steps):
        t0 = time.perf_counter_ns()
        opt.zero_grad(set_to_none=True)
        out = model(tokens)
        loss = loss_fn(out.view(-1, 32000), target.view(-1))
        loss.backward()
        opt.step()
        torch.cuda.synchronize()
        if step >= args.warmup:
            times.append((time.perf_counter_ns() - t0) / 1e6)
    print(json.dumps({"mode": "train", "steps": args.steps,
                      "step_ms_median": statistics.median(times),
                      "step_ms_min": min(times), "step_ms_max": max(times)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
