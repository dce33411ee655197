#pragma once
// Definitions of keras/import.hpp's ONNX half (ctflow::keras's compiled part; see
// detail/linkage.hpp): an ONNX model's graph (nodes over one NCHW, [N, T, F] or [N, features]
// input: a chain, or branches joined by Add, Sub, Mul and Concat) read into an embedded network,
// channels last: each convolution's kernel transposed to
// Keras's [kh, kw, in, out], a Flatten of channels-first data carried into the next Dense's rows,
// explicit paddings made ZeroPadding2D or SAME where they are TensorFlow's, Gemm's alpha and beta
// and a MatMul's Add folded into Dense, and LSTM and GRU nodes over ONNX's time-first sequences
// (as PyTorch's exporter writes them: a Transpose before, a Squeeze and a Transpose after, their
// zero initial states built from the input's shape) made Keras's batch-first LSTM and GRU.

#include <algorithm>
#include <numeric>
#include <array>
#include <bit>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <ctflow/core/errors.hpp>
#include <ctflow/detail/file.hpp>
#include <ctflow/detail/protobuf.hpp>
#include <ctflow/keras/detail/embedded_header.hpp>
#include <ctflow/keras/import.hpp>

namespace ctflow::keras::detail {

namespace onnx_detail {

namespace pb = ctflow::detail::pb;

inline constexpr const char* what = "ctflow::keras::import_header";

[[noreturn]] inline void fail(const std::string& file, const std::string& why) { throw io_error(std::string(what) + ": " + file + ": " + why); }

/// A TensorProto: its name, extents and values (floats and integers as doubles); values kept in
/// an external file (ONNX's external data, as PyTorch's exporter saves them by default) are read
/// after the graph, from `location` (relative to the model's directory) at `offset`.
struct tensor {
  std::string name;
  std::vector<std::int64_t> dims;
  std::vector<double> values;
  std::int64_t type = 0;
  bool external = false;
  std::string location;
  std::uint64_t offset = 0, length = std::uint64_t(-1);  // length -1: to the file's end
  std::size_t count() const {
    std::size_t n = 1;
    for (auto d : dims) n *= std::size_t(d);
    return n;
  }
};

/// An AttributeProto: the fields a node's settings use.
struct attribute {
  std::string name, s;
  double f = 0;
  std::int64_t i = 0;
  std::vector<std::int64_t> ints;
  std::vector<double> floats;
  std::vector<std::string> strings;
  tensor t;
  bool has_t = false;
};

struct node {
  std::string name, op, domain;
  std::vector<std::string> inputs, outputs;
  std::vector<attribute> attributes;
  /// Its name in messages and in the network: its own, or its first output's.
  std::string label() const { return !name.empty() ? name : outputs.empty() ? std::string("?") : outputs[0]; }
  const attribute* find(std::string_view n) const {
    for (const auto& a : attributes)
      if (a.name == n) return &a;
    return nullptr;
  }
  std::int64_t i(std::string_view n, std::int64_t fallback) const { const auto* a = find(n); return a ? a->i : fallback; }
  double f(std::string_view n, double fallback) const { const auto* a = find(n); return a ? a->f : fallback; }
  std::string s(std::string_view n, std::string fallback) const { const auto* a = find(n); return a ? a->s : fallback; }
  std::vector<std::int64_t> ints(std::string_view n, std::vector<std::int64_t> fallback) const {
    const auto* a = find(n);
    return a ? a->ints : fallback;
  }
};

/// A graph input or output: its name, element type and extents (-1 a symbolic one).
struct value_info {
  std::string name;
  std::int64_t elem_type = 0;
  std::vector<std::int64_t> dims;
};

struct graph {
  std::vector<node> nodes;
  std::vector<tensor> initializers;
  std::vector<value_info> inputs, outputs;
  std::string name;
};

/// A repeated int64 field, packed or not.
inline void int64s(pb::reader& r, pb::wire w, std::vector<std::int64_t>& out) {
  if (w == pb::length_type) {
    auto s = r.sub();
    while (!s.done()) out.push_back(std::int64_t(s.varint()));
  } else if (w == pb::varint_type) {
    out.push_back(std::int64_t(r.varint()));
  } else {
    r.fail("an int64 list of wire type " + std::to_string(unsigned(w)));
  }
}

/// A repeated float field, packed or not.
inline void floats(pb::reader& r, pb::wire w, std::vector<double>& out) {
  if (w == pb::length_type) {
    const auto b = r.bytes();
    if (b.size() % 4) r.fail("a packed float list of " + std::to_string(b.size()) + " bytes");
    for (std::size_t k = 0; k < b.size(); k += 4) {
      std::uint32_t u;
      std::memcpy(&u, b.data() + k, 4);
      out.push_back(std::bit_cast<float>(u));
    }
  } else if (w == pb::fixed32_type) {
    out.push_back(std::bit_cast<float>(r.fixed32()));
  } else {
    r.fail("a float list of wire type " + std::to_string(unsigned(w)));
  }
}

inline std::string text(pb::reader& r, pb::wire w) {
  if (w != pb::length_type) r.fail("a string of wire type " + std::to_string(unsigned(w)));
  return std::string(r.bytes());
}
inline std::uint64_t number(pb::reader& r, pb::wire w) {
  if (w != pb::varint_type) r.fail("an integer of wire type " + std::to_string(unsigned(w)));
  return r.varint();
}

/// Values little-endian in raw_data, of element type `type` (ONNX's TensorProto.DataType).
inline void raw_values(pb::reader& r, std::string_view b, std::int64_t type, std::vector<double>& out) {
  const auto read = [&]<class U>(U) {
    if (b.size() % sizeof(U)) r.fail("raw_data of " + std::to_string(b.size()) + " bytes for " + std::to_string(sizeof(U)) + "-byte values");
    out.resize(b.size() / sizeof(U));
    for (std::size_t k = 0; k < out.size(); ++k) {
      U v;
      std::memcpy(&v, b.data() + k * sizeof(U), sizeof(U));
      out[k] = double(v);
    }
  };
  switch (type) {
    case 1: read(float{}); break;
    case 11: read(double{}); break;
    case 6: read(std::int32_t{}); break;
    case 7: read(std::int64_t{}); break;
    default: r.fail("raw_data of element type " + std::to_string(type) + " (the importer reads float, double, int32 and int64)");
  }
}

/// A StringStringEntryProto of a tensor's external_data: location, offset or length.
inline void external_entry(pb::reader r, tensor& t) {
  std::string key, value;
  std::uint32_t field;
  pb::wire w;
  while (r.next(field, w)) {
    if (field == 1) key = text(r, w);
    else if (field == 2) value = text(r, w);
    else r.skip(w);
  }
  if (key == "location") {
    t.location = value;
  } else if (key == "offset" || key == "length") {
    char* end = nullptr;
    const unsigned long long v = std::strtoull(value.c_str(), &end, 10);
    if (value.empty() || *end || value[0] == '-') r.fail("tensor " + t.name + " has the external " + key + " \"" + value + "\"");
    (key == "offset" ? t.offset : t.length) = v;
  }
}

inline tensor read_tensor(pb::reader r) {
  tensor t;
  std::int64_t& type = t.type;
  std::string_view raw;
  bool has_raw = false;
  bool& external = t.external;
  std::uint32_t field;
  pb::wire w;
  while (r.next(field, w)) {
    switch (field) {
      case 1: int64s(r, w, t.dims); break;
      case 2: type = std::int64_t(number(r, w)); break;
      case 4: floats(r, w, t.values); break;
      case 5:
      case 7: {
        std::vector<std::int64_t> v;
        int64s(r, w, v);
        for (auto x : v) t.values.push_back(field == 5 ? double(std::int32_t(x)) : double(x));
        break;
      }
      case 8: t.name = text(r, w); break;
      case 9:
        if (w != pb::length_type) r.fail("raw_data of wire type " + std::to_string(unsigned(w)));
        raw = r.bytes(), has_raw = true;
        break;
      case 10:
        if (w == pb::length_type) {
          const auto b = r.bytes();
          if (b.size() % 8) r.fail("a packed double list of " + std::to_string(b.size()) + " bytes");
          for (std::size_t k = 0; k < b.size(); k += 8) {
            std::uint64_t u;
            std::memcpy(&u, b.data() + k, 8);
            t.values.push_back(std::bit_cast<double>(u));
          }
        } else {
          t.values.push_back(std::bit_cast<double>(r.fixed64()));
        }
        break;
      case 13:
        if (w != pb::length_type) r.fail("external_data of wire type " + std::to_string(unsigned(w)));
        external_entry(r.sub(), t);
        external = true;
        break;
      case 14:
        if (number(r, w) == 1) external = true;
        break;
      default: r.skip(w);
    }
  }
  std::size_t n = 1;
  for (auto d : t.dims) {
    if (d < 0 || d > (std::int64_t(1) << 40)) r.fail("tensor " + t.name + " has the extent " + std::to_string(d));
    if (d && n > (std::size_t(1) << 40) / std::size_t(d)) r.fail("tensor " + t.name + " has more than 2^40 elements");
    n *= std::size_t(d);
  }
  if (external) {
    if (t.location.empty()) r.fail("tensor " + t.name + " keeps its values in an external file and names none (its location)");
    if (has_raw || !t.values.empty()) r.fail("tensor " + t.name + " has values of its own beside its external file");
    return t;  // read by external_values
  }
  if (has_raw) raw_values(r, raw, type, t.values);
  if (t.values.size() != n) r.fail("tensor " + t.name + " has " + std::to_string(t.values.size()) + " values for " + std::to_string(n) + " elements");
  return t;
}

/// The values of tensor t from its external file, which lies in the model's directory (a
/// location that is absolute or leaves it is refused): `length` bytes at `offset` (to the file's
/// end if no length), little-endian, exactly its elements.
inline void external_values(tensor& t, const std::string& model) {
  const std::filesystem::path location(t.location);
  bool inside = !location.empty() && location.is_relative() && !location.has_root_name();
  for (const auto& part : location) inside = inside && part != "..";
  if (!inside) fail(model, "tensor " + t.name + " names the external file " + t.location + ", which is not in the model's directory");
  const std::string path = (std::filesystem::path(model).parent_path() / location).string();
  const ctflow::detail::mapped_file f(path, std::string(what) + ": " + model + ": tensor " + t.name + "'s external file");
  const auto bytes = f.bytes();
  if (t.offset > bytes.size()) fail(model, "tensor " + t.name + " starts at byte " + std::to_string(t.offset) + " of " + path + ", which has " + std::to_string(bytes.size()));
  const std::uint64_t length = t.length == std::uint64_t(-1) ? bytes.size() - t.offset : t.length;
  if (length > bytes.size() - t.offset)
    fail(model, "tensor " + t.name + " takes " + std::to_string(length) + " bytes at " + std::to_string(t.offset) + " of " + path + ", which has " + std::to_string(bytes.size()));
  pb::reader r(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()), std::string(what) + ": " + path);
  raw_values(r, std::string_view(reinterpret_cast<const char*>(bytes.data() + t.offset), std::size_t(length)), t.type, t.values);
  if (t.values.size() != t.count())
    fail(model, "tensor " + t.name + " takes " + std::to_string(length) + " bytes of " + path + ": " + std::to_string(t.values.size()) + " values for " +
                    std::to_string(t.count()) + " elements");
  t.external = false;
}

inline attribute read_attribute(pb::reader r) {
  attribute a;
  std::uint32_t field;
  pb::wire w;
  while (r.next(field, w)) {
    switch (field) {
      case 1: a.name = text(r, w); break;
      case 2:
        if (w != pb::fixed32_type) r.fail("a float attribute of wire type " + std::to_string(unsigned(w)));
        a.f = std::bit_cast<float>(r.fixed32());
        break;
      case 3: a.i = std::int64_t(number(r, w)); break;
      case 4: a.s = text(r, w); break;
      case 5:
        if (w != pb::length_type) r.fail("a tensor attribute of wire type " + std::to_string(unsigned(w)));
        a.t = read_tensor(r.sub()), a.has_t = true;
        break;
      case 7: floats(r, w, a.floats); break;
      case 8: int64s(r, w, a.ints); break;
      case 9: a.strings.push_back(text(r, w)); break;
      default: r.skip(w);
    }
  }
  return a;
}

inline node read_node(pb::reader r) {
  node n;
  std::uint32_t field;
  pb::wire w;
  while (r.next(field, w)) {
    switch (field) {
      case 1: n.inputs.push_back(text(r, w)); break;
      case 2: n.outputs.push_back(text(r, w)); break;
      case 3: n.name = text(r, w); break;
      case 4: n.op = text(r, w); break;
      case 5:
        if (w != pb::length_type) r.fail("an attribute of wire type " + std::to_string(unsigned(w)));
        n.attributes.push_back(read_attribute(r.sub()));
        break;
      case 7: n.domain = text(r, w); break;
      default: r.skip(w);
    }
  }
  return n;
}

inline value_info read_value_info(pb::reader r) {
  value_info v;
  std::uint32_t field;
  pb::wire w;
  while (r.next(field, w)) {
    if (field == 1) {
      v.name = text(r, w);
    } else if (field == 2 && w == pb::length_type) {  // TypeProto
      auto type = r.sub();
      std::uint32_t f2;
      pb::wire w2;
      while (type.next(f2, w2)) {
        if (f2 != 1 || w2 != pb::length_type) { type.skip(w2); continue; }  // tensor_type
        auto t = type.sub();
        std::uint32_t f3;
        pb::wire w3;
        while (t.next(f3, w3)) {
          if (f3 == 1) v.elem_type = std::int64_t(number(t, w3));
          else if (f3 == 2 && w3 == pb::length_type) {  // TensorShapeProto
            auto shape = t.sub();
            std::uint32_t f4;
            pb::wire w4;
            while (shape.next(f4, w4)) {
              if (f4 != 1 || w4 != pb::length_type) { shape.skip(w4); continue; }
              auto dim = shape.sub();
              std::int64_t extent = -1;
              std::uint32_t f5;
              pb::wire w5;
              while (dim.next(f5, w5)) {
                if (f5 == 1) extent = std::int64_t(number(dim, w5));
                else dim.skip(w5);  // dim_param: a symbolic extent
              }
              v.dims.push_back(extent);
            }
          } else {
            t.skip(w3);
          }
        }
      }
    } else {
      r.skip(w);
    }
  }
  return v;
}

inline graph read_graph(pb::reader r) {
  graph g;
  std::uint32_t field;
  pb::wire w;
  while (r.next(field, w)) {
    const auto sub = [&] {
      if (w != pb::length_type) r.fail("a graph field of wire type " + std::to_string(unsigned(w)));
      return r.sub();
    };
    switch (field) {
      case 1: g.nodes.push_back(read_node(sub())); break;
      case 2: g.name = text(r, w); break;
      case 5: g.initializers.push_back(read_tensor(sub())); break;
      case 11: g.inputs.push_back(read_value_info(sub())); break;
      case 12: g.outputs.push_back(read_value_info(sub())); break;
      default: r.skip(w);
    }
  }
  return g;
}

/// A tensor of the graph as the network holds it: its activation (0 the input, k the output of
/// the network's layer k - 1), its extents (ONNX's order, without the batch) and its layout.
struct value {
  std::size_t at = 0;
  std::vector<std::size_t> dims;  // ONNX's: [C, H, W] or [F]
  bool pooled = false;            // a global pooling's [C, 1, 1], which the network holds as [C]
  std::vector<std::size_t> flattened;  // [C, H, W] of a Flatten of channels-first data (the network's rows are [H, W, C])
  bool direct = false;  // written by the layer of `at` itself (not an Identity's or Dropout's name for it)
  /// A sequence (dims [T, F]) as ONNX holds it: [N, T, F], the network's order; [T, N, F], what
  /// a recurrent node reads; [T, 1, N, F], a recurrent node's every step (Y); or [1, N, F], its
  /// last state (Y_h, dims [F]).
  /// Y transposed to [T, N, 1, F] (PyTorch's default exporter) is `steps_batch`.
  enum class sequence { none, batch_first, time_first, steps, steps_batch, state } seq = sequence::none;
};

/// The ONNX importer's walk over the graph: the network so far, each tensor's value, and the
/// value the node at hand reads (`at`, `dims`, ...: its layers are added after it, each reading
/// the one before).
struct walk : value {
  const std::string& file;
  embedded_model& m;
  std::map<std::string, tensor> constants;
  std::map<std::string, value> values;
  std::map<std::string, std::size_t> readers;  // how many nodes (and graph outputs) read each tensor's values
  // Shape computations (a Shape, and what Gather, Concat, ... make of shapes and constants) and
  // the zeros ConstantOfShape fills of them (and slices of those): a recurrent node's initial state.
  std::map<std::string, std::vector<std::int64_t>> shapes;
  std::set<std::string> zeros;
  bool fusable = false;  // the value at hand is the last layer's output, and only this node reads it

  walk(const std::string& f, embedded_model& model) : file(f), m(model) {}

  [[noreturn]] void refuse(const node& n, const std::string& why) const {
    fail(file, "node " + n.label() + " (" + n.op + ") " + why);
  }
  const tensor* constant(const std::string& name) const {
    const auto it = constants.find(name);
    return it == constants.end() ? nullptr : &it->second;
  }
  const tensor& weight(const node& n, std::size_t input, const char* role) const {
    if (input >= n.inputs.size() || n.inputs[input].empty()) refuse(n, std::string("has no ") + role);
    const tensor* t = constant(n.inputs[input]);
    if (!t) refuse(n, std::string("takes its ") + role + " " + n.inputs[input] + " from the graph, not from a constant");
    return *t;
  }
  bool spatial() const { return dims.size() == 3 && !pooled; }
  void need_spatial(const node& n) const {
    if (!spatial()) refuse(n, "reads a tensor of " + std::to_string(dims.size() + 1) + " dimensions: it takes [N, C, H, W]");
  }
  /// Layer l after the value at hand, which it reads; it is the value at hand then.
  embedded_layer& push(embedded_layer l) {
    l.inputs = {at};
    m.layers.push_back(std::move(l));
    at = m.layers.size();
    fusable = false;
    return m.layers.back();
  }
  embedded_layer& add(const node& n, const std::string& kind) {
    embedded_layer l;
    l.kind = kind;
    l.name = n.label();
    return push(std::move(l));
  }
  /// An elementwise activation, fused into the Dense or convolution before it where that has none
  /// and nothing else reads its output.
  void activation(const node& n, const std::string& a) {
    if (fusable) {
      auto& last = m.layers.back();
      const bool takes = last.kind == "Dense" || last.kind == "Conv2D" || last.kind == "DepthwiseConv2D" || last.kind == "Conv2DTranspose";
      if (takes && last.activation == "linear" && a != "softmax" && a != "log_softmax") {
        last.activation = a;
        return;
      }
    }
    add(n, "Activation").activation = a;
  }
  /// The window of a convolution or pooling node: its padding "valid" or "same" where the
  /// node's pads are none or TensorFlow's SAME for this input; else the explicit pads, in pads
  /// (top, bottom, left, right).
  std::string padding(const node& n, const embedded_layer& l, std::array<std::size_t, 4>& pads) const {
    const std::size_t h = dims[1], w = dims[2];
    const auto same = [&](std::size_t in, std::size_t k, std::size_t s, std::size_t d) {
      const std::size_t out = (in + s - 1) / s, span = (k - 1) * d + 1;
      const std::size_t need = (out - 1) * s + span;
      const std::size_t total = need > in ? need - in : 0;
      return std::pair<std::size_t, std::size_t>{total / 2, total - total / 2};
    };
    const auto sh = same(h, l.kh, l.sh, l.dh), sw = same(w, l.kw, l.sw, l.dw);
    const std::string auto_pad = n.s("auto_pad", "NOTSET");
    if (auto_pad == "VALID") return pads = {}, "valid";
    if (auto_pad == "SAME_UPPER") return pads = {}, "same";
    if (auto_pad == "SAME_LOWER") {
      pads = {sh.second, sh.first, sw.second, sw.first};
    } else if (auto_pad == "NOTSET") {
      const auto p = n.ints("pads", {0, 0, 0, 0});
      if (p.size() != 4) refuse(n, "has " + std::to_string(p.size()) + " pads: a 2-D window takes 4");
      for (auto x : p)
        if (x < 0 || x > 1 << 20) refuse(n, "has the pad " + std::to_string(x));
      pads = {std::size_t(p[0]), std::size_t(p[2]), std::size_t(p[1]), std::size_t(p[3])};
    } else {
      refuse(n, "has auto_pad " + auto_pad);
    }
    if (pads == std::array<std::size_t, 4>{}) return "valid";
    if (pads == std::array<std::size_t, 4>{sh.first, sh.second, sw.first, sw.second}) return pads = {}, "same";
    return "explicit";
  }
  /// Reads a window's kernel_shape (or kernel_extents where it has none), strides and dilations.
  void window(const node& n, embedded_layer& l, std::pair<std::size_t, std::size_t> kernel_extents) const {
    const auto k = n.ints("kernel_shape", {std::int64_t(kernel_extents.first), std::int64_t(kernel_extents.second)});
    const auto s = n.ints("strides", {1, 1}), d = n.ints("dilations", {1, 1});
    for (const auto* v : {&k, &s, &d}) {
      if (v->size() != 2) refuse(n, "has a window of " + std::to_string(v->size()) + " dimensions: the embedded layers are 2-D");
      for (auto x : *v)
        if (x < 1 || x > 1 << 20) refuse(n, "has a window, stride or dilation of " + std::to_string(x));
    }
    l.kh = std::size_t(k[0]), l.kw = std::size_t(k[1]), l.sh = std::size_t(s[0]), l.sw = std::size_t(s[1]), l.dh = std::size_t(d[0]), l.dw = std::size_t(d[1]);
  }
  /// The extents after a window over (h, w) with the padding and pads padding() gave.
  void after_window(const node& n, const embedded_layer& l, const std::string& p, const std::array<std::size_t, 4>& pads, std::size_t channels) {
    std::size_t h = dims[1], w = dims[2];
    if (p == "same") {
      h = (h + l.sh - 1) / l.sh, w = (w + l.sw - 1) / l.sw;
    } else {
      h += pads[0] + pads[1], w += pads[2] + pads[3];
      const std::size_t span_h = (l.kh - 1) * l.dh + 1, span_w = (l.kw - 1) * l.dw + 1;
      if (h < span_h || w < span_w) refuse(n, "has a window larger than its input");
      h = (h - span_h) / l.sh + 1, w = (w - span_w) / l.sw + 1;
    }
    dims = {channels, h, w};
  }
  void zero_padding(const node& n, const std::array<std::size_t, 4>& pads) {
    auto& z = add(n, "ZeroPadding2D");
    z.name += "_pad";
    z.pads = pads;
  }

  void conv(const node& n) {
    need_spatial(n);
    const tensor& w = weight(n, 1, "kernel");
    if (w.dims.size() != 4) refuse(n, "has a kernel of " + std::to_string(w.dims.size()) + " dimensions: a 2-D convolution's has 4");
    const std::size_t out = std::size_t(w.dims[0]), per_group = std::size_t(w.dims[1]), kh = std::size_t(w.dims[2]), kw = std::size_t(w.dims[3]);
    const std::size_t in = dims[0], group = std::size_t(n.i("group", 1));
    embedded_layer l;
    l.name = n.label();
    window(n, l, {kh, kw});
    if (l.kh != kh || l.kw != kw) refuse(n, "has a kernel_shape that is not its kernel's");
    const bool depthwise = group != 1;
    if (group == 0 || (depthwise && (group != in || per_group != 1 || out % in)))
      refuse(n, "has group " + std::to_string(group) + " over " + std::to_string(in) + " channels: the embedded layers are Conv2D (group 1) and DepthwiseConv2D (group = channels)");
    if (!depthwise && per_group != in) refuse(n, "has a kernel for " + std::to_string(per_group) + " input channels; its input has " + std::to_string(in));
    l.kind = depthwise ? "DepthwiseConv2D" : "Conv2D";
    l.units = depthwise ? out / in : out;
    std::array<std::size_t, 4> pads{};
    l.padding = padding(n, l, pads);
    if (l.padding == "explicit") {
      zero_padding(n, pads);
      l.padding = "valid";
    }
    // Keras's kernel: [kh, kw, in, out] (Conv2D) or [kh, kw, in, multiplier] (DepthwiseConv2D),
    // from ONNX's [out, in / group, kh, kw].
    embedded_layer::weight k{"kernel", {kh, kw, depthwise ? in : per_group, l.units}, std::vector<double>(w.values.size())};
    for (std::size_t o = 0; o < out; ++o)
      for (std::size_t c = 0; c < per_group; ++c)
        for (std::size_t y = 0; y < kh; ++y)
          for (std::size_t x = 0; x < kw; ++x) {
            const double v = w.values[((o * per_group + c) * kh + y) * kw + x];
            // Depthwise: output o of group o / multiplier is that channel's multiplier-th filter.
            const std::size_t ci = depthwise ? o / l.units : c, oi = depthwise ? o % l.units : o;
            k.values[((y * kw + x) * k.shape[2] + ci) * l.units + oi] = v;
          }
    l.weights.push_back(std::move(k));
    if (n.inputs.size() > 2 && !n.inputs[2].empty()) {
      const tensor& b = weight(n, 2, "bias");
      if (b.count() != out) refuse(n, "has " + std::to_string(b.count()) + " biases for " + std::to_string(out) + " outputs");
      l.weights.push_back({"bias", {out}, b.values});
    }
    const auto p = l.padding;
    after_window(n, l, p, pads, out);
    push(std::move(l));
  }

  /// ConvTranspose of group 1 whose output is Keras's Conv2DTranspose's with valid or same padding:
  /// the full transposed convolution cropped by its pads, less output_padding at the end.
  void conv_transpose(const node& n) {
    need_spatial(n);
    const tensor& w = weight(n, 1, "kernel");
    if (w.dims.size() != 4) refuse(n, "has a kernel of " + std::to_string(w.dims.size()) + " dimensions: a 2-D convolution's has 4");
    const std::size_t in = dims[0], out = std::size_t(w.dims[1]), kh = std::size_t(w.dims[2]), kw = std::size_t(w.dims[3]);
    if (n.i("group", 1) != 1) refuse(n, "has group " + std::to_string(n.i("group", 1)) + ": the embedded Conv2DTranspose has one");
    if (std::size_t(w.dims[0]) != in) refuse(n, "has a kernel for " + std::to_string(w.dims[0]) + " input channels; its input has " + std::to_string(in));
    if (n.find("output_shape")) refuse(n, "gives an output_shape: the importer takes the size its pads give");
    embedded_layer l;
    l.name = n.label();
    l.kind = "Conv2DTranspose";
    l.units = out;
    window(n, l, {kh, kw});
    if (l.kh != kh || l.kw != kw) refuse(n, "has a kernel_shape that is not its kernel's");
    const auto p = n.ints("pads", {0, 0, 0, 0}), extra = n.ints("output_padding", {0, 0});
    if (p.size() != 4 || extra.size() != 2) refuse(n, "has pads or an output_padding of the wrong length");
    const std::string auto_pad = n.s("auto_pad", "NOTSET");
    // Each axis's crop of the full output at its start and end (negative: zeros added), against
    // Keras's for valid and same padding.
    bool valid = true, same = true;
    for (std::size_t axis = 0; axis < 2; ++axis) {
      const std::int64_t k = std::int64_t(axis == 0 ? l.kh : l.kw), d = std::int64_t(axis == 0 ? l.dh : l.dw), st = std::int64_t(axis == 0 ? l.sh : l.sw);
      const std::int64_t window = (k - 1) * d + 1, total = std::max<std::int64_t>(window - st, 0);
      std::int64_t begin = p[axis], end = p[axis + 2] - extra[axis];
      if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
        const std::int64_t t = window - st - extra[axis];  // the output in * stride
        begin = auto_pad == "SAME_UPPER" ? t / 2 : t - t / 2, end = t - begin;
      } else if (auto_pad == "VALID") {
        begin = 0, end = -extra[axis];
      } else if (auto_pad != "NOTSET") {
        refuse(n, "has auto_pad " + auto_pad);
      }
      valid = valid && begin == 0 && end == std::min<std::int64_t>(window - st, 0);
      same = same && begin == total / 2 && end == (window >= st ? total - total / 2 : window - st);
      if (!valid && !same)
        refuse(n, "crops its output by " + std::to_string(begin) + " and " + std::to_string(end) +
                      " (its pads, less output_padding at the end): the embedded Conv2DTranspose's crops are Keras's, of valid or same padding");
    }
    const std::string padding = valid ? "valid" : "same";
    l.padding = padding;
    // Keras's kernel [kh, kw, out, in] from ONNX's [in, out, kh, kw].
    embedded_layer::weight k{"kernel", {kh, kw, out, in}, std::vector<double>(w.values.size())};
    for (std::size_t c = 0; c < in; ++c)
      for (std::size_t o = 0; o < out; ++o)
        for (std::size_t y = 0; y < kh; ++y)
          for (std::size_t x = 0; x < kw; ++x) k.values[((y * kw + x) * out + o) * in + c] = w.values[((c * out + o) * kh + y) * kw + x];
    l.weights.push_back(std::move(k));
    if (n.inputs.size() > 2 && !n.inputs[2].empty()) {
      const tensor& b = weight(n, 2, "bias");
      if (b.count() != out) refuse(n, "has " + std::to_string(b.count()) + " biases for " + std::to_string(out) + " outputs");
      l.weights.push_back({"bias", {out}, b.values});
    }
    const auto extent = [&](std::size_t i, std::size_t k, std::size_t st, std::size_t d) {
      const std::size_t window = (k - 1) * d + 1;
      return padding == "same" ? i * st : i * st + (window > st ? window - st : 0);
    };
    dims = {out, extent(dims[1], l.kh, l.sh, l.dh), extent(dims[2], l.kw, l.sw, l.dw)};
    push(std::move(l));
  }

  void pool(const node& n, bool max) {
    need_spatial(n);
    embedded_layer l;
    l.name = n.label();
    l.kind = max ? "MaxPooling2D" : "AveragePooling2D";
    if (!n.find("kernel_shape")) refuse(n, "has no kernel_shape");
    window(n, l, {1, 1});
    if (l.dh != 1 || l.dw != 1) refuse(n, "has dilations: the embedded poolings have none");
    std::array<std::size_t, 4> pads{};
    l.padding = padding(n, l, pads);
    if (l.padding == "explicit")
      refuse(n, "has the pads [" + std::to_string(pads[0]) + "," + std::to_string(pads[2]) + "," + std::to_string(pads[1]) + "," + std::to_string(pads[3]) +
                    "], neither none nor TensorFlow's SAME for its input: the embedded poolings take valid or same");
    if (!max && l.padding == "same" && n.i("count_include_pad", 0) != 0)
      refuse(n, "counts its pads (count_include_pad): the embedded average pooling divides by the window's cells inside the input");
    // Ceil mode changes nothing where the window's last step ends on the input's edge.
    if (n.i("ceil_mode", 0) != 0 && (l.padding != "valid" || dims[1] < l.kh || dims[2] < l.kw || (dims[1] - l.kh) % l.sh || (dims[2] - l.kw) % l.sw))
      refuse(n, "has ceil_mode: the embedded poolings round down");
    if (n.outputs.size() > 1 && !n.outputs[1].empty()) refuse(n, "gives its indices: only the pooled values are imported");
    const auto p = l.padding;
    after_window(n, l, p, pads, dims[0]);
    push(std::move(l));
  }

  /// A Dense of kernel [in, out] (ONNX's rows; rows permuted where a channels-first Flatten
  /// came before) and bias.
  void dense(const node& n, std::vector<double> kernel, std::size_t in, std::size_t out, std::vector<double> bias) {
    if (pooled) refuse(n, "reads a global pooling's [N, C, 1, 1]: flatten it first");
    if (dims.size() != 1) refuse(n, "reads a tensor of " + std::to_string(dims.size() + 1) + " dimensions: a Dense reads [N, features]");
    const std::size_t features = dims[0];
    if (in != features) refuse(n, "has a weight for " + std::to_string(in) + " features; its input has " + std::to_string(features));
    if (!flattened.empty()) {
      // ONNX's row (c * H + h) * W + w is the network's (h * W + w) * C + c.
      const std::size_t c_n = flattened[0], h_n = flattened[1], w_n = flattened[2];
      std::vector<double> rows(kernel.size());
      for (std::size_t c = 0; c < c_n; ++c)
        for (std::size_t h = 0; h < h_n; ++h)
          for (std::size_t w = 0; w < w_n; ++w)
            std::copy_n(kernel.begin() + std::ptrdiff_t(((c * h_n + h) * w_n + w) * out), out, rows.begin() + std::ptrdiff_t(((h * w_n + w) * c_n + c) * out));
      kernel = std::move(rows);
      flattened.clear();
    }
    auto& l = add(n, "Dense");
    l.units = out;
    l.weights.push_back({"kernel", {in, out}, std::move(kernel)});
    if (!bias.empty()) l.weights.push_back({"bias", {out}, std::move(bias)});
    dims = {out};
    pooled = false;
  }

  void gemm(const node& n) {
    if (n.i("transA", 0) != 0) refuse(n, "has transA: the embedded Dense reads its input as it is");
    const tensor& b = weight(n, 1, "weight");
    if (b.dims.size() != 2) refuse(n, "has a weight of " + std::to_string(b.dims.size()) + " dimensions");
    const bool trans = n.i("transB", 0) != 0;
    const std::size_t in = std::size_t(trans ? b.dims[1] : b.dims[0]), out = std::size_t(trans ? b.dims[0] : b.dims[1]);
    const double alpha = n.f("alpha", 1.0), beta = n.f("beta", 1.0);
    std::vector<double> kernel(in * out);
    for (std::size_t i = 0; i < in; ++i)
      for (std::size_t o = 0; o < out; ++o) kernel[i * out + o] = alpha * b.values[trans ? o * in + i : i * out + o];
    std::vector<double> bias;
    if (n.inputs.size() > 2 && !n.inputs[2].empty()) {
      const tensor& c = weight(n, 2, "bias");
      if (c.count() == 1) bias.assign(out, beta * c.values[0]);
      else if (c.count() == out && (c.dims.size() == 1 || (c.dims.size() == 2 && c.dims[0] == 1))) for (double v : c.values) bias.push_back(beta * v);
      else refuse(n, "has a bias of " + std::to_string(c.count()) + " values for " + std::to_string(out) + " outputs");
    }
    dense(n, std::move(kernel), in, out, std::move(bias));
  }

  void matmul(const node& n, const node* add_node) {
    const tensor& b = weight(n, 1, "weight");
    if (b.dims.size() != 2) refuse(n, "has a weight of " + std::to_string(b.dims.size()) + " dimensions: the embedded Dense multiplies by a matrix");
    const std::size_t in = std::size_t(b.dims[0]), out = std::size_t(b.dims[1]);
    std::vector<double> bias;
    if (add_node) bias = constant(add_node->inputs[0] == n.outputs[0] ? add_node->inputs[1] : add_node->inputs[0])->values;
    if (!bias.empty() && bias.size() != out) refuse(*add_node, "adds " + std::to_string(bias.size()) + " values to " + std::to_string(out) + " outputs");
    dense(n, b.values, in, out, std::move(bias));
  }

  /// x * scale + offset, with scalars: a Rescaling (merged with the one before it).
  void rescale(const node& n, double scale, double offset) {
    if (fusable && m.layers.back().kind == "Rescaling") {
      auto& r = m.layers.back();
      r.scale *= scale;
      r.offset = r.offset * scale + offset;
      return;
    }
    auto& r = add(n, "Rescaling");
    r.scale = scale, r.offset = offset;
  }

  /// Add, Sub or Mul of two tensors of the graph, or Concat of two or more: a merge layer over
  /// their activations, which must be held alike (the same extents, or Concat's off its axis).
  void merge(const node& n, const std::vector<const value*>& in) {
    if (in.size() != n.inputs.size()) refuse(n, "reads a constant beside the graph's tensors: a merge reads tensors of the graph alone");
    const value& first = *in[0];
    const bool concat = n.op == "Concat";
    const std::size_t rank = first.pooled ? 3 : first.dims.size();
    std::int64_t axis = concat ? n.i("axis", std::numeric_limits<std::int64_t>::min()) : 0;
    if (concat) {
      if (axis == std::numeric_limits<std::int64_t>::min()) refuse(n, "has no axis");
      if (axis < 0) axis += std::int64_t(rank) + 1;
      if (axis < 1 || axis > std::int64_t(rank)) refuse(n, "joins along axis " + std::to_string(n.i("axis", 0)) + ": the importer joins an axis other than the batch");
      if (first.pooled && axis != 1) refuse(n, "joins a global pooling's [N, C, 1, 1] along axis " + std::to_string(axis) + ": flatten it first, or join the channels");
    }
    for (const value* v : in) {
      if (!v->flattened.empty()) refuse(n, "reads a Flatten of channels-first data: join the tensors before flattening them");
      bool alike = v->pooled == first.pooled && v->dims.size() == first.dims.size();
      for (std::size_t i = 0; alike && i < first.dims.size(); ++i) alike = v->dims[i] == first.dims[i] || (concat && std::int64_t(i) + 1 == axis);
      if (!alike) {
        const auto text = [](const value& x) {
          std::string t = x.pooled ? "pooled" : "";
          for (auto d : x.dims) t += ' ' + std::to_string(d);
          return t;
        };
        refuse(n, "reads tensors of extents" + text(first) + " and" + text(*v) + ": " +
                      (concat ? "they must agree off the joined axis" : "the importer takes tensors of the same extents"));
      }
    }
    embedded_layer l;
    l.name = n.label();
    l.kind = n.op == "Add" ? "Add" : n.op == "Sub" ? "Subtract" : n.op == "Mul" ? "Multiply" : "Concatenate";
    static_cast<value&>(*this) = first;
    if (concat) {
      // ONNX's axis of [N, C, H, W] in the network's [N, H, W, C]; of [N, F], the last.
      l.axis = rank == 3 && !first.pooled ? (axis == 1 ? -1 : int(axis) - 1) : -1;
      dims[std::size_t(axis - 1)] = 0;
      for (const value* v : in) dims[std::size_t(axis - 1)] += v->dims[std::size_t(axis - 1)];
    }
    for (const value* v : in) l.inputs.push_back(v->at);
    m.layers.push_back(std::move(l));
    at = m.layers.size();
    direct = true;
  }

  /// The batch's extent in a shape computation's values (a symbol: the graph's batch is dynamic),
  /// and an extent computed from it that cannot be told.
  static constexpr std::int64_t batch_extent = std::numeric_limits<std::int64_t>::min(), unknown_extent = batch_extent + 1;
  /// The extents of v as ONNX holds it.
  static std::vector<std::int64_t> onnx_dims(const value& v) {
    using S = value::sequence;
    const auto e = [&](std::size_t i) { return std::int64_t(v.dims[i]); };
    switch (v.seq) {
      case S::batch_first: return {batch_extent, e(0), e(1)};
      case S::time_first: return {e(0), batch_extent, e(1)};
      case S::steps: return {e(0), 1, batch_extent, e(1)};
      case S::steps_batch: return {e(0), batch_extent, 1, e(1)};
      case S::state: return {1, batch_extent, e(0)};
      case S::none: break;
    }
    std::vector<std::int64_t> d{batch_extent};
    for (auto x : v.dims) d.push_back(std::int64_t(x));
    if (v.pooled) d.insert(d.end(), {1, 1});
    return d;
  }
  /// Whether `name` is a constant of zeros.
  bool zero_constant(const std::string& name) const {
    const tensor* t = constant(name);
    return t && std::all_of(t->values.begin(), t->values.end(), [](double v) { return v == 0; });
  }
  /// The integers of a shape computation or of a constant named `name`, if it is one.
  std::optional<std::vector<std::int64_t>> integers(const std::string& name) const {
    if (const auto it = shapes.find(name); it != shapes.end()) return it->second;
    const tensor* t = constant(name);
    if (!t) return std::nullopt;
    std::vector<std::int64_t> v;
    for (double x : t->values) {
      if (!(std::abs(x) <= double(std::int64_t(1) << 40))) return std::nullopt;
      v.push_back(std::int64_t(x));
    }
    return v;
  }
  /// ONNX's Reshape of extents `from` to `to` (0 the extent at its place unless allowzero, -1
  /// what the rest leaves), the batch a symbol; empty where it cannot be told.
  static std::vector<std::int64_t> reshaped(const std::vector<std::int64_t>& from, std::vector<std::int64_t> to, bool allowzero) {
    int from_batch = 0, to_batch = 0;
    std::int64_t from_product = 1, to_product = 1;
    const auto times = [](std::int64_t& p, std::int64_t e) { return e >= 0 && e <= (std::int64_t(1) << 40) && !__builtin_mul_overflow(p, e, &p); };
    for (auto e : from)
      if (e == batch_extent) ++from_batch;
      else if (!times(from_product, e)) return {};
    std::size_t infer = to.size();
    for (std::size_t i = 0; i < to.size(); ++i) {
      if (to[i] == 0 && !allowzero) {
        if (i >= from.size()) return {};
        to[i] = from[i];
      }
      if (to[i] == batch_extent) ++to_batch;
      else if (to[i] == -1 && infer == to.size()) infer = i;
      else if (!times(to_product, to[i])) return {};
    }
    if (infer < to.size()) {
      if (to_batch + 1 == from_batch && to_product == from_product) to[infer] = batch_extent;
      else if (to_batch == from_batch && to_product > 0 && from_product % to_product == 0) to[infer] = from_product / to_product;
      else return {};
    } else if (to_batch != from_batch || to_product != from_product) {
      return {};
    }
    return to;
  }
  /// What shape-computation node n gives of its inputs' integers a.
  std::vector<std::int64_t> evaluate(const node& n, const std::vector<std::vector<std::int64_t>>& a) const {
    const auto index = [&](std::int64_t i, std::size_t size, bool clamp) {
      const auto r = std::int64_t(size);
      if (i < 0) i += r;
      if (clamp) return std::size_t(std::clamp<std::int64_t>(i, 0, r));
      if (i < 0 || i >= r) refuse(n, "indexes a shape of " + std::to_string(size) + " extents at " + std::to_string(i));
      return std::size_t(i);
    };
    if (n.op == "Gather") {
      if (n.i("axis", 0) != 0 || a.size() != 2) refuse(n, "gathers a shape other than along axis 0, by one index tensor");
      std::vector<std::int64_t> r;
      for (auto i : a.at(1)) r.push_back(a[0][index(i, a[0].size(), false)]);
      return r;
    }
    if (n.op == "Concat") {
      std::vector<std::int64_t> r;
      for (const auto& v : a) r.insert(r.end(), v.begin(), v.end());
      return r;
    }
    if (n.op == "Slice") {
      if ((a.size() > 3 && !a[3].empty() && (a[3].size() != 1 || a[3][0] != 0)) || (a.size() > 4 && !a[4].empty() && (a[4].size() != 1 || a[4][0] != 1)))
        refuse(n, "slices a shape other than along axis 0, step 1");
      if (a.size() < 3 || a[1].size() != 1 || a[2].size() != 1) refuse(n, "slices a shape without one start and one end");
      const std::size_t b = index(a[1][0], a[0].size(), true), e = index(a[2][0], a[0].size(), true);
      return b < e ? std::vector<std::int64_t>(a[0].begin() + std::ptrdiff_t(b), a[0].begin() + std::ptrdiff_t(e)) : std::vector<std::int64_t>{};
    }
    if (n.op == "Mul" || n.op == "Add" || n.op == "Sub" || n.op == "Div") {
      if (a.size() != 2 || (a[0].size() != a[1].size() && a[0].size() != 1 && a[1].size() != 1)) refuse(n, "combines shapes of different lengths");
      const std::size_t size = std::max(a[0].size(), a[1].size());
      const bool mul = n.op == "Mul", add = n.op == "Add";
      const std::int64_t identity = mul || n.op == "Div" ? 1 : 0;
      std::vector<std::int64_t> r(size);
      for (std::size_t i = 0; i < size; ++i) {
        const std::int64_t x = a[0][a[0].size() == 1 ? 0 : i], y = a[1][a[1].size() == 1 ? 0 : i];
        const bool sx = x <= unknown_extent, sy = y <= unknown_extent;  // symbols
        if (sx || sy) {
          r[i] = sx && !sy && y == identity ? x : !sx && sy && (mul || add) && x == identity ? y : unknown_extent;
          continue;
        }
        std::int64_t v = 0;
        const bool overflow = mul ? __builtin_mul_overflow(x, y, &v) : add ? __builtin_add_overflow(x, y, &v) : n.op == "Sub" ? __builtin_sub_overflow(x, y, &v)
                                                                                                                        : (y == 0 || (v = x / y, false));
        r[i] = overflow ? unknown_extent : v;
      }
      return r;
    }
    return a.at(0);  // Unsqueeze, Squeeze, Cast, Reshape: the same extents
  }
  /// A node of a shape computation (a Shape, and what Gather, Slice, Concat, the arithmetic, ...
  /// make of shapes and constants: their extents kept, the batch a symbol) or of zeros (filled
  /// from a shape by ConstantOfShape or an Expand of a constant 0, and slices of those): a
  /// recurrent node's initial state, and the shapes a Reshape takes. It adds no layer: true
  /// when n is one (its output then in shapes or zeros).
  bool shape_computation(const node& n) {
    if (n.outputs.size() != 1 || n.outputs[0].empty() || n.inputs.empty()) return false;
    const std::string& out = n.outputs[0];
    const std::string& first = n.inputs[0];
    if (n.op == "Shape") {
      const auto v = values.find(first);
      if (v == values.end()) refuse(n, "reads " + first + ", which neither the graph's input nor a node before it gives");
      const auto d = onnx_dims(v->second);
      const auto r = std::int64_t(d.size());
      const auto place = [&](std::int64_t i) { return std::clamp<std::int64_t>(i < 0 ? i + r : i, 0, r); };
      const std::int64_t b = place(n.i("start", 0)), e = place(n.i("end", r));
      shapes[out] = b < e ? std::vector<std::int64_t>(d.begin() + b, d.begin() + e) : std::vector<std::int64_t>{};
      return true;
    }
    if (n.op == "ConstantOfShape" || (n.op == "Expand" && constant(first) && n.inputs.size() == 2 && integers(n.inputs[1]))) {
      if (n.op == "ConstantOfShape" && !integers(first)) refuse(n, "fills a shape that is neither a constant nor computed from a tensor's Shape");
      const auto* v = n.find("value");
      const bool zeros_filled = n.op == "ConstantOfShape" ? !v || !v->has_t || (v->t.count() == 1 && v->t.values[0] == 0) : zero_constant(first);
      if (!zeros_filled) refuse(n, "fills its tensor with a value other than 0: the importer takes it as a recurrent node's zero initial state");
      zeros.insert(out);
      return true;
    }
    static constexpr std::string_view ops[] = {"Gather", "Unsqueeze", "Squeeze", "Concat", "Slice", "Cast", "Reshape", "Expand", "Mul", "Add", "Sub", "Div"};
    if (std::find(std::begin(ops), std::end(ops), n.op) == std::end(ops)) return false;
    const auto all_integers = [&](std::size_t from) {
      for (std::size_t i = from; i < n.inputs.size(); ++i)
        if (!n.inputs[i].empty() && !integers(n.inputs[i])) return false;
      return true;
    };
    if (zeros.count(first)) {  // zeros sliced, reshaped, expanded: zeros
      const bool keeps = n.op == "Slice" || n.op == "Reshape" || n.op == "Unsqueeze" || n.op == "Squeeze" || n.op == "Gather" || n.op == "Expand" || n.op == "Cast";
      if (!keeps || !all_integers(1)) return false;
      zeros.insert(out);
      return true;
    }
    if (n.op == "Expand" || !all_integers(0)) return false;
    bool of_shapes = false;
    std::vector<std::vector<std::int64_t>> a;
    for (const auto& i : n.inputs) {
      of_shapes = of_shapes || (!i.empty() && shapes.count(i));
      a.push_back(i.empty() ? std::vector<std::int64_t>{} : *integers(i));
    }
    if (!of_shapes) return false;  // of constants alone
    shapes[out] = evaluate(n, a);
    return true;
  }
  /// A scalar index constant: input i of n.
  std::int64_t index(const node& n, std::size_t i) const {
    const tensor& t = weight(n, i, "index");
    if (t.count() != 1) refuse(n, "takes " + std::to_string(t.count()) + " indices: the importer takes one");
    return std::int64_t(t.values[0]);
  }
  /// A sequence's batch and time swapped (around a recurrent node), or the axes of an example
  /// reordered (the batch first and staying so): a Permute. ONNX's [C, H, W] is the network's
  /// [H, W, C], and the result, which the graph reads as [C, H, W] again, is held so too: its
  /// axes are ONNX's p2, p3, p1 of the input, the network's 1-based axes {-, 3, 1, 2}[p].
  void transpose(const node& n) {
    const auto perm = n.ints("perm", {});
    if (seq == sequence::steps && perm == std::vector<std::int64_t>{0, 2, 1, 3}) {
      seq = sequence::steps_batch;
      return;
    }
    if ((seq == sequence::batch_first || seq == sequence::time_first) && perm == std::vector<std::int64_t>{1, 0, 2}) {
      seq = seq == sequence::batch_first ? sequence::time_first : sequence::batch_first;
      return;
    }
    std::vector<std::int64_t> axes(dims.size() + 1);
    std::iota(axes.begin(), axes.end(), std::int64_t(0));
    const bool reorders = perm.size() == axes.size() && perm[0] == 0 && std::is_permutation(perm.begin(), perm.end(), axes.begin()) &&
                          (seq == sequence::none || seq == sequence::batch_first) && (spatial() || seq == sequence::batch_first) && flattened.empty();
    if (!reorders)
      refuse(n, "transposes other than the axes of an example [C, H, W] or [T, F] (perm 0 first) or a sequence's batch and time (perm 1, 0, 2)");
    std::vector<std::size_t> order, out;
    for (std::size_t a = 1; a < perm.size(); ++a) out.push_back(dims[std::size_t(perm[a]) - 1]);
    if (spatial()) {
      constexpr std::size_t network_axis[] = {0, 3, 1, 2};
      order = {network_axis[perm[2]], network_axis[perm[3]], network_axis[perm[1]]};
    } else {
      for (std::size_t a = 1; a < perm.size(); ++a) order.push_back(std::size_t(perm[a]));
    }
    bool identity = true;
    for (std::size_t a = 0; a < order.size(); ++a) identity = identity && order[a] == a + 1;
    if (!identity) add(n, "Permute").permutation = order;
    dims = out;
  }
  void squeeze(const node& n) {
    const tensor& axes = weight(n, 1, "axes");
    const double axis = axes.count() == 1 ? axes.values[0] : -100;
    if (seq == sequence::steps && (axis == 1 || axis == -3)) seq = sequence::time_first;
    else if (seq == sequence::steps_batch && (axis == 2 || axis == -2)) seq = sequence::time_first;
    else if (seq == sequence::state && (axis == 0 || axis == -3)) seq = sequence::none;
    else refuse(n, "squeezes other than a recurrent node's directions (axis 1 of Y, 0 of Y_h): the importer takes those");
  }
  /// The last step of a sequence a recurrent layer gave (x[:, -1] of [N, T, F], x[-1] of
  /// [T, N, F]: that layer then returns its last step alone), or of Y_h's directions.
  void gather(const node& n) {
    const std::int64_t axis = n.i("axis", 0), i = index(n, 1);
    if (seq == sequence::state && axis == 0 && (i == 0 || i == -1)) {
      seq = sequence::none;
      return;
    }
    const bool sequence_axis = (seq == sequence::batch_first && axis == 1) || (seq == sequence::time_first && axis == 0);
    if (!sequence_axis || (i != -1 && i != std::int64_t(dims[0]) - 1))
      refuse(n, "gathers other than the last step of a sequence or of a recurrent node's state: the importer takes those");
    auto& last = m.layers.back();
    if (!fusable || (last.kind != "LSTM" && last.kind != "GRU") || !last.return_sequences)
      refuse(n, "gathers the last step of a sequence that is not a recurrent node's own, read by this node alone");
    last.return_sequences = false;
    dims = {dims[1]};
    seq = sequence::none;
  }
  /// An LSTM or GRU node over [T, N, F], forward (or reverse: go_backwards), from zero states,
  /// made Keras's: its gates
  /// reordered (ONNX's LSTM [i, o, f, c] to Keras's [i, f, c, o]; the GRU's [z, r, h] are
  /// Keras's), each kernel transposed to [in, gates], the LSTM's two biases summed, the GRU's
  /// [input; recurrent] with linear_before_reset (Keras's reset_after) or summed without. Gives
  /// the output it reads, Y (every step) or Y_h (the last step's).
  std::size_t recurrent(const node& n) {
    const bool lstm = n.op == "LSTM";
    if (seq == sequence::batch_first)
      refuse(n, "reads [N, T, F] as ONNX's [T, N, F]: the importer takes a recurrent node after a Transpose of perm 1, 0, 2, as PyTorch's exporter writes it");
    if (seq != sequence::time_first) refuse(n, "reads a tensor other than a sequence [T, N, F]");
    if (n.i("layout", 0) != 0) refuse(n, "has layout 1: the importer takes layout 0, [T, N, F]");
    const std::string direction = n.s("direction", "forward");
    if (direction != "forward" && direction != "reverse")
      refuse(n, "runs " + direction + ": the importer takes forward and reverse recurrent nodes (one direction each)");
    const bool reverse = direction == "reverse";
    if (n.find("clip")) refuse(n, "clips its gates' inputs: the embedded layers do not");
    if (n.find("activation_alpha") || n.find("activation_beta")) refuse(n, "has activation_alpha or activation_beta: the importer takes Sigmoid, Tanh and Relu");
    if (lstm && n.i("input_forget", 0) != 0) refuse(n, "couples its input and forget gates (input_forget)");
    const std::size_t units = std::size_t(n.i("hidden_size", 0)), gates = (lstm ? 4 : 3) * units, in = dims[1];
    if (units == 0 || units > 1 << 20) refuse(n, "has hidden_size " + std::to_string(n.i("hidden_size", 0)));
    // f, g (and the LSTM's h, which must be g): Keras's recurrent activation and activation.
    std::vector<std::string> a = lstm ? std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"} : std::vector<std::string>{"Sigmoid", "Tanh"};
    if (const auto* given = n.find("activations")) {
      if (given->strings.size() != a.size()) refuse(n, "has " + std::to_string(given->strings.size()) + " activations for " + std::to_string(a.size()));
      a = given->strings;
    }
    if (lstm && a[2] != a[1]) refuse(n, "has the activations " + a[1] + " and " + a[2] + " for its cell's input and output: the embedded LSTM's are one");
    const auto name = [&](const std::string& onnx) -> std::string {
      if (onnx == "Sigmoid") return "sigmoid";
      if (onnx == "Tanh") return "tanh";
      if (onnx == "Relu") return "relu";
      refuse(n, "has the activation " + onnx + ": the importer takes Sigmoid, Tanh and Relu");
    };
    const auto given = [&](std::size_t i) { return i < n.inputs.size() && !n.inputs[i].empty(); };
    if (given(4)) refuse(n, "takes sequence_lens: the embedded layers run every step");
    if (lstm && given(7)) refuse(n, "has peepholes (P): the embedded LSTM has none");
    for (std::size_t i : {std::size_t(5), std::size_t(6)}) {
      if (given(i) && !zeros.count(n.inputs[i]) && !zero_constant(n.inputs[i]))
        refuse(n, "starts from the state " + n.inputs[i] + ", which is not zeros: the embedded layers start from zero states");
    }
    const auto read = [&](std::size_t i) { return i < n.outputs.size() && !n.outputs[i].empty() && readers[n.outputs[i]] > 0; };
    if (lstm && read(2)) refuse(n, "gives its cell state (Y_c): the importer takes Y or Y_h");
    if (read(0) == read(1)) refuse(n, read(0) ? "gives Y and Y_h, both read: the importer takes one" : "gives no output that is read");
    // Reverse: Keras's go_backwards, whose last state is Y_h; its sequence is Y's steps in the
    // order it ran them, the reverse of ONNX's.
    if (reverse && read(0)) refuse(n, "runs reverse and gives Y: the embedded layer gives a reverse node's steps in the order it ran them; the importer takes its Y_h");
    const tensor& w = weight(n, 1, "W");
    const tensor& r = weight(n, 2, "R");
    const auto check = [&](const tensor& t, std::vector<std::int64_t> want, const char* role) {
      if (t.dims != want) {
        std::string have, expected;
        for (auto d : t.dims) have += ' ' + std::to_string(d);
        for (auto d : want) expected += ' ' + std::to_string(d);
        refuse(n, std::string("has ") + role + " of extents" + have + "; its input and hidden_size give" + expected);
      }
    };
    check(w, {1, std::int64_t(gates), std::int64_t(in)}, "W");
    check(r, {1, std::int64_t(gates), std::int64_t(units)}, "R");
    // Keras's gate k is ONNX's gate of[k].
    const std::size_t of[4] = {0, lstm ? 2u : 1u, lstm ? 3u : 2u, 1};
    const auto keras = [&](const tensor& t, std::size_t rows) {
      std::vector<double> k(rows * gates);
      for (std::size_t i = 0; i < rows; ++i)
        for (std::size_t g = 0; g < gates / units; ++g)
          for (std::size_t j = 0; j < units; ++j) k[i * gates + g * units + j] = t.values[(of[g] * units + j) * rows + i];
      return k;
    };
    embedded_layer l;
    l.kind = n.op;
    l.name = n.label();
    l.units = units;
    l.recurrent_activation = name(a[0]);
    l.activation = name(a[1]);
    l.return_sequences = read(0);
    l.go_backwards = reverse;
    l.reset_after = !lstm && n.i("linear_before_reset", 0) != 0;
    l.weights.push_back({"kernel", {in, gates}, keras(w, in)});
    l.weights.push_back({"recurrent_kernel", {units, gates}, keras(r, units)});
    if (given(3)) {
      const tensor& b = weight(n, 3, "B");
      check(b, {1, std::int64_t(2 * gates)}, "B");
      std::vector<double> bias(l.reset_after ? 2 * gates : gates);
      for (std::size_t g = 0; g < gates / units; ++g)
        for (std::size_t j = 0; j < units; ++j) {
          const double input = b.values[of[g] * units + j], state = b.values[gates + of[g] * units + j];
          if (l.reset_after) bias[g * units + j] = input, bias[gates + g * units + j] = state;
          else bias[g * units + j] = input + state;
        }
      l.weights.push_back({"bias", l.reset_after ? std::vector<std::size_t>{2, gates} : std::vector<std::size_t>{gates}, std::move(bias)});
    }
    push(std::move(l));
    direct = true;
    if (read(0)) {
      seq = sequence::steps;
      dims = {dims[0], units};
      return 0;
    }
    seq = sequence::state;
    dims = {units};
    return 1;
  }

  void flatten(const node& n) {
    if (seq == sequence::batch_first) {
      add(n, "Flatten");
      dims = {dims[0] * dims[1]};
      seq = sequence::none;
    }
    if (spatial()) {
      if (dims[0] != 1 && dims[1] * dims[2] != 1) flattened = dims;  // else the two orders agree
      add(n, "Flatten");
      dims = {dims[0] * dims[1] * dims[2]};
    }
    pooled = false;  // [C, 1, 1] flattened is the [C] the network holds
  }
};

/// A scalar constant (a value of one element).
inline bool scalar(const tensor* t, double& v) {
  if (!t || t->count() != 1) return false;
  v = t->values[0];
  return true;
}

inline embedded_model read_model(std::span<const std::uint8_t> bytes, const std::string& name) {
  pb::reader r(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()), std::string(what) + ": " + name + ": ONNX model");
  graph g;
  bool has_graph = false;
  std::int64_t opset = -1;
  std::uint32_t field;
  pb::wire w;
  while (r.next(field, w)) {
    if (field == 7 && w == pb::length_type) {
      g = read_graph(r.sub());
      has_graph = true;
    } else if (field == 8 && w == pb::length_type) {  // OperatorSetIdProto
      auto s = r.sub();
      std::string domain;
      std::int64_t version = 0;
      std::uint32_t f2;
      pb::wire w2;
      while (s.next(f2, w2)) {
        if (f2 == 1) domain = text(s, w2);
        else if (f2 == 2) version = std::int64_t(number(s, w2));
        else s.skip(w2);
      }
      if (domain.empty() || domain == "ai.onnx") opset = version;
    } else {
      r.skip(w);
    }
  }
  if (!has_graph) fail(name, "an ONNX model holds a graph; this file has none");
  // A node no output of the graph depends on is left out (a branch an export left, a value it
  // computed for nothing): it would run as a layer, its reading a tensor would keep that tensor's
  // node from taking the next node in (a convolution its activation), and its tensors in an
  // external file would be read for nothing. The nodes are in ONNX's topological order: from the
  // last, a node is needed where a needed tensor is its output.
  {
    std::set<std::string> needed;
    for (const auto& o : g.outputs) needed.insert(o.name);
    std::vector<node> live;
    for (auto n = g.nodes.rbegin(); n != g.nodes.rend(); ++n) {
      if (std::none_of(n->outputs.begin(), n->outputs.end(), [&](const std::string& o) { return needed.count(o) != 0; })) continue;
      for (const auto& i : n->inputs) if (!i.empty()) needed.insert(i);
      live.push_back(std::move(*n));
    }
    g.nodes.assign(std::make_move_iterator(live.rbegin()), std::make_move_iterator(live.rend()));
  }
  for (auto& t : g.initializers)
    if (t.external) external_values(t, name);
  for (auto& n : g.nodes)
    for (auto& a : n.attributes)
      if (a.has_t && a.t.external) external_values(a.t, name);
  if (opset < 13 || opset > 21) fail(name, "opset " + std::to_string(opset) + " of ai.onnx: the importer reads opsets 13 to 21");

  // An op with no embedded form is named first, before what the walk would find of the graph.
  static constexpr std::string_view ops[] = {"Constant", "Conv", "ConvTranspose", "MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool", "Flatten",
                                             "Reshape", "Gemm", "MatMul", "BatchNormalization", "Relu", "Sigmoid", "Tanh", "Elu", "Selu",
                                             "Softplus", "Softsign", "Clip", "Softmax", "LogSoftmax", "Mul", "Add", "Sub", "Div", "Pad",
                                             "Dropout", "Identity", "Concat", "LSTM", "GRU", "Transpose", "Squeeze", "Gather",
                                             "Shape", "ConstantOfShape", "Unsqueeze", "Slice", "Cast", "Expand", "ReduceMean", "ReduceMax"};
  for (const auto& n : g.nodes)
    if (std::find(std::begin(ops), std::end(ops), n.op) == std::end(ops))
      fail(name, "node " + n.label() + " (" + n.op +
                     ") has no embedded form (the importer reads Conv, ConvTranspose, Gemm, MatMul, the poolings, BatchNormalization, Flatten, Reshape, Pad, "
                     "the activations, Softmax, Clip, Concat, x * c, x / c, x + c, x - c, the sums, differences and products of two tensors, ReduceMean and ReduceMax over H and W, "
                     "Transpose, LSTM and GRU, and the Squeeze, Gather and shape computations around them)");

  embedded_model m;
  m.what = what;
  m.name = g.name.empty() ? "model" : g.name;
  m.framework = "ONNX";
  m.class_name = "graph";
  walk c(name, m);
  for (auto& t : g.initializers) c.constants[t.name] = std::move(t);

  // The one input that is not an initializer: [N, C, H, W], [N, T, F] or [N, features], float.
  const value_info* input = nullptr;
  for (const auto& v : g.inputs)
    if (!c.constant(v.name)) {
      if (input) fail(name, "the graph has inputs " + input->name + " and " + v.name + ": the importer takes one");
      input = &v;
    }
  if (!input) fail(name, "the graph has no input");
  if (input->elem_type != 1) fail(name, "input " + input->name + " is of element type " + std::to_string(input->elem_type) + ": the embedded networks import float32 models");
  if (input->dims.size() < 2 || input->dims.size() > 4)
    fail(name, "input " + input->name + " has " + std::to_string(input->dims.size()) + " dimensions: the importer takes [N, C, H, W], [N, T, F] or [N, features]");
  for (std::size_t i = 1; i < input->dims.size(); ++i) {
    if (input->dims[i] <= 0) fail(name, "input " + input->name + " has an extent other than the batch that is not static");
    if (input->dims[i] > 1 << 20) fail(name, "input " + input->name + " has the extent " + std::to_string(input->dims[i]));
    c.dims.push_back(std::size_t(input->dims[i]));
  }
  m.input = c.dims.size() == 3 ? std::vector<std::size_t>{c.dims[1], c.dims[2], c.dims[0]} : c.dims;
  if (c.dims.size() == 3) m.channels_first_input = c.dims;
  if (c.dims.size() == 2) c.seq = value::sequence::batch_first;
  c.values[input->name] = c;
  if (g.outputs.size() != 1) fail(name, "the graph has " + std::to_string(g.outputs.size()) + " outputs: the importer takes one");

  for (const auto& n : g.nodes)
    if (n.op != "Shape")  // which reads no values
      for (const auto& i : n.inputs) ++c.readers[i];
  ++c.readers[g.outputs[0].name];
  for (std::size_t k = 0; k < g.nodes.size(); ++k) {
    const node& n = g.nodes[k];
    if (!n.domain.empty() && n.domain != "ai.onnx") c.refuse(n, "is of the domain " + n.domain + ": the importer reads ai.onnx's operators");
    if (n.op == "Constant") {
      const auto* v = n.find("value");
      if (!v || !v->has_t || n.outputs.size() != 1) c.refuse(n, "gives no tensor (value): the importer reads a Constant's value");
      tensor t = v->t;
      t.name = n.outputs[0];
      c.constants[t.name] = std::move(t);
      continue;
    }
    if (c.shape_computation(n)) continue;
    const bool recurrent = n.op == "LSTM" || n.op == "GRU";
    // The tensors it reads of the graph (not constants): one, first, or two or more for a merge.
    std::vector<const value*> data;
    for (const auto& i : n.inputs) {
      if (i.empty() || c.constant(i)) continue;
      if (c.shapes.count(i) || c.zeros.count(i)) {
        // A recurrent node's initial states (recurrent() checks them), a Reshape's target.
        if (recurrent || (n.op == "Reshape" && n.inputs.size() > 1 && i == n.inputs[1] && c.shapes.count(i))) continue;
        c.refuse(n, "reads " + i + ", a shape or zeros filled from one: the importer takes those as a recurrent node's initial state alone");
      }
      const auto v = c.values.find(i);
      if (v == c.values.end()) c.refuse(n, "reads " + i + ", which neither the graph's input nor a node before it gives");
      data.push_back(&v->second);
    }
    if (n.outputs.empty() || n.outputs[0].empty()) c.refuse(n, "has no output");
    const bool merge = ((n.op == "Add" || n.op == "Sub" || n.op == "Mul") && data.size() == 2) || n.op == "Concat";
    if (merge) {
      for (const value* v : data)
        if (v->seq != value::sequence::none) c.refuse(n, "joins sequences: the importer joins [N, C, H, W] and [N, features]");
      c.merge(n, data);
      c.values[n.outputs[0]] = c;
      continue;
    }
    if (data.size() != 1 || n.inputs[0].empty() || c.constant(n.inputs[0]))
      c.refuse(n, "reads " + std::to_string(data.size()) + " tensors of the graph: it takes one, first");
    static_cast<value&>(c) = *data[0];
    c.fusable = c.direct && c.at == m.layers.size() && c.at > 0 && c.readers[n.inputs[0]] == 1;
    const std::size_t layers_before = m.layers.size();
    const std::string& op = n.op;
    // A sequence reaches what keeps its layout: in ONNX's time-first forms, the recurrent nodes
    // and the Transpose, Squeeze and Gather around them; batch first, element-wise nodes and
    // flattening too.
    if (c.seq != value::sequence::none) {
      const bool around = recurrent || op == "Transpose" || op == "Squeeze" || op == "Gather" || op == "Reshape" || op == "Dropout" || op == "Identity";
      const bool elementwise = op == "Relu" || op == "Sigmoid" || op == "Tanh" || op == "Elu" || op == "Selu" || op == "Softplus" || op == "Softsign" ||
                               op == "Clip" || op == "Mul" || op == "Add" || op == "Sub" || op == "Div" || op == "Flatten";
      if (!around && !(elementwise && c.seq == value::sequence::batch_first))
        c.refuse(n, c.seq == value::sequence::batch_first ? "reads a sequence [N, T, F]: the importer takes one into element-wise nodes, LSTM, GRU, Flatten and the last step's Gather"
                                                          : "reads a recurrent node's sequence in ONNX's layout: the importer takes the Squeeze and the Transpose to [N, T, F] after it");
    }
    if (recurrent) {
      const std::size_t output = c.recurrent(n);
      c.values[n.outputs[output]] = c;
      continue;
    }
    if (op == "Transpose") {
      c.transpose(n);
    } else if (op == "Squeeze") {
      c.squeeze(n);
    } else if (op == "Gather") {
      c.gather(n);
    } else if (op == "Unsqueeze" || op == "Slice" || op == "Cast" || op == "Expand" || op == "ConstantOfShape") {
      c.refuse(n, "reads the graph's data: the importer takes it over shapes, as a recurrent node's initial state");
    } else if (op == "Conv") {
      c.conv(n);
    } else if (op == "ConvTranspose") {
      c.conv_transpose(n);
    } else if (op == "MaxPool" || op == "AveragePool") {
      c.pool(n, op == "MaxPool");
    } else if (op == "GlobalAveragePool" || op == "GlobalMaxPool") {
      c.need_spatial(n);
      c.add(n, op == "GlobalAveragePool" ? "GlobalAveragePooling2D" : "GlobalMaxPooling2D");
      c.dims = {c.dims[0]};
      c.pooled = true;
    } else if (op == "ReduceMean" || op == "ReduceMax") {
      // Over H and W (PyTorch's default exporter writes AdaptiveAvgPool2d(1) so): a global pooling,
      // its [N, C, 1, 1] with keepdims, [N, C] without. The axes are an input from opset 18.
      c.need_spatial(n);
      std::vector<std::int64_t> axes = n.ints("axes", {});
      if (n.inputs.size() > 1 && !n.inputs[1].empty()) {
        const auto given = c.integers(n.inputs[1]);
        if (!given || c.shapes.count(n.inputs[1])) c.refuse(n, "takes its axes from the graph, not from a constant");
        axes = *given;
      }
      for (auto& a : axes) a = a < 0 ? a + 4 : a;
      std::sort(axes.begin(), axes.end());
      if (axes != std::vector<std::int64_t>{2, 3}) c.refuse(n, "reduces axes other than H and W (2 and 3): the importer takes a global pooling");
      c.add(n, op == "ReduceMean" ? "GlobalAveragePooling2D" : "GlobalMaxPooling2D");
      c.dims = {c.dims[0]};
      c.pooled = n.i("keepdims", 1) != 0;
    } else if (op == "Flatten") {
      if (n.i("axis", 1) != 1) c.refuse(n, "flattens from axis " + std::to_string(n.i("axis", 1)) + ": the importer takes axis 1");
      c.flatten(n);
    } else if (op == "Reshape") {
      // To [N, features], or to ONNX's [T, N, F] from a recurrent node's Y: the target's extents
      // (a constant, or computed from shapes) told against the input's; a leading 1 of a
      // constant [1, features] is the batch (a model exported at batch 1).
      auto target = n.inputs.size() > 1 ? c.integers(n.inputs[1]) : std::nullopt;
      if (!target) c.refuse(n, "reshapes to a shape computed from the graph's data");
      if (target->size() == 2 && (*target)[0] == 1 && !c.shapes.count(n.inputs[1])) (*target)[0] = walk::batch_extent;
      const auto from = walk::onnx_dims(c);
      const auto to = walk::reshaped(from, *target, n.i("allowzero", 0) != 0);
      using S = value::sequence;
      if ((c.seq == S::steps || c.seq == S::steps_batch) && to == std::vector<std::int64_t>{from[0], walk::batch_extent, from[3]}) {
        c.seq = S::time_first;
      } else if ((c.seq == S::none || c.seq == S::batch_first) && to.size() == 2 && to[0] == walk::batch_extent) {
        c.flatten(n);
      } else {
        c.refuse(n, "reshapes to a shape other than [N, features], or than [T, N, F] of a recurrent node's Y");
      }
    } else if (op == "Gemm") {
      c.gemm(n);
    } else if (op == "MatMul") {
      // A MatMul's bias: the Add after it of a constant (PyTorch's Linear without Gemm).
      const node* bias = nullptr;
      if (k + 1 < g.nodes.size()) {
        const node& a = g.nodes[k + 1];
        if (a.op == "Add" && a.inputs.size() == 2 && (a.inputs[0] == n.outputs[0] || a.inputs[1] == n.outputs[0]) &&
            c.constant(a.inputs[0] == n.outputs[0] ? a.inputs[1] : a.inputs[0]) && c.readers[n.outputs[0]] == 1)
          bias = &a;
      }
      c.matmul(n, bias);
      if (bias) {
        c.direct = true;
        c.values[bias->outputs[0]] = c;
        ++k;
        continue;
      }
    } else if (op == "BatchNormalization") {
      if (n.i("training_mode", 0) != 0) c.refuse(n, "is in training mode: the importer takes inference's");
      if (!c.flattened.empty()) c.refuse(n, "follows a Flatten of channels-first data: only activations may come between it and its Dense");
      auto& l = c.add(n, "BatchNormalization");
      l.epsilon = n.f("epsilon", 1e-5);
      const std::size_t channels = c.dims[0];
      const char* names[] = {"gamma", "beta", "moving_mean", "moving_variance"};
      for (std::size_t i = 0; i < 4; ++i) {
        const tensor& t = c.weight(n, i + 1, names[i]);
        if (t.count() != channels) c.refuse(n, std::string("has ") + std::to_string(t.count()) + " values of " + names[i] + " for " + std::to_string(channels) + " channels");
        l.weights.push_back({names[i], {channels}, t.values});
      }
    } else if (op == "Relu" || op == "Sigmoid" || op == "Tanh" || op == "Elu" || op == "Selu" || op == "Softplus" || op == "Softsign") {
      if (op == "Elu" && n.f("alpha", 1.0) != 1.0) c.refuse(n, "has an alpha other than 1");
      if (op == "Selu" && (n.find("alpha") || n.find("gamma"))) c.refuse(n, "has an alpha or gamma of its own: the embedded selu is SELU's");
      std::string a = op;
      std::transform(a.begin(), a.end(), a.begin(), [](char ch) { return char(std::tolower(static_cast<unsigned char>(ch))); });
      c.activation(n, a);
    } else if (op == "Clip") {
      double lo = -std::numeric_limits<double>::infinity(), hi = std::numeric_limits<double>::infinity();
      if (n.inputs.size() > 1 && !n.inputs[1].empty() && !scalar(c.constant(n.inputs[1]), lo)) c.refuse(n, "has a min that is not a constant scalar");
      if (n.inputs.size() > 2 && !n.inputs[2].empty() && !scalar(c.constant(n.inputs[2]), hi)) c.refuse(n, "has a max that is not a constant scalar");
      if (lo == 0 && hi == 6) c.activation(n, "relu6");
      else if (lo == 0 && std::isinf(hi)) c.activation(n, "relu");
      else c.refuse(n, "clips to [" + std::to_string(lo) + ", " + std::to_string(hi) + "]: the embedded activations clip to [0, 6] (relu6) or [0, inf) (relu)");
    } else if (op == "Softmax" || op == "LogSoftmax") {
      const std::int64_t axis = n.i("axis", -1), rank = std::int64_t(c.pooled ? 4 : c.dims.size() + 1);
      // The network's channels are last: ONNX's axis 1 of [N, C, H, W], or the last of [N, F].
      const bool channels = rank == 2 ? (axis == 1 || axis == -1) : (axis == 1 || axis == -3);
      if (!channels) c.refuse(n, "is over axis " + std::to_string(axis) + ": the embedded softmax is over the channels");
      c.activation(n, op == "Softmax" ? "softmax" : "log_softmax");
    } else if (op == "Mul" || op == "Add" || op == "Sub" || op == "Div") {
      double v;
      if (n.inputs.size() != 2 || !scalar(c.constant(n.inputs[1]), v))
        c.refuse(n, "has an operand other than a constant scalar after the data: the importer takes x " + std::string(op == "Mul" ? "*" : op == "Add" ? "+" : op == "Sub" ? "-" : "/") + " c");
      if (op == "Div" && v == 0) c.refuse(n, "divides by 0");
      if (op == "Mul") c.rescale(n, v, 0);
      else if (op == "Div") c.rescale(n, 1 / v, 0);
      else c.rescale(n, 1, op == "Add" ? v : -v);
    } else if (op == "Pad") {
      c.need_spatial(n);
      if (n.s("mode", "constant") != "constant") c.refuse(n, "pads in mode " + n.s("mode", "constant") + ": the embedded padding is constant");
      double value = 0;
      if (n.inputs.size() > 2 && !n.inputs[2].empty() && (!scalar(c.constant(n.inputs[2]), value) || value != 0)) c.refuse(n, "pads with a value other than 0");
      if (n.inputs.size() > 3 && !n.inputs[3].empty()) c.refuse(n, "pads some axes (axes): the importer takes the pads of every axis");
      const tensor& p = c.weight(n, 1, "pads");
      if (p.count() != 8 || p.values[0] != 0 || p.values[1] != 0 || p.values[4] != 0 || p.values[5] != 0)
        c.refuse(n, "pads more than the spatial axes: the embedded padding is over H and W");
      // [top, bottom, left, right] of ONNX's [begins of N, C, H, W, ends of N, C, H, W].
      std::array<std::size_t, 4> pads{};
      const std::size_t at[4] = {2, 6, 3, 7};
      for (std::size_t i = 0; i < 4; ++i) {
        const double v2 = p.values[at[i]];
        if (v2 < 0 || v2 > 1 << 20) c.refuse(n, "has the pad " + std::to_string(v2) + ": the embedded padding adds rows and columns");
        pads[i] = std::size_t(v2);
      }
      c.add(n, "ZeroPadding2D").pads = pads;
      c.dims = {c.dims[0], c.dims[1] + pads[0] + pads[1], c.dims[2] + pads[2] + pads[3]};
    } else if (op == "Dropout") {  // the identity in inference, as Identity is
      if (n.outputs.size() > 1 && !n.outputs[1].empty()) c.refuse(n, "gives its mask: only the values are imported");
    }
    // Its output is the last layer's where it added or fused one, else another name for what it
    // read (Dropout, Identity, a Flatten the network's rows already are).
    c.direct = m.layers.size() > layers_before || c.fusable;
    c.values[n.outputs[0]] = c;
  }
  const auto out = c.values.find(g.outputs[0].name);
  if (out == c.values.end()) fail(name, "the graph's output " + g.outputs[0].name + " is no node's");
  if (out->second.at != m.layers.size() || m.layers.empty())
    fail(name, "the graph's output " + g.outputs[0].name + " is not the last node's that adds a layer: the network's output is its last layer's");
  static_cast<value&>(c) = out->second;
  if (!c.flattened.empty()) fail(name, "the graph ends with a Flatten of channels-first data: its outputs' order is not the network's");
  if (c.seq != value::sequence::none && c.seq != value::sequence::batch_first)
    fail(name, "the graph ends with a recurrent node's sequence in ONNX's layout: the importer takes the Squeeze and the Transpose to [N, T, F] after it");
  if (c.spatial()) m.channels_first_output = c.dims;
  return m;
}

}  // namespace onnx_detail

CTFLOW_DECL embedded_model onnx_model(std::span<const std::uint8_t> bytes, const std::string& name) { return onnx_detail::read_model(bytes, name); }

}  // namespace ctflow::keras::detail
