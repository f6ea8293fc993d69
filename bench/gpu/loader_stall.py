# A training loop on a real GPU fed by a data-loader process through a multiprocessing queue
# (a pipe), whose CPU work per batch is longer than the GPU step: the main thread waits in the
# queue's read. It measures its own truth: time in q.get(), in loss.item(), and the step total.
import json, multiprocessing as mp, os, sys, time

def loader(q, n, work_ms):
    try:
        import ctypes
        ctypes.CDLL(None).prctl(15, b"data_loader", 0, 0, 0)  # PR_SET_NAME
    except Exception:
        pass
    for i in range(n):
        t0 = time.perf_counter()
        acc, toks = 0, []
        while (time.perf_counter() - t0) * 1000 < work_ms:   # "tokenisation": pure CPU
            for k in range(200):
                acc = (acc * 1103515245 + k + i) & 0xFFFFFFFF
            toks.append(acc % 32000)
        toks = (toks * (4096 // max(1, len(toks)) + 1))[:4096]
        q.put(toks)
    q.put(None)

def main():
    steps, work_ms = int(sys.argv[1]), float(sys.argv[2])
    ctx = mp.get_context("fork")
    q = ctx.Queue(maxsize=2)
    p = ctx.Process(target=loader, args=(q, steps + 5, work_ms), daemon=True)
    p.start()                       # before CUDA is initialised
    import torch
    dev = torch.device("cuda")
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(d_model=512, nhead=8, dim_feedforward=2048, batch_first=True)
    model = torch.nn.Sequential(torch.nn.Embedding(32000, 512), torch.nn.TransformerEncoder(layer, num_layers=4),
                                torch.nn.Linear(512, 32000)).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    loss_fn = torch.nn.CrossEntropyLoss()
    wait = item = 0
    for _ in range(5):              # warm-up, not counted
        toks = q.get()
    t_start = time.perf_counter_ns()
    for step in range(steps):
        t0 = time.perf_counter_ns()
        toks = q.get()
        wait += time.perf_counter_ns() - t0
        x = torch.tensor(toks, device=dev).view(16, 256)
        opt.zero_grad(set_to_none=True)
        out = model(x)
        loss = loss_fn(out.view(-1, 32000), x.view(-1))
        loss.backward()
        opt.step()
        t1 = time.perf_counter_ns()
        loss.item()
        item += time.perf_counter_ns() - t1
    total = time.perf_counter_ns() - t_start
    print(json.dumps({"pid": os.getpid(), "loader_pid": p.pid, "steps": steps, "total_ms": total / 1e6,
                      "queue_wait_ms": wait / 1e6, "item_ms": item / 1e6,
                      "queue_wait_share": wait / total, "item_share": item / total}))

if __name__ == "__main__":
    main()
