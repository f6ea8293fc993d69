# One NCCL rank (world size 1) on the one GPU: a communicator and real ncclAllReduce calls.
import os, json, torch, torch.distributed as dist
init = "/tmp/gw_nccl_init"
if os.path.exists(init):
    os.unlink(init)
dist.init_process_group("nccl", init_method="file://" + init, rank=0, world_size=1,
                        device_id=torch.device("cuda:0"))
x = torch.ones(1 << 22, device="cuda")
for _ in range(50):
    dist.all_reduce(x)
torch.cuda.synchronize()
print(json.dumps({"pid": os.getpid(), "all_reduces": 50, "value": float(x[0].item())}))
dist.destroy_process_group()
