// ONNX Runtime (onnxruntime-node, CPU) latency of one model, as kestrel-bench measures
// Kestrel's: the wall time of one run() per inference after warm-up runs.
//   node ort_bench.js MODEL.onnx INPUT.npy THREADS LOOPS WARMUP
// Prints one JSON line: {"engine": "onnxruntime", "threads", "min_ms", "median_ms", "max_ms"}.
'use strict';
const ort = require('onnxruntime-node');
const { readNpy } = require('./npy');

async function main() {
  const [model, input, threads, loops, warmup] = process.argv.slice(2);
  const session = await ort.InferenceSession.create(model, {
    intraOpNumThreads: Number(threads),
    interOpNumThreads: 1,
    executionMode: 'sequential',
    graphOptimizationLevel: 'all',
  });
  const x = readNpy(input);
  const feeds = { [session.inputNames[0]]: new ort.Tensor('float32', x.data, [1, ...x.shape]) };
  for (let i = 0; i < Number(warmup); ++i) await session.run(feeds);
  const ms = [];
  for (let i = 0; i < Number(loops); ++i) {
    const t0 = process.hrtime.bigint();
    await session.run(feeds);
    ms.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  ms.sort((a, b) => a - b);
  console.log(JSON.stringify({ engine: 'onnxruntime', version: ort.env.versions.common, threads: Number(threads),
    min_ms: ms[0], median_ms: ms[Math.floor(ms.length / 2)], max_ms: ms[ms.length - 1] }));
}

main().catch((e) => { console.error('ort_bench: ' + e.message); process.exit(1); });
