#pragma once
// Definitions of keras/quantize.hpp (ctflow::keras's compiled part; see detail/linkage.hpp): a
// float embedded network made int8 from its activations' ranges, and the int8 network run on the
// host with the kernels the embedded layers run (embedded/layers/quantized.hpp).

#include <algorithm>
#include <cmath>
#include <memory>
#include <cstdint>
#include <string>
#include <vector>

#include <ctflow/core/errors.hpp>
#include <ctflow/core/tensor.hpp>
#include <ctflow/embedded/layers/quantized.hpp>
#include <ctflow/keras/activations.hpp>
#include <ctflow/keras/detail/embedded_header.hpp>
#include <ctflow/keras/quantize.hpp>

namespace ctflow::keras::detail {

namespace quantize_detail {

inline constexpr const char* what = "ctflow::keras::quantize";

/// An int8 tensor's scale and zero point.
struct params {
  double scale = 1;
  int zero = 0;
};

/// TensorFlow Lite's asymmetric int8 parameters of range r (which holds 0).
inline params of_range(value_range r) {
  r.lo = std::min(r.lo, 0.0), r.hi = std::max(r.hi, 0.0);
  if (r.hi - r.lo < 1e-8) r.hi = r.lo + 1e-8;
  params p;
  p.scale = (r.hi - r.lo) / 255.0;
  p.zero = int(std::clamp(std::lround(-128.0 - r.lo / p.scale), -128L, 127L));
  return p;
}

/// m in [2^30, 2^31) and shift with real = m * 2^(shift - 31) (TFLite's QuantizeMultiplier).
inline void multiplier_of(double real, std::int32_t& m, std::int32_t& shift) {
  if (real == 0) {
    m = 0, shift = 0;
    return;
  }
  int e = 0;
  const double fraction = std::frexp(real, &e);
  auto q = std::llround(fraction * double(1ll << 31));
  if (q == (1ll << 31)) q /= 2, ++e;
  if (e < -31) q = 0, e = 0;
  m = std::int32_t(q), shift = std::int32_t(e);
}

/// Reals x through keras::activations' `a`, by name (softmax and log_softmax aside): the
/// activation's own expression, evaluated.
inline std::vector<double> activation_over(const std::string& a, const std::vector<double>& x) {
  namespace act = keras::activations;
  const TensorView<const double, Shape<256>> in(x.data());
  Tensor<double, Shape<256>> y;
  bool found = false;
  const auto apply = [&](const auto& f) {
    if (!found && a == f.name) y = f(in), found = true;
  };
  apply(act::linear), apply(act::relu), apply(act::relu6), apply(act::sigmoid), apply(act::tanh), apply(act::elu), apply(act::selu);
  apply(act::softplus), apply(act::softsign), apply(act::silu), apply(act::swish), apply(act::gelu), apply(act::exponential);
  apply(act::leaky_relu), apply(act::hard_sigmoid), apply(act::mish);
  if (!found) throw value_error(std::string(what) + ": the activation " + a + " has no int8 form");
  return {y.data(), y.data() + 256};
}

/// The extents of an example permuted by Keras's 1-based dims.
inline std::vector<std::size_t> permuted(const std::vector<std::size_t>& dims, const std::vector<std::size_t>& order) {
  std::vector<std::size_t> out;
  for (const std::size_t p : order) {
    if (order.size() != dims.size() || p < 1 || p > dims.size())
      throw value_error(std::string(what) + ": a Permute's dims must reorder the " + std::to_string(dims.size()) + " axes of its input's examples");
    out.push_back(dims[p - 1]);
  }
  return out;
}

inline embedded_layer::weight ints(const std::string& name, std::vector<std::size_t> shape, std::vector<double> values, const char* type) {
  return {name, std::move(shape), std::move(values), type};
}

/// The walk along the float network: the int8 network so far and the current activation's
/// parameters and extents (without the batch).
struct quantizer {
  const embedded_model& f;
  embedded_model q;
  params current;
  std::vector<std::size_t> dims;

  [[noreturn]] void refuse(const embedded_layer& l, const std::string& why) const {
    throw value_error(std::string(what) + ": layer " + l.name + " (" + l.kind + ") " + why);
  }
  embedded_layer& add(const embedded_layer& from, const std::string& kind) {
    embedded_layer l;
    l.kind = kind;
    l.name = from.name;
    q.layers.push_back(std::move(l));
    return q.layers.back();
  }

  /// A Dense or convolution of float layer l (its BatchNormalization `bn` folded in, when given),
  /// its output's parameters from range r.
  void weighted(const embedded_layer& l, const embedded_layer* bn, const value_range& r) {
    const auto& a = l.activation;
    if (a != "linear" && a != "relu" && a != "relu6") refuse(l, "has the activation " + a + ": a fused activation of int8 is linear, relu or relu6 (give others a layer of their own)");
    const auto& kernel = l.weights[0];
    const bool depthwise = l.kind == "DepthwiseConv2D";
    // The output channels: the kernel's last axis (a depthwise kernel's last two: channel c *
    // multiplier + j).
    const std::size_t channels = depthwise ? kernel.shape[2] * kernel.shape[3] : kernel.shape.back();
    const std::size_t per_channel = kernel.values.size() / channels;
    std::vector<double> w = kernel.values, b(channels, 0.0);
    if (l.weights.size() > 1) b = l.weights[1].values;
    if (bn) {
      // y = gamma (x - mean) / sqrt(var + eps) + beta over the layer's output x.
      for (std::size_t o = 0; o < channels; ++o) {
        const double g = bn->weights[0].values[o] / std::sqrt(bn->weights[3].values[o] + bn->epsilon);
        for (std::size_t i = 0; i < per_channel; ++i) w[i * channels + o] *= g;
        b[o] = (b[o] - bn->weights[2].values[o]) * g + bn->weights[1].values[o];
      }
    }
    const params out = of_range(r);
    embedded_layer& e = add(l, l.kind == "Dense" ? "QuantizedDense" : depthwise ? "QuantizedDepthwiseConv2D" : "QuantizedConv2D");
    e.units = l.units, e.kh = l.kh, e.kw = l.kw, e.sh = l.sh, e.sw = l.sw, e.dh = l.dh, e.dw = l.dw, e.padding = l.padding;
    e.in_zero = current.zero, e.out_zero = out.zero;
    e.lo = a == "linear" ? -128 : out.zero;
    e.hi = a == "relu6" ? int(std::min<long>(127, out.zero + std::lround(6 / out.scale))) : 127;
    std::vector<double> wq(w.size()), bq(channels), mq(channels), sq(channels);
    for (std::size_t o = 0; o < channels; ++o) {
      double most = 0;
      for (std::size_t i = 0; i < per_channel; ++i) most = std::max(most, std::abs(w[i * channels + o]));
      const double s = most > 0 ? most / 127 : 1;
      for (std::size_t i = 0; i < per_channel; ++i) wq[i * channels + o] = double(std::clamp(std::lround(w[i * channels + o] / s), -127L, 127L));
      bq[o] = double(std::clamp(std::llround(b[o] / (current.scale * s)), -2147483647LL, 2147483647LL));
      std::int32_t m, shift;
      multiplier_of(current.scale * s / out.scale, m, shift);
      mq[o] = m, sq[o] = shift;
    }
    e.weights = {ints("kernel", kernel.shape, std::move(wq), "std::int8_t"), ints("bias", {channels}, std::move(bq), "std::int32_t"),
                 ints("multiplier", {channels}, std::move(mq), "std::int32_t"), ints("shift", {channels}, std::move(sq), "std::int32_t")};
    if (l.kind == "Dense") {
      dims.back() = l.units;
    } else {
      const auto g = embedded::int8_detail::window_over(1, dims[0], dims[1], dims[2], l.kh, l.kw, l.sh, l.sw, l.dh, l.dw, l.padding == "same");
      dims = {g.oh, g.ow, channels};
    }
    current = out;
  }

  /// An element-wise function of the current activation as a table: fn maps the 256 reals the
  /// input's int8 values stand for to the output's reals, whose parameters come from range r.
  template <class F> void table(const embedded_layer& l, const value_range& r, F&& fn) {
    const params out = of_range(r);
    std::vector<double> reals(256);
    for (int v = -128; v < 128; ++v) reals[std::size_t(v + 128)] = (v - current.zero) * current.scale;
    std::vector<double> t = fn(reals);
    for (double& y : t) y = double(std::clamp(std::lround(y / out.scale) + out.zero, -128L, 127L));
    add(l, "Lookup").weights = {ints("table", {256}, std::move(t), "std::int8_t")};
    current = out;
  }

  embedded_model run(const value_range& input, const std::vector<value_range>& outputs) {
    q.what = f.what;
    q.framework = f.framework, q.name = f.name, q.class_name = f.class_name, q.dtype = "float";
    q.input = f.input;
    dims = f.input;
    if (f.dtype != "float") throw value_error(std::string(what) + ": a network of float32 weights, not " + f.dtype);
    std::size_t k = 0;
    value_range in = input;
    for (; k < f.layers.size() && f.layers[k].kind == "Rescaling"; ++k) {  // float, before the Quantize
      q.layers.push_back(f.layers[k]);
      in = outputs[k];
    }
    current = of_range(in);
    embedded_layer& quantize = add(k < f.layers.size() ? f.layers[k] : f.layers.back(), "Quantize");
    quantize.name = "quantize";
    quantize.scale = current.scale, quantize.out_zero = current.zero;
    bool dequantized = false;
    for (; k < f.layers.size(); ++k) {
      const embedded_layer& l = f.layers[k];
      const value_range& r = outputs[k];
      if (dequantized) refuse(l, "comes after the network's softmax: only the last layer may be a softmax in int8");
      if (l.kind == "Dense" || l.kind == "Conv2D" || l.kind == "DepthwiseConv2D") {
        const bool fold = k + 1 < f.layers.size() && f.layers[k + 1].kind == "BatchNormalization" && l.activation == "linear";
        weighted(l, fold ? &f.layers[k + 1] : nullptr, fold ? outputs[k + 1] : r);
        if (fold) ++k;
      } else if (l.kind == "MaxPooling2D" || l.kind == "AveragePooling2D") {
        embedded_layer& e = add(l, "Quantized" + l.kind);
        e.kh = l.kh, e.kw = l.kw, e.sh = l.sh, e.sw = l.sw, e.padding = l.padding;
        const auto g = embedded::int8_detail::window_over(1, dims[0], dims[1], dims[2], l.kh, l.kw, l.sh, l.sw, 1, 1, l.padding == "same");
        dims = {g.oh, g.ow, dims[2]};
      } else if (l.kind == "GlobalAveragePooling2D") {
        add(l, "QuantizedGlobalAveragePooling2D");
        dims = {dims[2]};
      } else if (l.kind == "Flatten" || l.kind == "Reshape" || l.kind == "Permute") {
        q.layers.push_back(l);  // int8 as the rest: the scale and zero point stay
        if (l.kind == "Flatten") {
          std::size_t n = 1;
          for (auto d : dims) n *= d;
          dims = {n};
        } else if (l.kind == "Reshape") {
          dims = l.target;
        } else {
          dims = permuted(dims, l.permutation);
        }
      } else if (l.kind == "ZeroPadding2D") {
        embedded_layer& e = add(l, "QuantizedZeroPadding2D");
        e.pads = l.pads, e.out_zero = current.zero;
        dims = {dims[0] + l.pads[0] + l.pads[1], dims[1] + l.pads[2] + l.pads[3], dims[2]};
      } else if (l.kind == "Activation" && (l.activation == "softmax" || l.activation == "log_softmax")) {
        embedded_layer& d = add(l, "Dequantize");
        d.name += "_dequantize";
        d.scale = current.scale, d.out_zero = current.zero;
        q.layers.push_back(l);
        dequantized = true;
      } else if (l.kind == "Activation") {
        const std::string a = l.activation;
        table(l, r, [&](const std::vector<double>& x) { return activation_over(a, x); });
      } else if (l.kind == "Rescaling") {
        table(l, r, [&](std::vector<double> x) {
          for (double& v : x) v = v * l.scale + l.offset;
          return x;
        });
      } else {
        refuse(l, l.kind == "BatchNormalization" ? "does not follow a Dense or convolution without activation: only such a one folds into int8"
                                                 : "has no int8 form");
      }
    }
    if (!dequantized) {
      embedded_layer& d = add(f.layers.back(), "Dequantize");
      d.name = "dequantize";
      d.scale = current.scale, d.out_zero = current.zero;
    }
    return std::move(q);
  }
};

/// Network m's int8 kernels on the host (the cpu device's), layer by layer over a batch of
/// examples (its output in fx); the weights as the kernels read them, converted once.
struct runner {
  using linear = embedded::int8_detail::linear_kernel<cpu>;
  const embedded_model& m;
  std::vector<std::vector<std::int8_t>> bytes;   // per layer: its kernel or table
  std::vector<std::vector<std::int32_t>> ints;   // per layer: bias, multiplier and shift, one after another
  std::vector<std::unique_ptr<linear>> linears;  // per Dense and Conv2D layer: its kernel
  std::vector<float> fx;
  std::vector<std::int8_t> qx, qy;
  std::vector<std::int32_t> acc;
  std::vector<std::size_t> dims;  // the current activation's extents (without the batch)

  explicit runner(const embedded_model& network)
      : m(network), bytes(network.layers.size()), ints(network.layers.size()), linears(network.layers.size()) {
    for (std::size_t k = 0; k < m.layers.size(); ++k) {
      const embedded_layer& l = m.layers[k];
      for (const auto& w : l.weights) {
        if (w.type == "std::int8_t") bytes[k].assign(w.values.begin(), w.values.end());
        else if (w.type == "std::int32_t") ints[k].insert(ints[k].end(), w.values.begin(), w.values.end());
      }
      if (l.kind == "QuantizedDense" || l.kind == "QuantizedConv2D") {
        const std::size_t channels = ints[k].size() / 3;
        linears[k] = std::make_unique<linear>(bytes[k].data(), bytes[k].size() / channels, channels, ints[k].data(), requant_of(k),
                                              l.kind == "QuantizedConv2D" ? l.kh : 1);
      }
    }
  }
  embedded::int8_detail::requant requant_of(std::size_t k) const {
    const std::size_t channels = ints[k].size() / 3;
    const std::int32_t* b = ints[k].data();
    const embedded_layer& l = m.layers[k];
    return {b + channels, b + 2 * channels, l.in_zero, l.out_zero, l.lo, l.hi};
  }

  /// Whether layer k, a convolution, and the 2x2 max pool of stride 2 without padding after it
  /// run as one (linear_kernel::conv_max_pool).
  bool pooled_after(std::size_t k) const {
    if (k + 1 >= m.layers.size() || !linears[k]->pools()) return false;
    const embedded_layer& p = m.layers[k + 1];
    return p.kind == "QuantizedMaxPooling2D" && p.kh == 2 && p.kw == 2 && p.sh == 2 && p.sw == 2 && p.padding != "same";
  }

  /// Runs the network on n examples x at once (each layer over all of them: its products one
  /// GEMM of n times the rows); the output in fx, n examples' outputs one after another.
  void run(const float* x, std::size_t n) {
    dims.assign(m.input.begin(), m.input.end());  // (the buffers keep their memory: no allocation once warm)
    const auto size = [&] {
      std::size_t s = 1;
      for (auto d : dims) s *= d;
      return s;
    };
    fx.assign(x, x + n * size());
    for (std::size_t k = 0; k < m.layers.size(); ++k) {
      const embedded_layer& l = m.layers[k];
      if (l.kind == "Rescaling") {
        for (auto& v : fx) v = v * float(l.scale) + float(l.offset);
      } else if (l.kind == "Quantize") {
        qx.resize(fx.size());
        embedded::int8_detail::quantize(fx.data(), qx.data(), fx.size(), float(1.0 / l.scale), l.out_zero);
      } else if (l.kind == "Dequantize") {
        fx.resize(qx.size());
        embedded::int8_detail::dequantize(qx.data(), fx.data(), qx.size(), float(l.scale), l.out_zero);
      } else if (l.kind == "QuantizedDense" || l.kind == "QuantizedConv2D" || l.kind == "QuantizedDepthwiseConv2D") {
        const std::size_t channels = ints[k].size() / 3;
        if (l.kind == "QuantizedDense") {
          const std::size_t in = dims.back(), rows = n * size() / in;
          qy.resize(rows * channels);
          linears[k]->dense(qx.data(), qy.data(), rows);
          dims.back() = channels;
        } else {
          const auto g = embedded::int8_detail::window_over(n, dims[0], dims[1], dims[2], l.kh, l.kw, l.sh, l.sw, l.dh, l.dw, l.padding == "same");
          if (linears[k] && pooled_after(k)) {  // the max pool that follows, in the same pass
            qy.resize(n * (g.oh / 2) * (g.ow / 2) * channels);
            linears[k]->conv_max_pool(qx.data(), qy.data(), g);
            dims = {g.oh / 2, g.ow / 2, channels};
            ++k;
          } else {
            qy.resize(n * g.oh * g.ow * channels);
            if (linears[k]) {
              linears[k]->conv(qx.data(), qy.data(), g);
            } else {  // depthwise
              acc.resize(channels);
              embedded::int8_detail::conv2d(qx.data(), qy.data(), g, channels, true, bytes[k].data(), ints[k].data(), requant_of(k), acc.data());
            }
            dims = {g.oh, g.ow, channels};
          }
        }
        std::swap(qx, qy);
      } else if (l.kind == "QuantizedMaxPooling2D" || l.kind == "QuantizedAveragePooling2D" || l.kind == "QuantizedGlobalAveragePooling2D") {
        const bool global = l.kind == "QuantizedGlobalAveragePooling2D";
        const auto g = global ? embedded::int8_detail::window_over(n, dims[0], dims[1], dims[2], dims[0], dims[1], 1, 1, 1, 1, false)
                              : embedded::int8_detail::window_over(n, dims[0], dims[1], dims[2], l.kh, l.kw, l.sh, l.sw, 1, 1, l.padding == "same");
        qy.resize(n * g.oh * g.ow * g.c);
        embedded::int8_detail::pool2d(qx.data(), qy.data(), g, l.kind == "QuantizedMaxPooling2D");
        if (global) dims = {g.c};
        else dims = {g.oh, g.ow, g.c};
        std::swap(qx, qy);
      } else if (l.kind == "Lookup") {
        embedded::int8_detail::lookup(qx.data(), qx.data(), qx.size(), bytes[k].data());
      } else if (l.kind == "QuantizedZeroPadding2D") {
        const std::size_t out[3] = {dims[0] + l.pads[0] + l.pads[1], dims[1] + l.pads[2] + l.pads[3], dims[2]};
        qy.resize(n * out[0] * out[1] * out[2]);
        embedded::int8_detail::zero_pad(qx.data(), qy.data(), n, dims[0], dims[1], dims[2], l.pads[0], l.pads[1], l.pads[2], l.pads[3], std::int8_t(l.out_zero));
        dims = {out[0], out[1], out[2]};
        std::swap(qx, qy);
      } else if (l.kind == "Flatten") {
        dims = {size()};
      } else if (l.kind == "Reshape") {
        dims = l.target;
      } else if (l.kind == "Permute") {
        // Each example's axes reordered: output element (j_1, ..., j_r) is input element i with
        // i_{p_a} = j_a (p 1-based), walked in the output's order.
        const std::size_t r = dims.size(), count = size();
        std::vector<std::size_t> stride(r, 1), out = permuted(dims, l.permutation), at(r, 0);
        for (std::size_t a = r - 1; a-- > 0;) stride[a] = stride[a + 1] * dims[a + 1];
        qy.resize(qx.size());
        for (std::size_t e = 0; e < n; ++e) {
          const std::int8_t* in = qx.data() + e * count;
          std::int8_t* o = qy.data() + e * count;
          std::fill(at.begin(), at.end(), 0);
          for (std::size_t j = 0; j < count; ++j) {
            std::size_t from = 0;
            for (std::size_t a = 0; a < r; ++a) from += at[a] * stride[l.permutation[a] - 1];
            o[j] = in[from];
            for (std::size_t a = r; a-- > 0 && ++at[a] == out[a];) at[a] = 0;
          }
        }
        dims = out;
        std::swap(qx, qy);
      } else if (l.kind == "Activation" && (l.activation == "softmax" || l.activation == "log_softmax")) {
        // Over the last axis, as embedded::Activation's softmax computes it.
        const std::size_t c = dims.back();
        for (std::size_t r = 0; r < fx.size() / c; ++r) {
          float* row = fx.data() + r * c;
          const float most = *std::max_element(row, row + c);
          float sum = 0;
          for (std::size_t i = 0; i < c; ++i) sum += std::exp(row[i] - most);
          for (std::size_t i = 0; i < c; ++i) row[i] = l.activation == "softmax" ? std::exp(row[i] - most) / sum : row[i] - most - std::log(sum);
        }
      } else {
        throw value_error(std::string(what) + ": layer " + l.name + " (" + l.kind + ") is not a layer of an int8 network");
      }
    }
  }
};

}  // namespace quantize_detail

CTFLOW_DECL embedded_model quantize_network(const embedded_model& m, const value_range& input, const std::vector<value_range>& outputs) {
  if (outputs.size() != m.layers.size()) throw value_error("ctflow::keras::quantize: a range for each layer's output");
  return quantize_detail::quantizer{m, {}, {}, {}}.run(input, outputs);
}

struct int8_runner : quantize_detail::runner {
  std::size_t in = 1;
  explicit int8_runner(const embedded_model& m) : runner(m) {
    for (auto d : m.input) in *= d;
  }
};

CTFLOW_DECL std::shared_ptr<int8_runner> make_int8_runner(const embedded_model& m) { return std::make_shared<int8_runner>(m); }

CTFLOW_DECL std::size_t output_elements(int8_runner& r) {
  const std::vector<float> x(r.in, 0.f);
  r.run(x.data(), 1);  // one example run: its output's elements
  return r.fx.size();
}

CTFLOW_DECL void run_quantized(int8_runner& r, const float* x, float* y, std::size_t n) {
  // 64 examples at a time: the activations of a batch stay in cache.
  for (std::size_t i = 0; i < n; i += 64) {
    const std::size_t count = std::min<std::size_t>(64, n - i);
    r.run(x + i * r.in, count);
    std::copy(r.fx.begin(), r.fx.end(), y + i * (r.fx.size() / count));
  }
}

}  // namespace ctflow::keras::detail
