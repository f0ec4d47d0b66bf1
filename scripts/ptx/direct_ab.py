# PTX variants of Step 8 4096^3 (the direct emitter against LLVM, runs 149-153, docs/performance.md)
# timed against cuBLAS (torch) in one process; CuPy loads each PTX file of DIR.  usage: python3 direct_ab.py DIR
import sys, glob, cupy as cp, torch
M = N = K = 4096
torch.backends.cuda.matmul.allow_tf32 = False
g = torch.Generator(device='cuda').manual_seed(7)
A = torch.rand(M, K, device='cuda', generator=g) - 0.5
B = torch.rand(K, N, device='cuda', generator=g) - 0.5
ref = A @ B
def timeit(f, n=40):
    for _ in range(5): f()
    ts = []
    for _ in range(n):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record(); f(); e.record(); e.synchronize(); ts.append(s.elapsed_time(e))
    ts.sort(); return ts[len(ts)//2]
files = sorted(glob.glob(sys.argv[1] + '/*.ptx'))
mods = {}
for f in files:
    k = cp.RawModule(path=f).get_function('matmul')
    mods[f] = k
C = torch.zeros(M, N, device='cuda')
args = (cp.uint64(A.data_ptr()), cp.uint64(B.data_ptr()), cp.uint64(C.data_ptr()))
res = {f: [] for f in files}
cub = []
for r in range(4):
    cub.append(timeit(lambda: torch.matmul(A, B)))
    for f in files:
        k = mods[f]
        C.zero_()
        t = timeit(lambda: k((256, 4, 1), (256, 1, 1), args))
        err = ((C - ref).abs().max() / ref.abs().max()).item()
        res[f].append(t)
        print(f"round {r} {f.split('/')[-1]:16s} {t:.4f} ms  x cuBLAS {cub[-1]/t:.4f}  err {err:.1e}", flush=True)
print("median of rounds:")
cm = sorted(cub)[len(cub)//2]
for f in files:
    t = sorted(res[f])[len(res[f])//2]
    print(f"{f.split('/')[-1]:16s} {t:.4f} ms  x cuBLAS {cm/t:.4f}")
