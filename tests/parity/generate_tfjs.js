// Writes the TensorFlow.js reference data of the tf.nn parity tests: TensorFlow's own op semantics
// (SAME padding with stride 2 on even sizes, dilations, SAME average pooling over the valid
// elements only) and their gradients.
//
//   npm install @tensorflow/tfjs@4 && node tests/parity/generate_tfjs.js   (NODE_PATH may point
//   at the node_modules holding it)
//
// Each line of data/tfjs_reference.txt: name, 'x', the inputs, 'y', the expected values (float32
// results in decimal). Inputs are x[i] = sin(0.37 i + 0.1) and filters f[i] = cos(0.23 i) / 2,
// in row-major order of the shapes the test names, so the test rebuilds them exactly.
const tf = require("@tensorflow/tfjs");
const fs = require("fs");
const path = require("path");

const seq = (n, f) => Array.from({ length: n }, (_, i) => f(i));
const input = (shape) => tf.tensor(seq(shape.reduce((a, b) => a * b), (i) => Math.sin(0.37 * i + 0.1)), shape);
const filter = (shape) => tf.tensor(seq(shape.reduce((a, b) => a * b), (i) => Math.cos(0.23 * i) / 2), shape);
const lines = [];
const put = (name, t) => lines.push(`${name} x 0 y ${Array.from(t.dataSync()).map((v) => v.toPrecision(9)).join(" ")}`);

// conv2d: [2,6,6,2] * [3,3,2,3], SAME stride 2 (even input: one extra row/column at the bottom/right).
const cases = [
  ["conv_same_s2", [2, 6, 6, 2], [3, 3, 2, 3], 2, "same", 1],
  ["conv_same_s2_k2", [1, 7, 7, 2], [2, 2, 2, 3], 2, "same", 1],
  ["conv_valid_d2", [1, 7, 6, 2], [2, 3, 2, 2], 1, "valid", 2],
  ["conv_same_s1", [1, 5, 4, 3], [3, 3, 3, 2], 1, "same", 1],
];
for (const [name, xs, fs_, s, pad, d] of cases) {
  const x = input(xs), f = filter(fs_);
  const y = tf.conv2d(x, f, s, pad, "NHWC", d);
  put(`tfjs_${name}`, y);
  // Gradients of sum(y * w) with w[i] = (i % 7 - 3) / 4 (tfjs has none for dilations).
  if (d > 1) continue;
  const w = tf.tensor(seq(y.size, (i) => ((i % 7) - 3) / 4), y.shape);
  const [gx, gf] = tf.grads((a, b) => tf.sum(tf.mul(tf.conv2d(a, b, s, pad, "NHWC", d), w)))([x, f]);
  put(`tfjs_${name}_dx`, gx);
  put(`tfjs_${name}_df`, gf);
}

// Pooling over [2,6,6,2]: 3x3 windows, stride 2, SAME and VALID; then gradients as above (the
// test does not use avg_same_dx: tfjs divides by the whole window there, unlike its forward).
const pools = [
  ["max_same", "max", "same"],
  ["avg_same", "avg", "same"],
  ["max_valid", "max", "valid"],
  ["avg_valid", "avg", "valid"],
];
for (const [name, kind, pad] of pools) {
  const x = input([2, 6, 6, 2]);
  const op = (a) => (kind === "max" ? tf.maxPool(a, 3, 2, pad) : tf.avgPool(a, 3, 2, pad));
  const y = op(x);
  put(`tfjs_${name}`, y);
  const w = tf.tensor(seq(y.size, (i) => ((i % 7) - 3) / 4), y.shape);
  put(`tfjs_${name}_dx`, tf.grad((a) => tf.sum(tf.mul(op(a), w)))(x));
}

// The rest of the convolution family, resize and Keras's cross-entropies: the forward result,
// then name_d0, name_d1, ...: the gradients of sum(y * w) with respect to each input in turn.
const record = (name, fn, inputs, grads = true) => {
  const y = fn(...inputs);
  put(`tfjs_${name}`, y);
  if (!grads) return;
  const w = tf.tensor(seq(y.size, (i) => ((i % 7) - 3) / 4), y.shape);
  tf.grads((...a) => tf.sum(tf.mul(fn(...a), w)))(inputs).forEach((g, k) => put(`tfjs_${name}_d${k}`, g));
};
record("conv_explicit", (a, b) => tf.conv2d(a, b, 1, [[0, 0], [1, 2], [0, 1], [0, 0]]), [input([1, 5, 5, 2]), filter([3, 3, 2, 3])]);
record("conv_nchw", (a, b) => tf.conv2d(a, b, 2, "same", "NCHW"), [input([2, 2, 6, 6]), filter([3, 3, 2, 3])], false);
record("conv1d", (a, b) => tf.conv1d(a, b, 2, "same"), [input([2, 9, 2]), filter([3, 2, 4])]);
record("conv_transpose", (a, b) => tf.conv2dTranspose(a, b, [2, 6, 6, 2], 2, "same"), [input([2, 3, 3, 4]), filter([3, 3, 2, 4])]);
record("conv_transpose_valid", (a, b) => tf.conv2dTranspose(a, b, [1, 7, 7, 2], 2, "valid"), [input([1, 3, 3, 3]), filter([3, 3, 2, 3])]);
record("depthwise", (a, b) => tf.depthwiseConv2d(a, b, 2, "same"), [input([2, 6, 6, 2]), filter([3, 3, 2, 2])]);
record("depthwise_valid", (a, b) => tf.depthwiseConv2d(a, b, 1, "valid"), [input([1, 5, 6, 3]), filter([2, 3, 3, 1])]);
record("separable", (a, b, c) => tf.separableConv2d(a, b, c, 1, "same"), [input([1, 6, 5, 2]), filter([3, 3, 2, 2]), filter([1, 1, 4, 3])]);
// The forward passes only: tfjs's resize gradients ignore half-pixel centers (and swap height and
// width); generate.py takes them from PyTorch.
record("resize_bilinear", (a) => tf.image.resizeBilinear(a, [5, 7], false, true), [input([2, 3, 4, 2])], false);
record("resize_bilinear_down", (a) => tf.image.resizeBilinear(a, [2, 3], false, true), [input([1, 5, 7, 2])], false);
record("resize_nearest", (a) => tf.image.resizeNearestNeighbor(a, [5, 7], false, true), [input([2, 3, 4, 2])], false);
// Probabilities p = 0.5 + 0.4 x, targets t = f + 0.5 (inside the clipping bounds, where the
// Keras forms agree).
const prob = (shape) => tf.add(0.5, tf.mul(0.4, input(shape)));
const target = (shape) => tf.add(0.5, filter(shape));
record("categorical_crossentropy", (p) => tf.metrics.categoricalCrossentropy(target([4, 5]), p), [prob([4, 5])]);
record("binary_crossentropy", (p) => tf.metrics.binaryCrossentropy(target([4, 5]), p), [prob([4, 5])]);

const out = path.join(__dirname, "data", "tfjs_reference.txt");
fs.writeFileSync(out + ".tmp", lines.join("\n") + "\n");
fs.renameSync(out + ".tmp", out);
