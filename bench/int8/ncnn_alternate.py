#!/usr/bin/env python3
"""Kestrel int8 beside ncnn int8 on x86, alternating (bench/int8/NCNN.md).

Usage: ncnn_alternate.py NCNN_BENCHMARK_DIR KESTREL_BENCH [MODEL_DIR]
  NCNN_BENCHMARK_DIR  ncnn's build-x86/benchmark with benchmark/models/*.param copied in
  MODEL_DIR           bench/int8/paired.py's --work (default /tmp/kestrel-int8-bench)
"""
import re
import statistics
import subprocess
import sys

B = sys.argv[1]
K = sys.argv[2]
W = sys.argv[3] if len(sys.argv) > 3 else "/tmp/kestrel-int8-bench"
M = {'mobilenet': f'{W}/mnv1_int8.kst', 'resnet18': f'{W}/resnet18_int8.kst'}
res={}
for r in range(4):
    for net,kst in M.items():
        for t in (1,2):
            o=subprocess.run(['./benchncnn','30',str(t),'0','-1','0',f'param={net}_int8.param','shape=[224,224,3]'],cwd=B,capture_output=True,text=True)
            txt=o.stdout+o.stderr
            m=re.search(r'avg =\s*([0-9.]+)',txt)
            n=float(m.group(1))
            o=subprocess.run([K,kst,'--precision','int8','--threads',str(t),'--loops','100'],capture_output=True,text=True).stdout
            k=float(re.search(r'latency ms\s+min [0-9.]+\s+median ([0-9.]+)',o).group(1))
            res.setdefault((net,t),([],[]))
            res[(net,t)][0].append(k); res[(net,t)][1].append(n)
            print(net,t,r,k,n,flush=True)
for (net,t),(k,n) in res.items():
    print(f'| {net} | {t} | {" ".join("%.2f"%x for x in k)} | {" ".join("%.2f"%x for x in n)} | {statistics.median(k)/statistics.median(n):.2f} |')
