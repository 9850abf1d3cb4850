cd /work/prof
python3 dhatdrive.py 20000 perf record -F 20000 -g -o perf2.data /work/proftarget/release/mcpx serve --config cfg2.json 2>/dev/null
