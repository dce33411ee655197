#pragma once
// What the evaluator tells the profiler and check_numerics about a node it ran: the node's name
// (a kernel's, or the element-wise ops of a fused loop), its shapes, the bytes it moved, its time,
// and whether its result holds a NaN or an infinity.
//
// Compile time matters here: this runs for every node type of every program, so the per-type
// part is kept to a type's name (__PRETTY_FUNCTION__) and its result's address and extents;
// naming, checking and recording are ordinary functions, compiled once.

#include <algorithm>
#include <cctype>
#include <cmath>
#include <initializer_list>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <ctflow/core/concepts.hpp>
#include <ctflow/core/errors.hpp>
#include <ctflow/detail/linkage.hpp>
#include <ctflow/detail/platform.hpp>
#include <ctflow/detail/profile.hpp>
#include <ctflow/expr/node.hpp>

namespace ctflow::detail::observe {

/// The compiler's text of T's name, inside its function signature.
template <class T> constexpr std::string_view pretty_name() { return __PRETTY_FUNCTION__; }

namespace text {

inline bool ident(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

/// Index just past the '>' that closes the '<' at s[open].
inline std::size_t skip_angles(std::string_view s, std::size_t open) {
  int depth = 0;
  for (std::size_t i = open; i < s.size(); ++i) {
    if (s[i] == '<') ++depth;
    else if (s[i] == '>' && --depth == 0) return i + 1;
  }
  return s.size();
}

/// The short name of a functor or kernel type name: namespaces, template arguments and the "_fn"
/// or "_kernel" suffix removed ("ctflow::ops::matmul_op<float, ...>" -> "matmul").
inline std::string short_name(std::string_view t) {
  t = t.substr(0, t.find('<'));
  if (const auto c = t.rfind("::"); c != std::string_view::npos) t = t.substr(c + 2);
  for (std::string_view suffix : {"_fn", "_op"})
    if (t.size() > suffix.size() && t.substr(t.size() - suffix.size()) == suffix) t.remove_suffix(suffix.size());
  return std::string(t);
}

/// The label of an expression type's text: a kernel's short name, "" for a tensor, else the
/// element-wise ops of the fused loop in pre-order, repeats dropped, computed operands (which run
/// as nodes of their own) skipped: "exp", "fused[sigmoid,add,multiply]", or "copy".
inline std::string label_of(std::string_view pretty) {
  const auto at = pretty.find("T = ");
  std::string_view t = pretty.substr(at + 4, pretty.find_first_of(";]", at + 4) - at - 4);
  constexpr std::string_view computed = "ctflow::expr::Computed<";
  if (t.substr(0, computed.size()) == computed) return short_name(t.substr(computed.size()));
  for (std::string_view leaf : {"ctflow::Tensor<", "ctflow::TensorView<", "ctflow::Variable<"})
    if (t.substr(0, leaf.size()) == leaf) return "";
  std::vector<std::string> ops;
  const auto add = [&](std::string op) {
    if (std::find(ops.begin(), ops.end(), op) == ops.end()) ops.push_back(std::move(op));
  };
  std::size_t count = 0;
  for (std::size_t i = 0; i < t.size();) {
    if (t.substr(i, computed.size()) == computed) {
      i = skip_angles(t, i + computed.size() - 1);
      continue;
    }
    if (!ident(t[i])) { ++i; continue; }
    std::size_t j = i;
    while (j < t.size() && ident(t[j])) ++j;
    const std::string_view word = t.substr(i, j - i);
    if (word == "Select") { add("where"); ++count; }
    if (word.size() > 3 && word.substr(word.size() - 3) == "_fn") {
      add(short_name(word));
      ++count;
      if (j < t.size() && t[j] == '<') j = skip_angles(t, j);  // a functor's own arguments (lambdas...)
    }
    i = j;
  }
  if (count == 0) return "copy";
  if (count == 1) return ops[0];
  std::string s = "fused[";
  for (std::size_t i = 0; i < ops.size(); ++i) s += (i ? "," : "") + ops[i];
  return s + "]";
}

}  // namespace text

/// The label of type E (see text::label_of), computed once per type.
CTFLOW_OUTLINE inline const std::string& label(std::string_view pretty) {
  static detail::mutex m;
  static std::map<const char*, std::string> cache;  // keyed by the name's address: one per type
  std::lock_guard lk(m);
  auto it = cache.find(pretty.data());
  if (it == cache.end()) it = cache.emplace(pretty.data(), text::label_of(pretty)).first;
  return it->second;
}
template <class E> const std::string& label() { return label(pretty_name<std::remove_cvref_t<E>>()); }

/// A node's result, type-erased.
struct result_ref {
  const void* data;
  const std::size_t* dims;
  std::size_t rank, element_size;
  char kind;  // 'f' float, 'd' double, 'b' bfloat16, 'h' float16, '-' not floating
};
template <class T> result_ref result(const T* data, const std::size_t* d, std::size_t rank) {
  constexpr char k = std::is_same_v<T, float> ? 'f' : std::is_same_v<T, double> ? 'd' : std::is_same_v<T, bfloat16> ? 'b'
                                                    : std::is_same_v<T, float16> ? 'h' : '-';
  return {data, d, rank, sizeof(T), k};
}
template <class T, std::size_t R> result_ref result(const T* data, const dims_t<R>& d) { return result(data, d.data(), R); }

/// Adds an operand (extents and element size) to a node's input description.
inline void add_input(std::string& shapes, std::uint64_t& bytes, const std::size_t* d, std::size_t r, std::size_t element_size) {
  shapes += (shapes.empty() ? "" : " x ") + format_dims(std::span(d, r));
  std::uint64_t n = element_size;
  for (std::size_t i = 0; i < r; ++i) n *= d[i];
  bytes += n;
}

/// The operands a fused loop reads from memory (leaves and computed results).
template <class E> void fused_inputs(const E& e, std::string& shapes, std::uint64_t& bytes) {
  if constexpr (is_leaf_v<E> || expr::is_computed<std::remove_cvref_t<E>>::value) {
    const auto d = e.dims();
    add_input(shapes, bytes, d.data(), d.size(), sizeof(value_t<E>));
  } else {
    expr::any_operand(e, [&](const auto& o) { fused_inputs(o, shapes, bytes); return false; });
  }
}

/// Throws numerics_error when r holds a NaN or an infinity, naming who made it and where.
inline void check_finite(const std::string& who, const result_ref& r) {
  if (r.kind == '-') return;
  std::size_t n = 1;
  for (std::size_t i = 0; i < r.rank; ++i) n *= r.dims[i];
  for (std::size_t i = 0; i < n; ++i) {
    double v;
    switch (r.kind) {
      case 'f': v = static_cast<const float*>(r.data)[i]; break;
      case 'd': v = static_cast<const double*>(r.data)[i]; break;
      case 'b': v = float(static_cast<const bfloat16*>(r.data)[i]); break;
      default: v = float(static_cast<const float16*>(r.data)[i]); break;
    }
    if (std::isfinite(v)) continue;
    std::vector<std::size_t> idx(r.rank);
    for (std::size_t k = r.rank, rest = i; k-- > 0;) {
      idx[k] = rest % r.dims[k];
      rest /= r.dims[k];
    }
    ctflow::detail::raise<numerics_error>(who + ": " + (std::isnan(v) ? "NaN" : (v > 0 ? "Inf" : "-Inf")) + " at index " + format_dims(idx) + " of its " +
                         format_dims(std::span(r.dims, r.rank)) + " result");
  }
}

/// After a node ran on device from begin (profile::now_ns) and wrote r: checks it and records it, as asked.
CTFLOW_OUTLINE inline void finish(const std::string& name, const char* device, std::int64_t begin, const result_ref& r, const std::string& inputs, std::uint64_t in_bytes) {
  const std::int64_t end = profile::now_ns();
  if (profile::on(profile::checking_numerics)) check_finite("ctflow::debugging::check_numerics: op " + name, r);
  if (profile::on(profile::profiling)) {
    std::uint64_t out = r.element_size;
    for (std::size_t i = 0; i < r.rank; ++i) out *= r.dims[i];
    profile::record({name, "op", (inputs.empty() ? "" : inputs + " -> ") + format_dims(std::span(r.dims, r.rank)), device, begin, end - begin,
                     in_bytes + out, 0});
  }
}

/// An operand's extents and element size, as the profiler describes a node's inputs.
struct input_ref {
  const std::size_t* dims;
  std::size_t rank, element_size;
};

/// finish() for an op node: its label and its operands' extents. Compiled once.
CTFLOW_OUTLINE inline void finish_op(const std::string& label, const char* device, std::int64_t begin, const result_ref& r,
                                     std::initializer_list<input_ref> inputs) {
  std::string shapes;
  std::uint64_t bytes = 0;
  for (const input_ref& i : inputs) add_input(shapes, bytes, i.dims, i.rank, i.element_size);
  finish(label, device, begin, r, shapes, bytes);
}

/// After op node N ran on device from begin into out (extents d), over its operands' memory
/// views: finish() with the op's label and its inputs. A node's label is its op's, so the
/// evaluators name N as expr::Computed<K> of the op K alone: one label per op, not per node.
template <class N, class T, std::size_t R, class... V>
void finish_op(const char* device, std::int64_t begin, const T* out, const dims_t<R>& d, const V&... inputs) {
  finish_op(label<N>(), device, begin, result(out, d), {input_ref{inputs.dims.data(), inputs.dims.size(), sizeof(*inputs.data)}...});
}

/// After the fused loop of element-wise expression e ran on device from begin into out: finish()
/// with its label and the operands it read from memory.
template <class E, class T, std::size_t R> void finish_fused(const char* device, std::int64_t begin, const E& e, const T* out, const dims_t<R>& d) {
  std::string shapes;
  std::uint64_t bytes = 0;
  fused_inputs(e, shapes, bytes);
  finish(label<E>(), device, begin, result(out, d), shapes, bytes);
}

}  // namespace ctflow::detail::observe
