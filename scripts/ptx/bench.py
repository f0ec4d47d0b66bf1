# PTX experiment harness (runs 39-43, docs/performance.md): times minitir Step 9 PTX files against
# cuBLAS (PyTorch) in one process on the GPU machine (CuPy loads the PTX).
# PTX variant harness: times hand-edited minitir PTX kernels against cuBLAS (torch) in one process.
# usage: python3 ptxbench.py DTYPE M N K BM BN SMEM file.ptx...   (kernel "matmul"(A,B,C), block 32x8)
import sys, cupy as cp, torch
dt, M, N, K, BM, BN, smem = sys.argv[1], *map(int, sys.argv[2:8])
files = sys.argv[8:]
tdt = {'tf32': torch.float32, 'bf16': torch.bfloat16, 'f16': torch.float16}[dt]
torch.backends.cuda.matmul.allow_tf32 = (dt == 'tf32')
g = torch.Generator(device='cuda').manual_seed(7)
A = (torch.rand(M, K, device='cuda', generator=g) - 0.5).to(tdt)
B = (torch.rand(K, N, device='cuda', generator=g) - 0.5).to(tdt)
ref = (A.double() @ B.double())
def timeit(f, n=30):
    for _ in range(3): f()
    ts = []
    for _ in range(n):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record(); f(); e.record(); e.synchronize(); ts.append(s.elapsed_time(e))
    ts.sort(); return ts[len(ts)//2]
flop = 2.0 * M * N * K
Cb = torch.empty(M, N, device='cuda', dtype=torch.float32)
tc = timeit(lambda: torch.matmul(A, B, out=None))
print(f"cublas {dt} {tc:.4f} ms {flop/tc/1e9:.1f} TFLOP/s", flush=True)
for f in files:
    try:
        mod = cp.RawModule(path=f); k = mod.get_function('matmul')
        k.max_dynamic_shared_size_bytes = smem
        C = torch.zeros(M, N, device='cuda', dtype=torch.float32)
        grid = ((N + BN - 1) // BN, (M + BM - 1) // BM, 1)
        args = (cp.uint64(A.data_ptr()), cp.uint64(B.data_ptr()), cp.uint64(C.data_ptr()))
        run = lambda: k(grid, (32, 8, 1), args, shared_mem=smem)
        t = timeit(run)
        err = ((C.double() - ref).abs().max() / ref.abs().max()).item()
        print(f"{f:28s} {t:.4f} ms {flop/t/1e9:.1f} TFLOP/s {tc/t:.3f}x cuBLAS maxrelerr {err:.2e}", flush=True)
    except Exception as ex:
        print(f"{f}: error {ex}", flush=True)
