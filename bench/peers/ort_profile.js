// ONNX Runtime's own per-node times for one model, to set beside kestrel-bench --profile
// when looking for where a network's gap to ORT lies.
//   node ort_profile.js MODEL.onnx INPUT.npy THREADS LOOPS WARMUP
// Prints one line per node (the median of its kernel time over the timed runs, in ms,
// its op type and name) and their sum. ORT writes its trace to a JSON file in the
// current directory; it is read back and removed.
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');
const ort = require('onnxruntime-node');
const { readNpy } = require('./npy');

function median(v) {
  const s = [...v].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

async function main() {
  const [model, input, threads, loops, warmup] = process.argv.slice(2);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ort_profile-'));
  const session = await ort.InferenceSession.create(model, {
    intraOpNumThreads: Number(threads),
    interOpNumThreads: 1,
    executionMode: 'sequential',
    graphOptimizationLevel: 'all',
    enableProfiling: true,
    profileFilePrefix: path.join(dir, 'ort_profile'),
  });
  const x = readNpy(input);
  const feeds = { [session.inputNames[0]]: new ort.Tensor('float32', x.data, [1, ...x.shape]) };
  for (let i = 0; i < Number(warmup) + Number(loops); ++i) await session.run(feeds);
  // onnxruntime-node's endProfiling() does not return the trace's name: take the newest
  // file with the prefix, in a fresh directory of our own.
  session.endProfiling();
  const file = fs.readdirSync(dir).filter((f) => f.startsWith('ort_profile')).map((f) => path.join(dir, f))[0];
  const events = JSON.parse(fs.readFileSync(file, 'utf8'));
  fs.rmSync(dir, { recursive: true });
  // Per node, one kernel-time event per run in run order; the warm-up runs come first.
  const byNode = new Map();
  for (const e of events) {
    if (e.cat !== 'Node' || !e.name.endsWith('_kernel_time')) continue;
    const name = e.name.slice(0, -'_kernel_time'.length);
    if (!byNode.has(name)) byNode.set(name, { op: e.args.op_name, us: [] });
    byNode.get(name).us.push(e.dur);
  }
  let sum = 0;
  let i = 0;
  for (const [name, n] of byNode) {
    const ms = median(n.us.slice(Number(warmup))) / 1000;
    sum += ms;
    console.log(`${String(i++).padStart(4)}  ${n.op.padEnd(22)} ${ms.toFixed(3).padStart(8)}  ${name}`);
  }
  console.log(`sum of node medians ${sum.toFixed(3)} ms`);
}

main().catch((e) => { console.error('ort_profile: ' + e.message); process.exit(1); });
