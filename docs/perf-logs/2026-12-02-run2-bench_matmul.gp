set terminal png size 900,560
set output 'docs/bench-matmul-2026-12-02.png'
set title 'minitir matmul: seed steps against cuBLAS (float32)'
set ylabel 'GFLOPS'
set xlabel 'M x N x K'
set logscale y
set key left top
set grid ytics
set datafile missing 'nan'
set style data linespoints
plot 'docs/perf-logs/2026-12-02-run2-bench_matmul.dat' using 2:xticlabels(1) title 'Step 1', 'docs/perf-logs/2026-12-02-run2-bench_matmul.dat' using 3:xticlabels(1) title 'Step 2', 'docs/perf-logs/2026-12-02-run2-bench_matmul.dat' using 4:xticlabels(1) title 'Step 3', 'docs/perf-logs/2026-12-02-run2-bench_matmul.dat' using 5:xticlabels(1) title 'Step 4', 'docs/perf-logs/2026-12-02-run2-bench_matmul.dat' using 6:xticlabels(1) title 'Step 5', 'docs/perf-logs/2026-12-02-run2-bench_matmul.dat' using 7:xticlabels(1) title 'Step 6', 'docs/perf-logs/2026-12-02-run2-bench_matmul.dat' using 8:xticlabels(1) title 'cuBLAS' lw 3
