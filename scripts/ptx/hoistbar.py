# PTX experiment: move "cp.async.wait_group N; bar.sync 0; <step-0 ldmatrix>" above the previous
# k tile's last `nmma` mma.sync (CUTLASS order), lowering N by the commits hopped over.
import sys, re
src, dst, nmma, nld = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
L = open(src).read().split('\n')
# statements: mma.sync spans 5 lines
def stmts(lines):
    out, i = [], 0
    while i < len(lines):
        if lines[i].strip().startswith('mma.sync'):
            out.append(lines[i:i+5]); i += 5
        else:
            out.append([lines[i]]); i += 1
    return out
S = stmts(L)
txt = lambda s: s[0].strip()
i, moved = 0, 0
while i < len(S):
    if txt(S[i]).startswith('cp.async.wait_group') and i + 1 < len(S) and txt(S[i+1]).startswith('bar.sync'):
        # previous statements back to the nmma-th mma, no label/branch/ld/st/bar in between
        j, cnt, commits, ok = i - 1, 0, 0, True
        while j >= 0 and cnt < nmma:
            t = txt(S[j])
            if t.startswith('mma.sync'): cnt += 1
            elif t.startswith('cp.async.commit_group'): commits += 1
            elif t.startswith('cp.async.cg') or t.startswith('add.') or t.startswith('mov.') or t.startswith('cvt.') or t.startswith('mul.') or t.startswith('shl.') or t.startswith('or.') :
                pass
            else:
                ok = False; break
            j -= 1
        # the block to move: wait, bar, then nld ldmatrix
        k = i + 2; lds = 0
        while k < len(S) and lds < nld and txt(S[k]).startswith('ldmatrix'): lds += 1; k += 1
        n = int(re.search(r'wait_group (\d+)', txt(S[i])).group(1))
        if ok and cnt == nmma and lds == nld and n - commits >= 0:
            blk = S[i:k]
            blk[0] = ['\tcp.async.wait_group %d;' % (n - commits)]
            S = S[:j+1] + blk + S[j+1:i] + S[k:]
            moved += 1
            i = k
            continue
    i += 1
open(dst, 'w').write('\n'.join(l for s in S for l in s))
print(dst, 'moved', moved, file=sys.stderr)
