# PTX experiment: rotate the loop-top "wait; bar; first nld ldmatrix" to the loop's end (above its
# last nmma mma.sync, wait count minus the commits hopped) and once before the loop.
import sys, re
src, dst, nmma, nld = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
L = open(src).read().split('\n')
top = L.index('$L__BB0_1:')
assert 'wait_group' in L[top+1] and 'bar.sync' in L[top+2]
blk = L[top+1:top+3+nld]
assert all('ldmatrix' in l for l in blk[2:])
br = [i for i, l in enumerate(L) if 'bra \t$L__BB0_1' in l][0]
# walk back from the branch over the loop-counter lines, then nmma mma.sync (5 lines each) and commits
j = br - 1
while not L[j].strip().startswith('{') and 'mma.sync' not in L[j]: j -= 1
j = br
cnt = commits = 0
i = br - 1
while cnt < nmma:
    s = L[i].strip()
    if s.startswith('mma.sync'): cnt += 1
    elif s.startswith('cp.async.commit_group'): commits += 1
    i -= 1
ins = i + 1
n = int(re.search(r'wait_group (\d+)', blk[0]).group(1))
end_blk = ['\tcp.async.wait_group %d;' % (n - commits)] + blk[1:]
out = L[:top] + blk + [L[top]] + L[top+3+nld:ins] + end_blk + L[ins:]
open(dst, 'w').write('\n'.join(out))
print(dst, 'rotated, commits hopped', commits, file=sys.stderr)
