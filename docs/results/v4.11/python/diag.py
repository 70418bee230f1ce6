import sys, torch, importlib.util
from pathlib import Path
sys.argv = ["llama_layer.py"]
spec = importlib.util.spec_from_file_location("ll", "python/examples/llama_layer.py")
ll = importlib.util.module_from_spec(spec); spec.loader.exec_module(ll)
import nmtune, nmtune.torch
lookup = nmtune.Lookup(["tuning-db/h100.sqlite", "tuning-db/h100-decode.sqlite"], "h100")
torch.manual_seed(0)
for (n, k) in [(4096, 4096), (11008, 4096), (4096, 11008)]:
    lin = torch.nn.Linear(k, n, bias=False).cuda()
    torch.nn.init.normal_(lin.weight, std=k ** -0.5)
    sl = nmtune.torch.SparseLinear.from_linear(lin, "8:32", l=32, db=lookup)
    c = nmtune.prune_and_compress(lin.weight.detach(), "8:32", l=32)
    wp = nmtune.decompress(*c)
    for m in (1, 16, 4096):
        x = torch.randn(m, k, device="cuda")
        ref = (x.double() @ wp.double().t())
        got = sl(x).double()
        tf = torch.backends.cuda.matmul.allow_tf32
        ref32 = x @ wp.t()
        print(f"n={n} k={k} m={m}: rel err vs fp64 {((got-ref).norm()/ref.norm()).item():.2e}, torch fp32 vs fp64 {((ref32.double()-ref).norm()/ref.norm()).item():.2e}, max|got-ref32| {(got-ref32.double()).abs().max().item():.2e}, allow_tf32={tf}, kernel {sl.kernel_for(m)['kernel'][12:60]}")
# the whole layer at m = 4096, as the example runs it
torch.backends.cuda.matmul.allow_tf32 = False
torch.manual_seed(0)
dense = ll.DecoderLayer(4096, 11008, 32).cuda().eval()
sparse = ll.DecoderLayer(4096, 11008, 32).cuda().eval()
pruned = ll.DecoderLayer(4096, 11008, 32).cuda().eval()
sparse.load_state_dict(dense.state_dict()); pruned.load_state_dict(dense.state_dict())
for name in ll.LINEARS:
    linear = dense.get_submodule(name)
    ll.set_submodule(sparse, name, nmtune.torch.SparseLinear.from_linear(linear, "8:32", l=32, db=lookup))
    c = nmtune.prune_and_compress(linear.weight.detach(), "8:32", l=32)
    with torch.no_grad():
        pruned.get_submodule(name).weight.copy_(nmtune.decompress(*c))
with torch.no_grad():
    for m in (16, 4096):
        x = torch.randn(1, m, 4096, device="cuda")
        ref = pruned(x).double(); got = sparse(x).double()
        d = got - ref
        print(f"layer m={m}: |ref| {ref.norm().item():.4e} |d| {d.norm().item():.4e} max|d| {d.abs().max().item():.3e} nan {torch.isnan(got).any().item()} {torch.isnan(ref).any().item()} inf {torch.isinf(ref).any().item()} x-part {(ref - x.double()).norm().item():.3e}")
