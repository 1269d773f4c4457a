#!/usr/bin/env node
// tfjs_run.js: runs a TensorFlow.js graph model (model.json + .bin shards) from disk with
// TF.js 4.22.0's pure-JS cpu backend or its WebAssembly backend (XNNPACK), as a reference
// for Kestrel. No native addon (tfjs-node is not used).
//
// Modules come from NODE_PATH, which tools/realmodels.sh prints as TFJS_NODE_MODULES:
//
//   eval "$(tools/realmodels.sh --print)"
//   NODE_PATH=$TFJS_NODE_MODULES node tools/tfjs/tfjs_run.js list $HUMAN_MODELS/blazeface.json
//   NODE_PATH=$TFJS_NODE_MODULES node tools/tfjs/tfjs_run.js run $HUMAN_MODELS/movenet-lightning.json \
//       --input input=in.npy --output Identity=out.npy --output 'a/b/Conv2D:0'=conv.npy [--backend cpu|wasm]
//   NODE_PATH=$TFJS_NODE_MODULES node tools/tfjs/tfjs_run.js bench MODEL.json --input NAME=in.npy \
//       --backend wasm [--threads N] [--loops 30] [--warmup 5]
//
// Modes:
//   list MODEL.json   ops (with counts), node count, placeholders (name, dtype, shape), the
//                     nodes no other node reads (the graph's outputs), the signature if any,
//                     then every node: name, op, inputs.
//   run MODEL.json    --input NAME=in.npy (NAME: the Placeholder node's name; the values are
//                     cast to the placeholder's attr.dtype, e.g. MoveNet's DT_INT32; float to
//                     int truncates toward zero as tf.cast does) and --output NODE=out.npy for
//                     any node, intermediate ones included ("a/b/Conv2D" or "a/b/Conv2D:0"; ":N"
//                     picks output N of a multi-output op such as Unpack or TopKV2; signature
//                     output keys work too). Several of each in one call. Outputs are written
//                     in TF's own (NHWC) shape as little-endian C-order .npy: '<f4' for float
//                     tensors, '<i4' for int32 and bool (0/1) ones.
//   bench MODEL.json  times model.execute on the given inputs (default outputs, or the
//                     --output names) including dataSync of every output, disposing all
//                     tensors each loop; prints one JSON line
//                     {"backend","threads","simd","median_ms","min_ms","mean_ms","loops","warmup","model"}.
//                     --batch TAG[,TAG...] runs once per tag with '{}' in the file names
//                     replaced by the tag (one model load for many inputs).
// Options: --backend cpu (default) | wasm; --threads N and --no-simd (wasm only);
//          --loops N (30), --warmup N (5) (bench only).
// Reads .npy '<f4' and '<i4' (also '<f8', '<i8', '|u1', '|b1', converted), C order,
// header versions 1, 2 and 3. Any error prints one line "tfjs_run: ..." and exits 1.
//
// The wasm backend in plain Node 20 (what actually runs):
//   - SIMD: yes. WASM_HAS_SIMD_SUPPORT validates a SIMD module, which V8 in Node 20 accepts,
//     so tfjs-backend-wasm-simd.wasm is loaded (--no-simd forces the plain build).
//   - Threads: not by default. TF.js sets WASM_HAS_MULTITHREAD_SUPPORT to false whenever
//     IS_NODE (tfjs issue 3830), so the single-threaded SIMD build runs and getThreadsCount()
//     is 1; setThreadsCount() alone changes nothing. Forcing the flag on fails in Node: the
//     Emscripten pthread pool starts worker_threads from blob: URLs, which Node's Worker
//     refuses (ERR_WORKER_PATH), and the module script posted to each worker is a Blob made
//     from the bundled factory's source, which refers to the bundle's require$$N variables.
//   - With --threads N > 1 this file makes the threaded SIMD build work: it sets the flag
//     and calls setThreadsCount(N); while the backend starts, Blob keeps the text it is made
//     from, and URL.createObjectURL writes the worker script and the module script to a
//     temporary folder and returns their paths (the worker script gets a prelude that
//     defines require$$0..4 and commonjsGlobal and points its own URL.createObjectURL at the
//     module script). Once the backend has started, all 8 pool workers (TF.js's
//     PTHREAD_POOL_SIZE, also its thread cap) have loaded both scripts, so the folder is
//     removed and the patches undone.
//     TF.js caps the XNNPACK thread pool at min(N, 8, logical cores / 2) (it assumes two
//     hardware threads per core), so on a 2-vCPU machine any N gives 1 thread; during
//     backend start-up os.cpus() reports at least 2*N entries so that N is honoured.
//     The JSON line's "threads" is getThreadsCount(), what XNNPACK really uses. Outputs of
//     the threaded build are bit-identical to the single-threaded SIMD build's here.
//     The process ends with process.exit once stdout is flushed (the pthread workers would
//     keep it alive).
'use strict';

const fs = require('fs');
const os = require('os');
const path = require('path');

class UsageError extends Error {}

function fail(msg) {
  throw new UsageError(msg);
}

function requireTf(name) {
  try {
    return require(name);
  } catch (e) {
    if (e && e.code === 'MODULE_NOT_FOUND' && String(e.message).includes(name)) {
      fail(`cannot load ${name}: set NODE_PATH to TF.js's node_modules ` +
        '(eval "$(tools/realmodels.sh --print)"; NODE_PATH=$TFJS_NODE_MODULES node tools/tfjs/tfjs_run.js ...)');
    }
    throw e;
  }
}

// ---------------------------------------------------------------- arguments

function parseArgs(argv) {
  const mode = argv[0];
  if (!mode || mode === '-h' || mode === '--help') {
    const lines = fs.readFileSync(__filename, 'utf8').split('\n').slice(1);
    const header = lines.slice(0, lines.findIndex((l) => !l.startsWith('//')));
    process.stdout.write(header.map((l) => l.slice(3)).join('\n') + '\n');
    process.exit(mode ? 0 : 1);
  }
  if (!['run', 'bench', 'list'].includes(mode)) fail(`unknown mode '${mode}' (run, bench, list)`);
  const o = { mode, model: null, inputs: [], outputs: [], backend: 'cpu', threads: null,
    simd: true, loops: 30, warmup: 5 };
  const pair = (flag, v) => {
    if (v === undefined) fail(`${flag} needs NAME=FILE`);
    const i = v.lastIndexOf('=');
    if (i <= 0 || i === v.length - 1) fail(`${flag} '${v}': expected NAME=FILE`);
    return { name: v.slice(0, i), file: v.slice(i + 1) };
  };
  const int = (flag, v, min) => {
    if (v === undefined || !/^\d+$/.test(v) || Number(v) < min) fail(`${flag} needs an integer >= ${min}`);
    return Number(v);
  };
  for (let i = 1; i < argv.length; i++) {
    const a = argv[i];
    switch (a) {
      case '--input': o.inputs.push(pair(a, argv[++i])); break;
      case '--output':
        if (mode === 'bench' && argv[i + 1] !== undefined && !argv[i + 1].includes('=')) {
          o.outputs.push({ name: argv[++i], file: null });
        } else {
          o.outputs.push(pair(a, argv[++i]));
        }
        break;
      case '--backend': {
        const b = argv[++i];
        if (b !== 'cpu' && b !== 'wasm') fail(`--backend '${b}': expected cpu or wasm`);
        o.backend = b;
        break;
      }
      case '--threads': o.threads = int(a, argv[++i], 1); break;
      case '--no-simd': o.simd = false; break;
      case '--loops': o.loops = int(a, argv[++i], 1); break;
      case '--warmup': o.warmup = int(a, argv[++i], 0); break;
      case '--batch': {
        const v = argv[++i];
        if (v === undefined || v === '') fail('--batch needs TAG[,TAG...]');
        o.batch = v.split(',').filter((t) => t !== '');
        break;
      }
      default:
        if (a.startsWith('-')) fail(`unknown option '${a}'`);
        if (o.model !== null) fail(`unexpected argument '${a}' (the model is ${o.model})`);
        o.model = a;
    }
  }
  if (!o.model) fail(`${mode}: give MODEL.json`);
  if (mode === 'run' && o.outputs.length === 0) fail('run: give at least one --output NODE=out.npy');
  if (o.batch && mode !== 'run') fail('--batch is for run');
  if (o.backend !== 'wasm' && (o.threads !== null || !o.simd)) {
    fail('--threads and --no-simd are for --backend wasm');
  }
  if (!o.simd && o.threads !== null && o.threads > 1) fail('--threads > 1 needs SIMD (the threaded build is SIMD)');
  return o;
}

// ---------------------------------------------------------------- .npy

const NPY_TYPES = {
  '<f4': { bytes: 4, read: (dv, o) => dv.getFloat32(o, true), float: true },
  '<i4': { bytes: 4, read: (dv, o) => dv.getInt32(o, true), float: false },
  '<f8': { bytes: 8, read: (dv, o) => dv.getFloat64(o, true), float: true },
  '<i8': { bytes: 8, read: (dv, o) => Number(dv.getBigInt64(o, true)), float: false },
  '|u1': { bytes: 1, read: (dv, o) => dv.getUint8(o), float: false },
  '|b1': { bytes: 1, read: (dv, o) => dv.getUint8(o), float: false },
};

function readNpy(file) {
  let buf;
  try {
    buf = fs.readFileSync(file);
  } catch (e) {
    fail(`cannot read ${file}: ${e.code || e.message}`);
  }
  const bad = (why) => fail(`${file}: bad .npy: ${why}`);
  if (buf.length < 10 || buf.toString('latin1', 0, 6) !== '\x93NUMPY') bad('no \\x93NUMPY magic');
  const major = buf[6];
  let hlen, hstart;
  if (major === 1) {
    hlen = buf.readUInt16LE(8); hstart = 10;
  } else if (major === 2 || major === 3) {
    if (buf.length < 12) bad('truncated header');
    hlen = buf.readUInt32LE(8); hstart = 12;
  } else {
    bad(`unsupported version ${major}.${buf[7]}`);
  }
  if (hstart + hlen > buf.length) bad('truncated header');
  const header = buf.toString(major === 3 ? 'utf8' : 'latin1', hstart, hstart + hlen);
  const descr = /'descr'\s*:\s*'([^']*)'/.exec(header);
  const fortran = /'fortran_order'\s*:\s*(True|False)/.exec(header);
  const shapeM = /'shape'\s*:\s*\(([^)]*)\)/.exec(header);
  if (!descr || !fortran || !shapeM) bad(`header without descr, fortran_order or shape: ${header.trim()}`);
  if (fortran[1] !== 'False') bad('Fortran order (write it C-ordered, e.g. np.ascontiguousarray)');
  const type = NPY_TYPES[descr[1] === '<u1' ? '|u1' : descr[1]];
  if (!type) bad(`dtype '${descr[1]}' (float32 '<f4' or int32 '<i4' expected)`);
  const shape = shapeM[1].split(',').map((s) => s.trim()).filter((s) => s !== '').map((s) => {
    if (!/^\d+$/.test(s)) bad(`shape entry '${s}'`);
    return Number(s);
  });
  const count = shape.reduce((a, b) => a * b, 1);
  const dataStart = hstart + hlen;
  if (buf.length - dataStart !== count * type.bytes) {
    bad(`shape (${shape.join(', ')}) of ${descr[1]} needs ${count * type.bytes} data bytes, file has ${buf.length - dataStart}`);
  }
  const dv = new DataView(buf.buffer, buf.byteOffset + dataStart, count * type.bytes);
  const values = new Float64Array(count);
  for (let i = 0; i < count; i++) values[i] = type.read(dv, i * type.bytes);
  return { shape, values, descr: descr[1], float: type.float };
}

function writeNpy(file, shape, data, descr) {
  const shapeStr = shape.length === 0 ? '()' : shape.length === 1 ? `(${shape[0]},)` : `(${shape.join(', ')})`;
  let header = `{'descr': '${descr}', 'fortran_order': False, 'shape': ${shapeStr}, }`;
  const total = 10 + header.length + 1;
  header += ' '.repeat((64 - (total % 64)) % 64) + '\n';
  const pre = Buffer.alloc(10);
  pre.write('\x93NUMPY', 0, 'latin1');
  pre[6] = 1; pre[7] = 0;
  pre.writeUInt16LE(header.length, 8);
  const body = Buffer.alloc(data.length * 4);
  if (descr === '<f4') {
    for (let i = 0; i < data.length; i++) body.writeFloatLE(data[i], i * 4);
  } else {
    for (let i = 0; i < data.length; i++) body.writeInt32LE(data[i], i * 4);
  }
  try {
    fs.writeFileSync(file, Buffer.concat([pre, Buffer.from(header, 'latin1'), body]));
  } catch (e) {
    fail(`cannot write ${file}: ${e.code || e.message}`);
  }
}

// ---------------------------------------------------------------- model files

function readModelJson(file) {
  let text;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (e) {
    fail(`cannot read ${file}: ${e.code || e.message}`);
  }
  let json;
  try {
    json = JSON.parse(text);
  } catch (e) {
    fail(`${file}: not JSON (${e.message})`);
  }
  if (!json || !json.modelTopology || !Array.isArray(json.modelTopology.node)) {
    fail(`${file}: not a TF.js graph model (no modelTopology.node)`);
  }
  if (!Array.isArray(json.weightsManifest)) fail(`${file}: no weightsManifest`);
  return json;
}

// An IOHandler whose load() gives the artifacts: the manifest's weight specs in order and
// its .bin shards concatenated in the same order, as one ArrayBuffer.
function fileHandler(file, json) {
  return {
    load: async () => {
      const dir = path.dirname(file);
      const weightSpecs = [];
      const shards = [];
      for (const group of json.weightsManifest) {
        weightSpecs.push(...group.weights);
        for (const p of group.paths) {
          const shard = path.join(dir, p);
          try {
            shards.push(fs.readFileSync(shard));
          } catch (e) {
            fail(`cannot read weight shard ${shard}: ${e.code || e.message}`);
          }
        }
      }
      const all = Buffer.concat(shards);
      const weightData = all.buffer.slice(all.byteOffset, all.byteOffset + all.byteLength);
      const artifacts = {
        modelTopology: json.modelTopology,
        weightSpecs,
        weightData,
        format: json.format,
        generatedBy: json.generatedBy,
        convertedBy: json.convertedBy,
      };
      if (json.signature) artifacts.signature = json.signature;
      if (json.userDefinedMetadata) artifacts.userDefinedMetadata = json.userDefinedMetadata;
      if (json.modelInitializer) artifacts.modelInitializer = json.modelInitializer;
      if (json.initializerSignature) artifacts.initializerSignature = json.initializerSignature;
      return artifacts;
    },
  };
}

const TF_DTYPES = { DT_FLOAT: 'float32', DT_INT32: 'int32', DT_BOOL: 'bool', DT_HALF: 'float32',
  DT_DOUBLE: 'float32', DT_INT64: 'int32', DT_INT16: 'int32', DT_INT8: 'int32', DT_UINT8: 'int32',
  DT_STRING: 'string', DT_COMPLEX64: 'complex64' };

function placeholderInfo(node) {
  const attr = node.attr || {};
  const tfType = (attr.dtype && attr.dtype.type) || 'DT_FLOAT';
  let shape = null;
  if (attr.shape && attr.shape.shape) {
    const s = attr.shape.shape;
    shape = s.unknownRank ? null : (s.dim || []).map((d) => Number(d.size));
  }
  return { tfType, dtype: TF_DTYPES[tfType] || 'unknown', shape };
}

function splitName(name) {
  const m = /^(.*):(\d+)$/.exec(name);
  return m ? { node: m[1], index: Number(m[2]) } : { node: name, index: 0 };
}

function graphOutputs(nodes) {
  const read = new Set();
  for (const n of nodes) {
    for (const i of n.input || []) read.add(splitName(i.replace(/^\^/, '')).node);
  }
  return nodes.filter((n) => !read.has(n.name) && n.op !== 'Const' && n.op !== 'NoOp').map((n) => n.name);
}

// ---------------------------------------------------------------- list

function list(o) {
  const json = readModelJson(o.model);
  const nodes = json.modelTopology.node;
  const ops = new Map();
  for (const n of nodes) ops.set(n.op, (ops.get(n.op) || 0) + 1);
  const out = [];
  out.push(`model: ${o.model}`);
  out.push(`format: ${json.format || '?'}  generatedBy: ${json.generatedBy || '?'}  convertedBy: ${json.convertedBy || '?'}`);
  out.push(`nodes: ${nodes.length}`);
  const fns = (json.modelTopology.library && json.modelTopology.library.function) || [];
  if (fns.length) out.push(`library functions: ${fns.length} (control flow; run uses executeAsync if needed)`);
  out.push(`ops (${ops.size}): ` + [...ops.entries()].sort((a, b) => b[1] - a[1]).map(([k, v]) => `${k} ${v}`).join(', '));
  for (const n of nodes.filter((x) => x.op === 'Placeholder')) {
    const p = placeholderInfo(n);
    out.push(`placeholder: ${n.name}  ${p.tfType} (${p.dtype})  shape ${p.shape ? '[' + p.shape.join(',') + ']' : 'unknown'}`);
  }
  out.push(`graph outputs (read by no node): ${graphOutputs(nodes).join(', ')}`);
  if (json.signature) out.push(`signature: ${JSON.stringify(json.signature)}`);
  const q = new Map();
  for (const g of json.weightsManifest) {
    for (const w of g.weights) {
      const k = w.quantization ? `${w.quantization.dtype} (quantized ${w.quantization.original_dtype || w.dtype})` : w.dtype;
      q.set(k, (q.get(k) || 0) + 1);
    }
  }
  out.push(`weights: ${[...q.entries()].map(([k, v]) => `${v} ${k}`).join(', ')}; shards: ` +
    json.weightsManifest.map((g) => g.paths.join(' ')).join(' '));
  out.push('node\top\tinputs');
  for (const n of nodes) out.push(`${n.name}\t${n.op}\t${(n.input || []).join(', ')}`);
  process.stdout.write(out.join('\n') + '\n');
}

// ---------------------------------------------------------------- backends

// The wasm backend's threaded build in Node (see the top of this file).
function enableWasmThreads(threads) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kestrel-tfjs-wasm-'));
  const removeDir = () => fs.rmSync(dir, { recursive: true, force: true });
  process.on('exit', removeDir);
  let mainScript = null;
  let n = 0;
  const NodeBlob = globalThis.Blob;
  globalThis.Blob = class KeptTextBlob extends NodeBlob {
    constructor(parts, options) {
      super(parts, options);
      this.keptText = parts.every((p) => typeof p === 'string') ? parts.join('') : null;
      if (this.keptText !== null && this.keptText.startsWith('var WasmBackendModuleThreadedSimd')) {
        // The bundled factory's source, run by importScripts in each worker: give it the
        // bundle-level names it refers to.
        mainScript = path.join(dir, 'module.cjs');
        fs.writeFileSync(mainScript, "var require$$0 = require('fs'), require$$1 = require('path'), " +
          "require$$3 = require('perf_hooks'), require$$4 = require('os'), commonjsGlobal = globalThis;\n" +
          this.keptText);
      }
    }
  };
  const createObjectURL = URL.createObjectURL;
  URL.createObjectURL = (obj) => {
    if (obj && typeof obj.keptText === 'string') {
      if (mainScript === null) throw new Error('wasm threads: the module script was not seen before the worker script');
      const worker = path.join(dir, `worker${n++}.cjs`);
      fs.writeFileSync(worker, `URL.createObjectURL = () => ${JSON.stringify(mainScript)}; ` +
        'URL.revokeObjectURL = () => {};\n' + obj.keptText);
      return worker;
    }
    return createObjectURL(obj);
  };
  // TF.js uses min(N, 8, logical cores / 2) threads.
  const cpus = os.cpus;
  os.cpus = () => {
    const c = cpus();
    while (c.length < 2 * threads) c.push(c[0] || { model: 'virtual', speed: 0, times: {} });
    return c;
  };
  // Once the backend has started, the pool's 8 workers (TF.js's PTHREAD_POOL_SIZE, also its
  // thread cap) have loaded both scripts: the folder can go and the patches be undone.
  return () => {
    os.cpus = cpus;
    globalThis.Blob = NodeBlob;
    URL.createObjectURL = createObjectURL;
    removeDir();
  };
}

async function setupBackend(o) {
  // The cpu backend's first write advises installing tfjs-node: not wanted here (no native
  // addon), so only that warning is dropped.
  const warn = console.warn;
  console.warn = (...args) => {
    if (!String(args[0]).includes('looks like you are running TensorFlow.js in Node.js')) warn(...args);
  };
  const tf = requireTf('@tensorflow/tfjs-core');
  requireTf('@tensorflow/tfjs-backend-cpu');
  const info = { backend: o.backend, threads: 1, simd: null };
  if (o.backend === 'cpu') {
    if (!(await tf.setBackend('cpu'))) fail('the cpu backend did not start');
    return { tf, info };
  }
  const wasm = requireTf('@tensorflow/tfjs-backend-wasm');
  const distDir = path.join(path.dirname(require.resolve('@tensorflow/tfjs-backend-wasm/package.json')), 'dist') + path.sep;
  wasm.setWasmPaths(distDir);
  if (!o.simd) tf.env().set('WASM_HAS_SIMD_SUPPORT', false);
  const threads = o.threads === null ? 1 : o.threads;
  let restore = () => {};
  if (threads > 1) {
    tf.env().set('WASM_HAS_MULTITHREAD_SUPPORT', true);
    restore = enableWasmThreads(threads);
  }
  wasm.setThreadsCount(threads);
  let ok;
  try {
    ok = await tf.setBackend('wasm');
  } finally {
    restore();
  }
  if (!ok || tf.getBackend() !== 'wasm') fail('the wasm backend did not start (see the messages above)');
  info.simd = Boolean(await tf.env().getAsync('WASM_HAS_SIMD_SUPPORT'));
  info.threads = wasm.getThreadsCount();
  info.threaded_build = threads > 1;
  if (threads > 1 && info.threads !== threads) {
    process.stderr.write(`tfjs_run: note: asked for ${threads} threads, XNNPACK uses ${info.threads} (TF.js caps at 8)\n`);
  }
  return { tf, info };
}

// ---------------------------------------------------------------- run / bench

async function loadModel(o) {
  const json = readModelJson(o.model);
  const nodes = json.modelTopology.node;
  const byName = new Map(nodes.map((n) => [n.name, n]));
  const sigOut = (json.signature && json.signature.outputs) || {};
  const sigIn = (json.signature && json.signature.inputs) || {};
  // Check names before the (slow) load so that a typo fails fast with a clear message.
  for (const out of o.outputs) {
    const { node } = splitName(out.name);
    if (!byName.has(node) && !(out.name in sigOut)) {
      fail(`${o.model}: no node named '${node}' (tfjs_run.js list ${o.model} shows the names)`);
    }
  }
  const placeholders = nodes.filter((n) => n.op === 'Placeholder');
  const feedsSpec = [];
  const seen = new Set();
  for (const inp of o.inputs) {
    let node = byName.get(splitName(inp.name).node);
    if (!node && sigIn[inp.name]) node = byName.get(splitName(sigIn[inp.name].name).node);
    if (!node) fail(`${o.model}: no node named '${inp.name}' (placeholders: ${placeholders.map((p) => p.name).join(', ')})`);
    if (node.op !== 'Placeholder') fail(`${o.model}: '${inp.name}' is a ${node.op}, not a Placeholder (placeholders: ${placeholders.map((p) => p.name).join(', ')})`);
    if (seen.has(node.name)) fail(`input '${node.name}' given twice`);
    seen.add(node.name);
    feedsSpec.push({ node, file: inp.file, info: placeholderInfo(node) });
  }
  const missing = placeholders.filter((p) => !seen.has(p.name));
  if (missing.length) {
    fail(`${o.model}: no --input for placeholder(s) ${missing.map((p) => `${p.name} (${placeholderInfo(p).tfType} ` +
      `[${placeholderInfo(p).shape}])`).join(', ')}`);
  }
  for (const out of o.outputs) {
    if (out.file !== null) {
      const dir = path.dirname(path.resolve(out.file));
      if (!fs.existsSync(dir)) fail(`cannot write ${out.file}: no folder ${dir}`);
    }
  }
  // Read the inputs before starting the backend.
  const arrays = feedsSpec.map((f) => {
    const a = readNpy(f.file);
    const { dtype, shape } = f.info;
    if (dtype !== 'float32' && dtype !== 'int32' && dtype !== 'bool') fail(`placeholder ${f.node.name}: dtype ${f.info.tfType} not supported`);
    if (shape && (shape.length !== a.shape.length || shape.some((d, i) => d >= 0 && d !== a.shape[i]))) {
      fail(`${f.file}: shape [${a.shape}] does not fit placeholder ${f.node.name} [${shape}] (-1: any)`);
    }
    let values;
    if (dtype === 'float32') values = Float32Array.from(a.values);
    else if (dtype === 'int32') values = Int32Array.from(a.values, (v) => Math.trunc(v));
    else values = Uint8Array.from(a.values, (v) => (v !== 0 ? 1 : 0));
    return { name: f.node.name, shape: a.shape, dtype, values, from: a.descr };
  });
  return { json, arrays };
}

async function buildModel(o, tf, json) {
  const tfconv = requireTf('@tensorflow/tfjs-converter');
  return tfconv.loadGraphModel(fileHandler(o.model, json));
}

function makeFeeds(tf, arrays) {
  const feeds = {};
  for (const a of arrays) feeds[a.name] = tf.tensor(a.values, a.shape, a.dtype);
  return feeds;
}

let useAsync = false;
async function execute(model, feeds, names) {
  if (!useAsync) {
    try {
      return model.execute(feeds, names);
    } catch (e) {
      if (!/executeAsync/.test(String(e && e.message))) throw e;
      useAsync = true;
    }
  }
  return model.executeAsync(feeds, names);
}

function asArray(r) {
  return Array.isArray(r) ? r : [r];
}

// --batch: the file names with '{}' replaced by one tag.
function withTag(o, tag) {
  const sub = (f) => (f === null ? f : f.split('{}').join(tag));
  return { ...o, inputs: o.inputs.map((x) => ({ ...x, file: sub(x.file) })),
    outputs: o.outputs.map((x) => ({ ...x, file: sub(x.file) })) };
}

// One model load, then one execute per --batch tag (or just one).
async function run(o) {
  let tf = null;
  let model = null;
  for (const tag of o.batch || [null]) {
    const ot = tag === null ? o : withTag(o, tag);
    const { json, arrays } = await loadModel(ot);
    if (!model) {
      ({ tf } = await setupBackend(o));
      model = await buildModel(o, tf, json);
    }
    await runOnce(ot, tf, model, arrays);
  }
}

async function runOnce(o, tf, model, arrays) {
  const feeds = makeFeeds(tf, arrays);
  const names = o.outputs.map((x) => x.name);
  const result = asArray(await execute(model, feeds, names));
  if (result.length !== names.length) fail(`asked for ${names.length} outputs, got ${result.length}`);
  for (let i = 0; i < names.length; i++) {
    const t = result[i];
    if (!t || typeof t.dtype !== 'string') {
      fail(`${names[i]}: no such output (the node has fewer outputs than its ':N' asks)`);
    }
    let descr;
    if (t.dtype === 'float32') descr = '<f4';
    else if (t.dtype === 'int32' || t.dtype === 'bool') descr = '<i4';
    else fail(`output ${names[i]}: dtype ${t.dtype} cannot be written as .npy here`);
    const data = await t.data();
    writeNpy(o.outputs[i].file, t.shape, data, descr);
    process.stderr.write(`${names[i]} -> ${o.outputs[i].file}  ${t.dtype} [${t.shape.join(',')}]\n`);
  }
  tf.dispose(result);
  tf.dispose(Object.values(feeds));
}

async function bench(o) {
  const { json, arrays } = await loadModel(o);
  const { tf, info } = await setupBackend(o);
  const model = await buildModel(o, tf, json);
  const names = o.outputs.length ? o.outputs.map((x) => x.name) : undefined;
  const once = async () => {
    const feeds = makeFeeds(tf, arrays);
    const t0 = performance.now();
    const result = asArray(await execute(model, feeds, names));
    for (const t of result) t.dataSync();
    const ms = performance.now() - t0;
    tf.dispose(result);
    tf.dispose(Object.values(feeds));
    return ms;
  };
  for (let i = 0; i < o.warmup; i++) await once();
  const times = [];
  for (let i = 0; i < o.loops; i++) times.push(await once());
  const s = [...times].sort((a, b) => a - b);
  const median = s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
  const r3 = (x) => Math.round(x * 1000) / 1000;
  const line = {
    backend: info.backend,
    threads: info.threads,
    simd: info.simd,
    median_ms: r3(median),
    min_ms: r3(s[0]),
    mean_ms: r3(times.reduce((a, b) => a + b, 0) / times.length),
    loops: o.loops,
    warmup: o.warmup,
    model: path.basename(o.model),
  };
  process.stdout.write(JSON.stringify(line) + '\n');
}

async function main() {
  const o = parseArgs(process.argv.slice(2));
  if (o.mode === 'list') list(o);
  else if (o.mode === 'run') await run(o);
  else await bench(o);
}

// process.exit, not a natural end: the wasm backend's pthread workers would keep the process
// alive. Writes to a pipe are asynchronous, so exit only once stdout and stderr are flushed.
function exit(code) {
  process.stdout.write('', () => process.stderr.write('', () => process.exit(code)));
}

main().then(() => exit(0), (e) => {
  const msg = e instanceof UsageError ? e.message : `${(e && e.message) || e}`;
  process.stderr.write(`tfjs_run: ${String(msg).replace(/\s*\n\s*/g, ' ').trim()}\n`);
  if (process.env.TFJS_RUN_DEBUG && e && e.stack) process.stderr.write(e.stack + '\n');
  exit(1);
});
