#pragma once
/// @file
/// @brief Generated kernels of the ops that walk a line or a group of their operand in order:
/// argmax and argmin, cumsum, reduce_prod's adjoint, and the sparse softmax cross-entropy with its
/// two adjoints. One thread per line (per element for reduce_prod's adjoint), which runs the
/// reference device's loop over it, in its order and its precision (double for the softmax), so
/// results repeat bitwise; the operands are read through their strides. Labels are checked on the
/// device: one outside [0, classes) sets the kernel's status word, a value_error when it returns.

#include <cstddef>
#include <string>

#include <ctflow/backend/cuda/array_kernels.hpp>
#include <ctflow/ops/nn/losses.hpp>
#include <ctflow/ops/reduction.hpp>

namespace ctflow::backend::cuda {

namespace detail {

/// Source that sets `off` to the offset, in an operand with strides `strides` (rank `rank`), of
/// the start of the line of item c (c: the operand's coordinates without axis `axis`).
inline std::string line_start(std::size_t rank, int axis, const char* strides) {
  return "  long long off = 0;\n  for (int d = 0; d < " + std::to_string(rank) + " - 1; ++d) off += c[d] * a." + strides + "[d < " +
         std::to_string(axis) + " ? d : d + 1];\n";
}

}  // namespace detail

/// argmax / argmin: item (o, i) walks its line, keeping the first index among ties (a NaN wins).
template <class T, class SIn, int Axis, class SOut, bool Max> struct array_kernel<ops::along_axis_op<T, SIn, Axis, SOut, std::int64_t, ops::arg_fn<Max>>> {
  static constexpr bool defined = true;
  using K = ops::along_axis_op<T, SIn, Axis, SOut, std::int64_t, ops::arg_fn<Max>>;
  static constexpr std::size_t R = std::size_t(SIn::rank);
  static const generated_kernel& kernel() {
    static const generated_kernel k = [] {
      detail::array_source s("long long", "long long", R - 1);
      const std::string value = source_type<compute_t<T>>(), ax = std::to_string(Axis);
      s.fields = "  const " + std::string(source_type<T>()) + "* in;\n  long long strides[" + detail::array_extent(R) + "];\n  long long line;\n";
      s.item = detail::line_start(R, Axis, "strides") + "  " + value + " best = ctflow_load(a.in + off);\n  long long at = 0;\n" +
               "  for (long long j = 1; j < a.line; ++j) {\n    const " + value + " v = ctflow_load(a.in + off + j * a.strides[" + ax + "]);\n" +
               "    if ((v " + (Max ? ">" : "<") + " best) || (v != v && best == best)) {\n      best = v;\n      at = j;\n    }\n  }\n" +
               "  ctflow_store(a.out + i, at);\n";
      return s.assemble();
    }();
    return k;
  }
  template <class Scratch, class V> static array_launch plan(const K&, std::int64_t* out, const dims_t<R - 1>&, Scratch&&, const V& in) {
    const auto items = detail::lines_of(in.dims, Axis);
    auto p = detail::array_head(out, items);
    p.put(static_cast<const void*>(in.data));
    detail::put_strides(p, in);
    p.put(static_cast<long long>(in.dims[std::size_t(Axis)]));
    p.finish();
    return {std::move(p.bytes), product(items)};
  }
};

/// cumsum: item (o, i) walks its line (backwards where reverse), its sum so far in the compute
/// type written at each element (before adding it where exclusive).
template <class T, class SIn, int Axis> struct array_kernel<ops::along_axis_op<T, SIn, Axis, SIn, T, ops::cumsum_fn>> {
  static constexpr bool defined = true;
  using K = ops::along_axis_op<T, SIn, Axis, SIn, T, ops::cumsum_fn>;
  static constexpr std::size_t R = std::size_t(SIn::rank);
  static const generated_kernel& kernel() {
    static const generated_kernel k = [] {
      detail::array_source s(source_type<T>(), source_type<compute_t<T>>(), R - 1);
      const std::string rm = detail::array_extent(R), ax = std::to_string(Axis);
      s.fields = "  const " + std::string(source_type<T>()) + "* in;\n  long long strides[" + rm + "];\n  long long full[" + rm +
                 "];\n  long long exclusive, reverse;\n";
      s.item = detail::line_start(R, Axis, "strides") +
               "  long long to = 0, along = 1, scale = 1;  // the line's start in out (row-major), and its stride there\n"
               "  for (int d = " + std::to_string(R) + " - 1; d >= 0; --d) {\n    if (d == " + ax + ") along = scale;\n"
               "    else to += c[d < " + ax + " ? d : d - 1] * scale;\n    scale *= a.full[d];\n  }\n"
               "  const long long n = a.full[" + ax + "];\n  ctflow_value acc = 0;\n  for (long long s = 0; s < n; ++s) {\n"
               "    const long long j = a.reverse ? n - 1 - s : s;\n    const ctflow_value v = ctflow_load(a.in + off + j * a.strides[" + ax + "]);\n"
               "    if (a.exclusive) {\n      ctflow_store(a.out + to + j * along, acc);\n      acc += v;\n    } else {\n      acc += v;\n"
               "      ctflow_store(a.out + to + j * along, acc);\n    }\n  }\n";
      return s.assemble();
    }();
    return k;
  }
  template <class Scratch, class V> static array_launch plan(const K& k, T* out, const dims_t<R>&, Scratch&&, const V& in) {
    const auto items = detail::lines_of(in.dims, Axis);
    auto p = detail::array_head(out, items);
    p.put(static_cast<const void*>(in.data));
    detail::put_strides(p, in);
    detail::put_each(p, in.dims);
    p.put(static_cast<long long>(k.f.exclusive));
    p.put(static_cast<long long>(k.f.reverse));
    p.finish();
    return {std::move(p.bytes), product(items)};
  }
};

/// reduce_prod's adjoint: element e of a group is g's element of the group times the product of
/// the elements before e (in order) and of those after it (from the last), as the reference
/// device forms them.
template <class T, class SIn, std::size_t RO> struct array_kernel<ops::prod_adjoint_op<T, SIn, RO>> {
  static constexpr bool defined = true;
  using K = ops::prod_adjoint_op<T, SIn, RO>;
  static constexpr std::size_t R = K::R;
  static const generated_kernel& kernel() {
    static const generated_kernel k = [] {
      detail::array_source s(source_type<T>(), source_type<compute_t<T>>(), R);
      const std::string rm = detail::array_extent(R);
      s.fields = "  const " + std::string(source_type<T>()) + "* x;\n  long long xstrides[" + rm + "];\n  const " + source_type<T>() +
                 "* g;\n  long long gstrides[" + rm + "];  // per axis of x: 0 on reduced axes\n  long long reduced[" + rm +
                 "];  // x's extents on reduced axes, 1 elsewhere\n";
      s.helpers = R"(// The offset in x of member k of the group that starts at base (its reduced axes' coordinates
// are k's in row-major order over them).
__device__ __forceinline__ long long ctflow_member(const ctflow_args& a, long long base, long long k) {
  for (int d = R - 1; d >= 0; --d) {
    base += (k % a.reduced[d]) * a.xstrides[d];
    k /= a.reduced[d];
  }
  return base;
}
)";
      s.item = "  long long base = 0, from = 0, self = 0, count = 1;\n  for (int d = 0; d < R; ++d) {\n"
               "    if (a.reduced[d] == 1) base += c[d] * a.xstrides[d];\n    else self = self * a.reduced[d] + c[d];\n"
               "    count *= a.reduced[d];\n    from += c[d] * a.gstrides[d];\n  }\n"
               "  ctflow_value before = 1, after = 1;\n"
               "  for (long long k = 0; k < self; ++k) before *= ctflow_value(ctflow_load(a.x + ctflow_member(a, base, k)));\n"
               "  for (long long k = count - 1; k > self; --k) after *= ctflow_value(ctflow_load(a.x + ctflow_member(a, base, k)));\n"
               "  ctflow_store(a.out + i, ctflow_value(ctflow_load(a.g + from)) * (before * after));\n";
      return s.assemble();
    }();
    return k;
  }
  template <class Scratch, class VX, class VG> static array_launch plan(const K& k, T* out, const dims_t<R>& d, Scratch&&, const VX& x, const VG& g) {
    std::array<long long, R> gstrides{}, reduced{};
    // g's axes are x's kept axes (all of x's, extent 1 where reduced, with keepdims).
    for (std::size_t a = 0, j = 0; a < R; ++a) {
      reduced[a] = k.reduced[a] ? static_cast<long long>(d[a]) : 1;
      if constexpr (RO == R) gstrides[a] = k.reduced[a] ? 0 : static_cast<long long>(g.strides[a]);
      else if (!k.reduced[a]) gstrides[a] = static_cast<long long>(g.strides[j++]);
    }
    auto p = detail::array_head(out, d);
    p.put(static_cast<const void*>(x.data));
    detail::put_strides(p, x);
    p.put(static_cast<const void*>(g.data));
    detail::put_each(p, gstrides);
    detail::put_each(p, reduced);
    p.finish();
    return {std::move(p.bytes), product(d)};
  }
};

namespace detail {

/// The sparse softmax cross-entropy's kernels: item r is a row (the labels' extents); `value`
/// is the body after the row's label is read and checked (`x`: the row's start in the logits,
/// `step`: their stride along the classes, `label`).
template <class T, class I, std::size_t RL> generated_kernel xent_source(const std::string& extra_fields, const std::string& value) {
  array_source s(source_type<T>(), source_type<compute_t<T>>(), RL);
  const std::string rm = array_extent(RL);
  s.fields = "  const " + std::string(source_type<I>()) + "* labels;\n  long long lstrides[" + rm + "];\n  const " + source_type<T>() +
             "* logits;\n  long long xstrides[" + std::to_string(RL + 1) + "];\n  long long classes;\n" + extra_fields;
  s.helpers = R"(// A row's max and sum(exp(x - max)), in double; the softmax is exp(x - max) / sum, and
// log(sum(exp(x))) is log(sum) + max.
__device__ __forceinline__ void ctflow_softmax(const ctflow_args& a, long long x, long long step, double* max, double* sum) {
  double m = double(ctflow_load(a.logits + x));
  for (long long j = 1; j < a.classes; ++j) m = math::max(m, double(ctflow_load(a.logits + x + j * step)));
  double s = 0;
  for (long long j = 0; j < a.classes; ++j) s += math::exp(double(ctflow_load(a.logits + x + j * step)) - m);
  *max = m;
  *sum = s;
}
)";
  s.item = "  long long at = 0, x = 0;\n  for (int d = 0; d < R; ++d) {\n    at += c[d] * a.lstrides[d];\n    x += c[d] * a.xstrides[d];\n  }\n"
           "  const long long step = a.xstrides[" + std::to_string(RL) + "];\n"
           "  const long long label = (long long)ctflow_load(a.labels + at);\n"
           "  if (label < 0 || label >= a.classes) {\n    CTFLOW_STATUS = 1;\n    return;\n  }\n" + value;
  s.failures = {std::string(nn::detail::sparse_name) + ": Received a label value which is outside the valid range of [0, classes)"};
  return s.assemble();
}

template <std::size_t RL, class VL, class VX> argument_packer xent_head(void* out, const dims_t<RL>& rows, const VL& labels, const VX& logits) {
  auto p = array_head(static_cast<unsigned char*>(out), rows);
  p.put(static_cast<const void*>(labels.data));
  put_strides(p, labels);
  p.put(static_cast<const void*>(logits.data));
  put_strides(p, logits);
  p.put(static_cast<long long>(logits.dims[RL]));
  return p;
}

}  // namespace detail

/// The per-row losses; where saving (value_and_grad), the softmax as well: the rows' values, then a
/// scale of 1 per row.
template <class T, class I, class SL, class SX> struct array_kernel<nn::detail::sparse_xent_op<T, I, SL, SX>> {
  static constexpr bool defined = true;
  static constexpr bool saving = true;  // plan_saving
  using K = nn::detail::sparse_xent_op<T, I, SL, SX>;
  static constexpr std::size_t RL = K::RL;
  static const generated_kernel& kernel() {
    static const generated_kernel k = detail::xent_source<T, I, RL>(
        "  " + std::string(source_type<T>()) + "* saved;  // null: not saving\n  long long rows;\n",
        "  double m, sum;\n  ctflow_softmax(a, x, step, &m, &sum);\n"
        "  ctflow_store(a.out + i, ctflow_value(math::log(sum) + m - double(ctflow_load(a.logits + x + label * step))));\n"
        "  if (!a.saved) return;\n"
        "  for (long long j = 0; j < a.classes; ++j)\n"
        "    ctflow_store(a.saved + i * a.classes + j, ctflow_value(math::exp(double(ctflow_load(a.logits + x + j * step)) - m) / sum));\n"
        "  ctflow_store(a.saved + a.rows * a.classes + i, ctflow_value(1));\n");
    return k;
  }
  template <class Scratch, class VL, class VX>
  static array_launch plan(const K& k, T* out, const dims_t<RL>& d, Scratch&& scratch, const VL& labels, const VX& logits) {
    return plan_saving(k, out, nullptr, d, scratch, labels, logits);
  }
  template <class Scratch, class VL, class VX>
  static array_launch plan_saving(const K&, T* out, T* saved, const dims_t<RL>& d, Scratch&&, const VL& labels, const VX& logits) {
    auto p = detail::xent_head(out, d, labels, logits);
    p.put(static_cast<void*>(saved));
    p.put(static_cast<long long>(product(d)));
    p.finish();
    return {std::move(p.bytes), product(d)};
  }
};

/// The logits' adjoint from the logits: g * (softmax(x) - one_hot(label)), the softmax again in
/// double (the forward losses, an operand, are not read).
template <class T, class I, class SL, class SX> struct array_kernel<nn::detail::sparse_xent_grad_op<T, I, SL, SX>> {
  static constexpr bool defined = true;
  using K = nn::detail::sparse_xent_grad_op<T, I, SL, SX>;
  static constexpr std::size_t RL = K::RL, RX = K::RX;
  static const generated_kernel& kernel() {
    static const generated_kernel k = detail::xent_source<T, I, RL>(
        "  const " + std::string(source_type<T>()) + "* g;\n  long long gstrides[" + detail::array_extent(RL) + "];\n",
        "  long long from = 0;\n  for (int d = 0; d < R; ++d) from += c[d] * a.gstrides[d];\n"
        "  double m, sum;\n  ctflow_softmax(a, x, step, &m, &sum);\n"
        "  const double gr = double(ctflow_load(a.g + from));\n  for (long long j = 0; j < a.classes; ++j) {\n"
        "    const double p = math::exp(double(ctflow_load(a.logits + x + j * step)) - m) / sum;\n"
        "    ctflow_store(a.out + i * a.classes + j, ctflow_value(gr * (p - (j == label ? 1.0 : 0.0))));\n  }\n");
    return k;
  }
  template <class Scratch, class VL, class VX, class VY, class VG>
  static array_launch plan(const K&, T* out, const dims_t<RX>& d, Scratch&&, const VL& labels, const VX& logits, const VY&, const VG& g) {
    const auto rows = detail::lines_of(d, int(RX) - 1);
    auto p = detail::xent_head(out, rows, labels, logits);
    p.put(static_cast<const void*>(g.data));
    detail::put_strides(p, g);
    p.finish();
    return {std::move(p.bytes), product(rows)};
  }
};

/// The logits' adjoint from the saved softmax p and scale: g * (p * scale - one_hot(label)) (the
/// saved rows are the kernel's `logits`).
template <class T, class I, class SL, class SX> struct array_kernel<nn::detail::sparse_xent_saved_grad_op<T, I, SL, SX>> {
  static constexpr bool defined = true;
  using K = nn::detail::sparse_xent_saved_grad_op<T, I, SL, SX>;
  static constexpr std::size_t RL = K::RL, RX = K::RX;
  static const generated_kernel& kernel() {
    static const generated_kernel k = detail::xent_source<T, I, RL>(
        ("  const " + std::string(source_type<T>()) + "* scale;\n  long long sstrides[" + detail::array_extent(RL) + "];\n  const " +
         std::string(source_type<T>()) + "* g;\n  long long gstrides[" + detail::array_extent(RL) + "];\n"),
        "  long long from = 0, s = 0;\n  for (int d = 0; d < R; ++d) {\n    from += c[d] * a.gstrides[d];\n    s += c[d] * a.sstrides[d];\n  }\n"
        "  const double gr = double(ctflow_load(a.g + from)), scale = double(ctflow_load(a.scale + s));\n"
        "  for (long long j = 0; j < a.classes; ++j)\n"
        "    ctflow_store(a.out + i * a.classes + j, ctflow_value(gr * (double(ctflow_load(a.logits + x + j * step)) * scale - (j == label ? 1.0 : 0.0))));\n");
    return k;
  }
  template <class Scratch, class VL, class VP, class VS, class VG>
  static array_launch plan(const K&, T* out, const dims_t<RX>& d, Scratch&&, const VL& labels, const VP& saved, const VS& scale, const VG& g) {
    const auto rows = detail::lines_of(d, int(RX) - 1);
    auto p = detail::xent_head(out, rows, labels, saved);
    p.put(static_cast<const void*>(scale.data));
    detail::put_strides(p, scale);
    p.put(static_cast<const void*>(g.data));
    detail::put_strides(p, g);
    p.finish();
    return {std::move(p.bytes), product(rows)};
  }
};

}  // namespace ctflow::backend::cuda
