#pragma once
// Definitions of keras/detail/weight_files.hpp that read PyTorch's state_dicts (safetensors)
// through ctflow::nn's layout conversions (ctflow::keras's compiled part; see
// detail/linkage.hpp). Every value is converted and checked before the first weight changes.

#include <algorithm>
#include <optional>

#include <ctflow/ctflow.hpp>  // the conversions are ctflow expressions, evaluated on the CPU
#include <ctflow/io/safetensors.hpp>
#include <ctflow/keras/detail/weight_files.hpp>

namespace ctflow::keras::detail {

namespace torch {

inline constexpr const char* what = "ctflow::keras::load_pytorch_weights";

/// A tensor of the file, or one converted from it, in double (the file's F32 or F64).
struct values {
  std::vector<std::size_t> shape;
  std::vector<double> v;
};

inline values read(const io::safetensors::File& f, const std::string& key) {
  const auto& info = f.info(key);
  values out{std::vector<std::size_t>(info.shape.begin(), info.shape.end()), {}};
  std::size_t n = 1;
  for (auto e : out.shape) n *= e;
  out.v.resize(n);
  if (info.dtype == "F64") f.read_into(key, out.v.data());
  else if (info.dtype == "F32") {
    std::vector<float> tmp(n);
    f.read_into(key, tmp.data());
    std::copy(tmp.begin(), tmp.end(), out.v.begin());
  } else
    throw io_error(std::string(what) + ": " + f.name() + ": tensor '" + key + "' is " + info.dtype + ", not F32 or F64");
  return out;
}

template <std::size_t R>
using dyn_shape = std::conditional_t<R == 2, Shape<dyn, dyn>, std::conditional_t<R == 3, Shape<dyn, dyn, dyn>, Shape<dyn, dyn, dyn, dyn>>>;

/// x laid out as `dims` (as many elements as x has) then rearranged by f (one of ctflow::nn's
/// layout conversions, or a transpose): the values of the expression f(view of x as dims).
template <std::size_t R, class F> values rearranged(const values& x, const dims_t<R>& dims, F&& f) {
  using S = dyn_shape<R>;
  const TensorView<const double, S> view(x.v.data(), dims);
  const Tensor<double, S> t = f(view);
  return {std::vector<std::size_t>(t.dims().begin(), t.dims().end()), std::vector<double>(t.begin(), t.end())};
}
template <std::size_t R> dims_t<R> dims_of(const values& x) {
  dims_t<R> d{};
  std::copy_n(x.shape.begin(), R, d.begin());
  return d;
}

/// A tensor that cannot be what its layer needs: the shape error names the layer, the weight,
/// the tensor and why.
struct malformed {
  const saved_layer& l;
  const saved_layer::weight& w;
  [[noreturn]] void operator()(const std::string& tensor, const values& x, const std::string& why) const {
    throw shape_error(std::string(what) + ": layer " + l.name + " (" + l.class_name + "), weight " + w.name + ": tensor " + tensor + " " +
                      format_dims(x.shape) + ": " + why);
  }
};

/// [out, in] -> [in, out] (Linear's weight as a Dense kernel, an RNN's weights as Keras's).
inline values transposed(const values& x) {
  return rearranged<2>(x, dims_of<2>(x), [](const auto& v) { return transpose(v); });
}
/// Conv1d's [out, in, k] -> Conv1D's [k, in, out].
inline values oiw_to_wio(const values& x) {
  return rearranged<3>(x, dims_of<3>(x), [](const auto& v) { return transpose<2, 1, 0>(v); });
}
/// Conv2d's [out, in, kh, kw] -> Conv2D's [kh, kw, in, out] (and ConvTranspose2d's [in, out,
/// kh, kw] -> Conv2DTranspose's [kh, kw, out, in], the same permutation).
inline values oihw_to_hwio(const values& x) {
  return rearranged<4>(x, dims_of<4>(x), [](const auto& v) { return nn::oihw_to_hwio(v); });
}
/// The channels-first order of the rows of a Linear after a Flatten, as Keras's channels-last
/// one: PyTorch flattens [c, h, w] (or [c, t]), Keras [h, w, c] (or [t, c]). `flat` is the
/// Flatten's input without its batch axis, channels last.
inline values flattened_kernel(const values& x, const std::vector<std::size_t>& flat) {
  const std::size_t out = x.shape[0];
  values k = flat.size() == 3 ? rearranged<4>(x, dims_t<4>{out, flat[2], flat[0], flat[1]}, [](const auto& v) { return nn::oihw_to_hwio(v); })
                              : rearranged<3>(x, dims_t<3>{out, flat[1], flat[0]}, [](const auto& v) { return transpose<2, 1, 0>(v); });
  k.shape = {x.shape[1], out};
  return k;
}

/// The model's layers as PyTorch's modules line up with them: nested models' and custom layers'
/// sub-layers in order, an RNN with its cell (its weights), weightless layers kept.
inline bool is_rnn(const saved_layer& l) { return !l.children.empty() && l.children.front().key == "cell"; }
inline void leaves(const std::vector<saved_layer>& layers, std::vector<const saved_layer*>& out) {
  for (const auto& l : layers) {
    if (l.is_model) leaves(l.children, out);
    else {
      out.push_back(&l);
      if (!is_rnn(l)) leaves(l.children, out);
    }
  }
}
/// The weights a saved layer holds (a recurrent layer's are its cell's).
inline const std::vector<saved_layer::weight>& saved_weights(const saved_layer& l) { return is_rnn(l) ? l.children.front().weights : l.weights; }

/// Where a Dense's input was flattened from channels-first activations in PyTorch: the input of
/// the Flatten before it (weightless layers of flat input in between), without its batch axis,
/// when that input is an image [h, w, c], or a sequence [t, c] made by a Conv1D (PyTorch's
/// Conv1d gives [c, t]; its RNNs and Embedding give [t, c], as Keras). Empty otherwise.
inline std::vector<std::size_t> flattened_from(const std::vector<const saved_layer*>& all, std::size_t dense) {
  std::size_t i = dense;
  while (i > 0 && saved_weights(*all[i - 1]).empty() && all[i - 1]->class_name != "Flatten" && all[i - 1]->input_shape.size() == 2) --i;
  if (i == 0 || all[i - 1]->class_name != "Flatten") return {};
  const std::vector<std::size_t>& in = all[i - 1]->input_shape;
  const std::vector<std::size_t> flat(in.begin() + (in.empty() ? 0 : 1), in.end());
  if (std::find(flat.begin(), flat.end(), std::size_t(dyn)) != flat.end()) return {};
  if (flat.size() == 3) return flat;
  if (flat.size() != 2) return {};
  std::size_t j = i - 1;  // the Flatten; what made its input:
  while (j > 0 && saved_weights(*all[j - 1]).empty() && all[j - 1]->input_shape.size() == 3) --j;
  return j > 0 && all[j - 1]->class_name == "Conv1D" ? flat : std::vector<std::size_t>{};
}

/// The values weight w of layer l (class l.class_name) takes from PyTorch's module(s) m, or
/// nothing where the file lacks a tensor it needs (`missing` names it). `flat`: where the input
/// of a Dense was flattened from (flattened_from).
inline std::optional<values> source(const io::safetensors::File& f, const saved_layer& l, const std::vector<std::size_t>& flat,
                                     const saved_layer::weight& w, const std::vector<std::string>& m, std::string& missing) {
  const malformed bad{l, w};
  const auto key = [&](std::size_t i, const std::string& name) { return m[std::min(i, m.size() - 1)] + "." + name; };
  const auto get = [&](std::size_t i, const std::string& name) -> std::optional<values> {
    if (!f.contains(key(i, name))) {
      missing = key(i, name);
      return std::nullopt;
    }
    return read(f, key(i, name));
  };
  // The file's tensor of rank r converted; other ranks as they are, for the shape check to report.
  const auto ranked = [&](std::optional<values> x, std::size_t r, auto convert) -> std::optional<values> {
    if (!x || x->shape.size() != r) return x;
    return convert(*x);
  };
  const std::string& c = l.class_name;
  if (c == "Dense" && w.name == "kernel")
    return ranked(get(0, "weight"), 2, [&](const values& x) {
      std::size_t n = 1;
      for (auto e : flat) n *= e;
      return !flat.empty() && x.shape[1] == n ? flattened_kernel(x, flat) : transposed(x);
    });
  if (c == "Conv1D" && w.name == "kernel") return ranked(get(0, "weight"), 3, oiw_to_wio);
  if ((c == "Conv2D" || c == "Conv2DTranspose") && w.name == "kernel") return ranked(get(0, "weight"), 4, oihw_to_hwio);
  if ((c == "DepthwiseConv2D" && w.name == "kernel") || (c == "SeparableConv2D" && w.name == "depthwise_kernel"))
    return ranked(get(0, "weight"), 4, [&](const values& x) {
      // [channels * multiplier, 1, kh, kw]: output channel ch * multiplier + j of PyTorch is Keras's (ch, j).
      const std::size_t channels = w.shape.size() == 4 ? w.shape[2] : 0;
      if (x.shape[1] != 1 || channels == 0 || x.shape[0] % channels != 0)
        bad(key(0, "weight"), x, "a depthwise Conv2d's weight is [" + std::to_string(channels) + " * multiplier, 1, kh, kw]");
      return rearranged<4>(x, dims_t<4>{channels, x.shape[0] / channels, x.shape[2], x.shape[3]}, [](const auto& v) { return transpose<2, 3, 0, 1>(v); });
    });
  if (c == "SeparableConv2D" && w.name == "pointwise_kernel") return ranked(get(1, "weight"), 4, oihw_to_hwio);
  if (c == "SeparableConv2D" && w.name == "bias") {
    // The pointwise bias, plus what a depthwise bias becomes through the pointwise filters.
    auto b = get(1, "bias");
    if (!b || !f.contains(key(0, "bias"))) return b;
    const values d = read(f, key(0, "bias")), p = read(f, key(1, "weight"));
    const std::size_t o = b->v.size(), k = d.v.size();
    if (p.v.size() != o * k) bad(key(1, "weight"), p, "does not take the depthwise bias " + format_dims(d.shape) + " to " + format_dims(b->shape));
    for (std::size_t i = 0; i < o; ++i)
      for (std::size_t j = 0; j < k; ++j) b->v[i] += p.v[i * k + j] * d.v[j];
    return b;
  }
  if (c == "BatchNormalization" || c == "LayerNormalization") {
    static const std::pair<const char*, const char*> names[] = {
        {"gamma", "weight"}, {"beta", "bias"}, {"moving_mean", "running_mean"}, {"moving_variance", "running_var"}};
    for (const auto& [keras, pt] : names)
      if (w.name == keras) return get(0, pt);
  }
  if (c == "Embedding" && w.name == "embeddings") return get(0, "weight");
  if (c == "LSTM" || c == "GRU") {
    const bool gru = c == "GRU";
    // PyTorch's gate blocks along axis 0 in Keras's order: LSTM's (i, f, g, o) are Keras's
    // (i, f, c, o); GRU's (r, z, n) become (z, r, h).
    const auto gates = [&](const std::string& name) -> std::optional<values> {
      auto x = get(0, name);
      if (!x) return x;
      const std::size_t blocks = gru ? 3 : 4;
      if (x->shape.empty() || x->shape.size() > 2 || x->shape[0] % blocks != 0)
        bad(key(0, name), *x, std::string("PyTorch's ") + c + " stacks " + std::to_string(blocks) + " gates along its first axis");
      if (gru) {
        const std::size_t block = x->v.size() / 3;
        std::swap_ranges(x->v.begin(), x->v.begin() + std::ptrdiff_t(block), x->v.begin() + std::ptrdiff_t(block));
      }
      return x;
    };
    if (w.name == "kernel") return ranked(gates("weight_ih_l0"), 2, transposed);
    if (w.name == "recurrent_kernel") return ranked(gates("weight_hh_l0"), 2, transposed);
    if (w.name == "bias") {
      auto bi = gates("bias_ih_l0");
      const auto bh = gates("bias_hh_l0");
      if (!bi || !bh) return std::nullopt;
      if (bi->shape.size() != 1 || bh->shape != bi->shape) bad(key(0, "bias_hh_l0"), *bh, "differs from " + key(0, "bias_ih_l0") + " " + format_dims(bi->shape));
      if (!gru) {  // Keras's LSTM has one bias: the sum of PyTorch's two
        for (std::size_t i = 0; i < bi->v.size(); ++i) bi->v[i] += bh->v[i];
        return bi;
      }
      // reset_after: an input bias and a recurrent one, as PyTorch's; without it there is one.
      if (w.shape.size() != 2)
        throw value_error(std::string(what) + ": layer " + l.name + " (GRU): PyTorch's GRU applies its reset gate after the "
                          "recurrent product; the layer needs layers::reset_after<true> (Keras's default)");
      bi->shape = {2, bi->v.size()};
      bi->v.insert(bi->v.end(), bh->v.begin(), bh->v.end());
      return bi;
    }
  }
  return get(0, w.name);  // a custom layer's own weights: by their names, as they are
}

}  // namespace torch

CTFLOW_DECL void load_weights_pytorch(const std::string& path, const std::vector<saved_layer>& layers, const std::vector<std::string>& modules,
                                      const load_options& options) {
  const io::safetensors::File f(path);
  std::vector<const saved_layer*> all;
  torch::leaves(layers, all);
  std::vector<std::size_t> weighted;
  for (std::size_t i = 0; i < all.size(); ++i)
    if (!torch::saved_weights(*all[i]).empty()) weighted.push_back(i);
  if (weighted.size() != modules.size()) {
    std::string names;
    for (std::size_t i : weighted) names += (names.empty() ? "" : ", ") + all[i]->name;
    throw value_error(std::string(torch::what) + ": " + path + ": the model has " + std::to_string(weighted.size()) +
                      " layers with weights (" + names + "), " + std::to_string(modules.size()) + " module names were given");
  }
  std::vector<std::pair<const saved_layer::weight*, torch::values>> plan;
  for (std::size_t k = 0; k < weighted.size(); ++k) {
    const saved_layer& l = *all[weighted[k]];
    std::vector<std::string> m;
    for (std::size_t b = 0, e; b <= modules[k].size(); b = e + 1) {
      e = std::min(modules[k].find('+', b), modules[k].size());
      m.push_back(modules[k].substr(b, e - b));
    }
    const auto& weights = torch::saved_weights(l);
    const bool has_bias = std::any_of(weights.begin(), weights.end(), [](const auto& w) { return w.name == "bias"; });
    if (l.class_name == "SeparableConv2D" && !has_bias && f.contains(m[0] + ".bias") && !options.skip_mismatch)
      throw value_error(std::string(torch::what) + ": " + path + ": layer " + l.name + " (SeparableConv2D) has no bias to hold " + m[0] +
                        ".bias; give it layers::use_bias<true>");
    const std::vector<std::size_t> flat = l.class_name == "Dense" ? torch::flattened_from(all, weighted[k]) : std::vector<std::size_t>{};
    for (const auto& w : weights) {
      std::string missing;
      std::optional<torch::values> x;
      try {
        x = torch::source(f, l, flat, w, m, missing);
      } catch (const shape_error&) {
        if (options.skip_mismatch) continue;
        throw;
      }
      if (!x) {
        if (options.skip_mismatch) continue;
        throw io_error(std::string(torch::what) + ": " + path + ": no tensor '" + missing + "' for layer " + l.name + " (" + l.class_name + "), weight " +
                       w.name);
      }
      if (x->shape != w.shape) {
        if (options.skip_mismatch) continue;
        throw shape_error(std::string(torch::what) + ": " + path + ": layer " + l.name + " (" + l.class_name + "), weight " + w.name + ": module " +
                          modules[k] + " gives " + format_dims(x->shape) + " in Keras's layout, the model's is " + format_dims(w.shape));
      }
      plan.emplace_back(&w, std::move(*x));
    }
  }
  for (const auto& [w, x] : plan) {
    if (w->dtype == 'f') std::copy(x.v.begin(), x.v.end(), static_cast<float*>(w->data));
    else std::copy(x.v.begin(), x.v.end(), static_cast<double*>(w->data));
  }
}

}  // namespace ctflow::keras::detail
