# How cuBLAS (PyTorch, allow_tf32) and a minitir TF32 kernel's PTX round float32 inputs to TF32
# (run 46).  A = a everywhere, B = 1, K = 4096: C = 4096 * tf32(a) exactly (sums of equal powers
# of two).  a = 1 + 2^-11 (a tie): nearest-even 1, ties-away 1 + 2^-10, toward zero 1;
# a = 1 + 2^-11 + 2^-13: nearest 1 + 2^-10, toward zero 1.
# usage: python3 tf32probe.py [file.ptx SMEM]   (kernel "matmul"(A, B, C), 128x256 tiles, 32x8)
import sys, torch
n = 4096
torch.backends.cuda.matmul.allow_tf32 = True
kern = None
if len(sys.argv) > 2:
    import cupy as cp
    kern = cp.RawModule(path=sys.argv[1]).get_function('matmul')
    kern.max_dynamic_shared_size_bytes = int(sys.argv[2])
for name, a in [('tie 1+2^-11', 1 + 2**-11), ('1+2^-11+2^-13', 1 + 2**-11 + 2**-13)]:
    A = torch.full((n, n), a, device='cuda'); B = torch.ones(n, n, device='cuda')
    c = (A @ B)[0, 0].item() / n
    line = f"{name:16s} cuBLAS tf32(a) = 1 + {(c - 1) * 2**10:.4f} * 2^-10"
    if kern is not None:
        C = torch.zeros(n, n, device='cuda')
        kern((n // 256, n // 128, 1), (32, 8, 1),
             (cp.uint64(A.data_ptr()), cp.uint64(B.data_ptr()), cp.uint64(C.data_ptr())),
             shared_mem=int(sys.argv[2]))
        torch.cuda.synchronize()
        line += f"   kernel: 1 + {(C[0, 0].item() / n - 1) * 2**10:.4f} * 2^-10"
    print(line, flush=True)
