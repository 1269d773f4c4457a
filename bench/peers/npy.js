// Reads the .npy inputs that tests/onnx/make_models.py writes, for the ONNX Runtime scripts.
'use strict';
const fs = require('fs');

// Little-endian float32 C-order .npy (what tests/onnx/make_models.py writes).
function readNpy(path) {
  const buf = fs.readFileSync(path);
  if (buf.toString('latin1', 1, 6) !== 'NUMPY') throw new Error(path + ': not a .npy file');
  const major = buf[6];
  const headerLen = major === 1 ? buf.readUInt16LE(8) : buf.readUInt32LE(8);
  const start = major === 1 ? 10 : 12;
  const header = buf.toString('latin1', start, start + headerLen);
  if (!header.includes("'<f4'")) throw new Error(path + ': not float32');
  const shape = header.match(/'shape': \(([^)]*)\)/)[1].split(',').filter((s) => s.trim()).map(Number);
  const data = new Float32Array(buf.buffer.slice(buf.byteOffset + start + headerLen, buf.byteOffset + buf.length));
  return { shape, data };
}

module.exports = { readNpy };
