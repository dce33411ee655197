#pragma once
/// @file
/// @brief Generated kernels of the shape ops that build new tensors (concat, gather, one_hot,
/// pad, tile) and of their adjoints (a view's, pad's, tile's and gather's), each op's source a
/// function of its type alone, as the element-wise kernels' are (codegen.hpp): one thread per
/// output element, which computes where it reads, in a grid-stride loop with 32- or 64-bit
/// indices; extents, strides, addresses and values are arguments.
///
/// The adjoints that add several elements into one sum them in double for floating dtypes, in the
/// reference device's order (row-major over the gradient), so results repeat bitwise: tile's sums
/// each input element's copies; a view's sums over its broadcast axes, one thread per element it
/// writes (one thread over all of them where a view reads an element through two different
/// indices, which no view of ctflow's does); gather's walks the indices in order, one thread per
/// column of the params, into a double scratch then converted. gather's indices are checked on
/// the device: one out of range sets the kernel's status word, a value_error when it returns.

#include <algorithm>
#include <array>
#include <cstddef>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <ctflow/backend/cuda/codegen.hpp>
#include <ctflow/core/dtype.hpp>
#include <ctflow/expr/strided.hpp>
#include <ctflow/ops/array.hpp>

namespace ctflow::backend::cuda {

namespace detail {

/// Where adjoints add: double for floating dtypes, the compute type otherwise (the reference
/// device's).
template <class T> using array_sum_t = std::conditional_t<is_floating_v<T>, double, compute_t<T>>;

/// The parts of an array kernel's source. Its items are the elements of `dims` (rank `rank`), in
/// row-major order; `item` is the body of `ctflow_item(a, i, c)` (c: item i's coordinates;
/// `Serial` true where one thread runs every item in order). With a scratch type, the argument
/// struct holds `scratch` (that many elements, zeroed before the launch) and `total`, and the
/// source has the entries `_serial` (one thread) and `_finish32/64` (scratch converted into out).
struct array_source {
  array_source(const char* out, const char* value, std::size_t r, const char* sum = nullptr)
      : out_type(out), value_type(value), sum_type(sum ? sum : value), rank(r) {}
  const char* out_type;    // out's storage
  const char* value_type;  // what is stored there (its compute type): ctflow_value
  const char* sum_type;    // where the adjoints add: ctflow_sum
  std::size_t rank;
  std::string fields;   // after out, n, dims (and scratch, total)
  std::string helpers;  // before ctflow_item (ctflow_value names the value type)
  std::string item;
  const char* scratch_type = nullptr;
  std::vector<std::string> failures;

  generated_kernel assemble() const {
    const std::string rm = std::to_string(rank > 0 ? rank : 1);
    std::string body = "struct ctflow_args {\n  " + std::string(out_type) + "* out;\n  long long n;\n  long long dims[" + rm + "];\n";
    if (scratch_type) body += "  " + std::string(scratch_type) + "* scratch;\n  long long total;\n";
    body += fields + "};\n\nconstexpr int R = " + std::to_string(rank) + ", RM = " + rm + ";\nusing ctflow_value = " + value_type + ";\nusing ctflow_sum = " + sum_type + ";\n\n" + helpers;
    body += "template <bool Serial> __device__ __forceinline__ void ctflow_item(const ctflow_args& a, long long i, const long long* c) {\n" + item + "}\n";
    body += R"(
// A grid-stride loop over the items, each a thread's.
template <class I> __device__ __forceinline__ void ctflow_loop(const ctflow_args& a) {
  const I n = I(a.n), step = I(gridDim.x) * I(blockDim.x);
  for (I i = I(blockIdx.x) * I(blockDim.x) + I(threadIdx.x); i < n; i += step) {
    long long c[RM] = {};
    I rest = i;
    for (int d = R - 1; d >= 0; --d) {
      c[d] = (long long)(rest % I(a.dims[d]));
      rest /= I(a.dims[d]);
    }
    ctflow_item<false>(a, (long long)i, c);
  }
}
)";
    std::initializer_list<std::pair<const char*, const char*>> plain = {{"items32", "ctflow_loop<int>"}, {"items64", "ctflow_loop<long long>"}};
    std::initializer_list<std::pair<const char*, const char*>> with_scratch = {
        {"items32", "ctflow_loop<int>"}, {"items64", "ctflow_loop<long long>"}, {"serial", "ctflow_serial"},
        {"finish32", "ctflow_finish<int>"}, {"finish64", "ctflow_finish<long long>"}};
    if (scratch_type) body += R"(
// One thread runs every item in order.
__device__ __forceinline__ void ctflow_serial(const ctflow_args& a) {
  if (blockIdx.x != 0 || threadIdx.x != 0) return;
  long long c[RM] = {};
  for (long long i = 0; i < a.n; ++i) {
    ctflow_item<true>(a, i, c);
    for (int d = R - 1; d >= 0; --d) {
      if (++c[d] < a.dims[d]) break;
      c[d] = 0;
    }
  }
}

// The scratch's sums into out, in its dtype.
template <class I> __device__ __forceinline__ void ctflow_finish(const ctflow_args& a) {
  const I n = I(a.total), step = I(gridDim.x) * I(blockDim.x);
  for (I i = I(blockIdx.x) * I(blockDim.x) + I(threadIdx.x); i < n; i += step) ctflow_store(a.out + i, ctflow_value(a.scratch[i]));
}
)";
    return detail::assemble(body, scratch_type ? with_scratch : plain, failures);
  }
};

inline std::string array_extent(std::size_t r) { return std::to_string(r > 0 ? r : 1); }

/// Extents d without axis `axis`: the lines along it (a line op's items, gather's columns).
template <std::size_t R> dims_t<(R > 0 ? R - 1 : 0)> lines_of(const dims_t<R>& d, int axis) {
  dims_t<(R > 0 ? R - 1 : 0)> out{};
  for (std::size_t a = 0, o = 0; a < R; ++a)
    if (int(a) != axis) out[o++] = d[a];
  return out;
}

/// What gather's kernels report for an index outside [0, n).
inline constexpr const char* gather_failure = "ctflow::gather: an index out of range of the gathered axis";

/// Puts a view's strides (rank R, at least one field) into p.
template <class V> void put_strides(argument_packer& p, const V& v) {
  constexpr std::size_t R = std::tuple_size_v<decltype(v.dims)>;
  for (std::size_t k = 0; k < (R > 0 ? R : 1); ++k) p.put(k < R ? static_cast<long long>(v.strides[k]) : 0ll);
}
template <std::size_t R, class X> void put_each(argument_packer& p, const std::array<X, R>& xs) {
  for (std::size_t k = 0; k < (R > 0 ? R : 1); ++k) p.put(k < R ? static_cast<long long>(xs[k]) : 0ll);
}

}  // namespace detail

/// One launch of an array kernel: its argument bytes and items; `serial` where one thread runs
/// them; `scratch` the bytes of scratch the arguments point to (0: none); `zero_out` where the
/// output starts as zeros (elements no item writes).
struct array_launch {
  std::vector<unsigned char> args;
  std::size_t items = 0;
  bool serial = false;
  std::size_t scratch = 0;
  bool zero_out = false;
};

/// The kernel of array op K: `kernel()` its source, `plan(k, out, d, scratch, views...)` its launch
/// (scratch(bytes) gives device memory for its scratch).
template <class K> struct array_kernel {
  static constexpr bool defined = false;
};

namespace detail {
/// The argument struct's head: out, the items' count and extents.
template <class T, std::size_t R> argument_packer array_head(T* out, const dims_t<R>& items) {
  argument_packer p;
  p.put(static_cast<void*>(out));
  p.put(static_cast<long long>(product(items)));
  put_each(p, items);
  return p;
}
/// The same for a kernel with a scratch: its address (null where unused) and elements follow.
template <class T, std::size_t R> argument_packer array_head(T* out, const dims_t<R>& items, void* scratch, std::size_t total) {
  argument_packer p = array_head(out, items);
  p.put(scratch);
  p.put(static_cast<long long>(total));
  return p;
}
}  // namespace detail

/// concat: item c reads operand p at c less the extents of those before p along Axis.
template <class T, class S, int Axis, std::size_t N> struct array_kernel<ops::concat_op<T, S, Axis, N>> {
  static constexpr bool defined = true;
  static constexpr std::size_t R = std::size_t(S::rank);
  static const generated_kernel& kernel() {
    static const generated_kernel k = [] {
      detail::array_source s(source_type<T>(), source_type<compute_t<T>>(), R);
      s.fields = "  const " + std::string(source_type<T>()) + "* in[" + std::to_string(N) + "];\n  long long strides[" + std::to_string(N) + "][" +
                 detail::array_extent(R) + "];\n  long long along[" + std::to_string(N) + "];\n";
      s.item = "  long long x = c[" + std::to_string(Axis) + "];\n  int p = 0;\n  while (p < " + std::to_string(N) +
               " - 1 && x >= a.along[p]) x -= a.along[p++];\n  long long off = 0;\n  for (int d = 0; d < R; ++d) off += (d == " +
               std::to_string(Axis) + " ? x : c[d]) * a.strides[p][d];\n  ctflow_store(a.out + i, ctflow_load(a.in[p] + off));\n";
      return s.assemble();
    }();
    return k;
  }
  template <class Scratch, class... V> static array_launch plan(const ops::concat_op<T, S, Axis, N>& k, T* out, const dims_t<R>& d, Scratch&&, const V&... in) {
    auto p = detail::array_head(out, d);
    (p.put(static_cast<const void*>(in.data)), ...);
    (detail::put_strides(p, in), ...);
    for (const std::size_t x : k.along) p.put(static_cast<long long>(x));
    p.finish();
    return {std::move(p.bytes), product(d)};
  }
};

/// gather: item (o, j, i) reads params[o, idx[j], i]; an index out of range sets the status.
template <class T, class SP, class SI, class S, int Axis, class I> struct array_kernel<ops::gather_op<T, SP, SI, S, Axis, I>> {
  static constexpr bool defined = true;
  static constexpr std::size_t R = std::size_t(S::rank), RP = std::size_t(SP::rank), RI = std::size_t(SI::rank);
  static const generated_kernel& kernel() {
    static const generated_kernel k = [] {
      detail::array_source s(source_type<T>(), source_type<compute_t<T>>(), R);
      s.fields = "  const " + std::string(source_type<T>()) + "* params;\n  long long pstrides[" + detail::array_extent(RP) + "];\n  const " +
                 source_type<I>() + "* idx;\n  long long istrides[" + detail::array_extent(RI) + "];\n  long long extent;\n";
      const std::string ax = std::to_string(Axis), ri = std::to_string(RI), rp = std::to_string(RP);
      s.item = "  long long at = 0;\n  for (int j = 0; j < " + ri + "; ++j) at += c[" + ax + " + j] * a.istrides[j];\n" +
               "  const long long r = (long long)ctflow_load(a.idx + at);\n" +
               "  if (r < 0 || r >= a.extent) { CTFLOW_STATUS = 1; return; }\n  long long off = r * a.pstrides[" + ax + "];\n" +
               "  for (int d = 0; d < " + ax + "; ++d) off += c[d] * a.pstrides[d];\n" + "  for (int d = " + ax + " + 1; d < " + rp +
               "; ++d) off += c[d - 1 + " + ri + "] * a.pstrides[d];\n  ctflow_store(a.out + i, ctflow_load(a.params + off));\n";
      s.failures = {detail::gather_failure};
      return s.assemble();
    }();
    return k;
  }
  template <class Scratch, class VP, class VI>
  static array_launch plan(const ops::gather_op<T, SP, SI, S, Axis, I>&, T* out, const dims_t<R>& d, Scratch&&, const VP& params, const VI& idx) {
    auto p = detail::array_head(out, d);
    p.put(static_cast<const void*>(params.data));
    detail::put_strides(p, params);
    p.put(static_cast<const void*>(idx.data));
    detail::put_strides(p, idx);
    p.put(static_cast<long long>(params.dims[std::size_t(Axis)]));
    p.finish();
    return {std::move(p.bytes), product(d)};
  }
};

/// one_hot: item (j, d) is on where idx[j] == d, else off.
template <class T, class I, class SI, class S> struct array_kernel<ops::one_hot_op<T, I, SI, S>> {
  static constexpr bool defined = true;
  static constexpr std::size_t R = std::size_t(S::rank), RI = std::size_t(SI::rank);
  static const generated_kernel& kernel() {
    static const generated_kernel k = [] {
      detail::array_source s(source_type<T>(), source_type<compute_t<T>>(), R);
      const std::string value = source_type<compute_t<T>>();
      s.fields = "  const " + std::string(source_type<I>()) + "* idx;\n  long long istrides[" + detail::array_extent(RI) + "];\n  " + value +
                 " on, off;\n";
      s.item = "  long long at = 0;\n  for (int j = 0; j < R - 1; ++j) at += c[j] * a.istrides[j];\n"
               "  ctflow_store(a.out + i, (long long)ctflow_load(a.idx + at) == c[R - 1] ? a.on : a.off);\n";
      return s.assemble();
    }();
    return k;
  }
  template <class Scratch, class VI> static array_launch plan(const ops::one_hot_op<T, I, SI, S>& k, T* out, const dims_t<R>& d, Scratch&&, const VI& idx) {
    auto p = detail::array_head(out, d);
    p.put(static_cast<const void*>(idx.data));
    detail::put_strides(p, idx);
    p.put(compute_t<T>(k.on));
    p.put(compute_t<T>(k.off));
    p.finish();
    return {std::move(p.bytes), product(d)};
  }
};

/// pad and tile: item c reads the input at c less the leading padding (the constant outside it)
/// or at c modulo the input's extents.
template <class T, class SIn, class S, bool Tile> struct array_kernel<ops::index_map_op<T, SIn, S, Tile>> {
  static constexpr bool defined = true;
  static constexpr std::size_t R = std::size_t(S::rank);
  static const generated_kernel& kernel() {
    static const generated_kernel k = [] {
      detail::array_source s(source_type<T>(), source_type<compute_t<T>>(), R);
      const std::string rm = detail::array_extent(R);
      s.fields = "  const " + std::string(source_type<T>()) + "* in;\n  long long strides[" + rm + "];\n  long long in_dims[" + rm +
                 "];\n  long long before[" + rm + "];\n  " + source_type<compute_t<T>>() + " constant;\n";
      s.item = "  long long off = 0;\n  for (int d = 0; d < R; ++d) {\n";
      if constexpr (Tile) s.item += "    off += (c[d] % a.in_dims[d]) * a.strides[d];\n";
      else
        s.item += "    const long long x = c[d] - a.before[d];\n"
                  "    if (x < 0 || x >= a.in_dims[d]) return ctflow_store(a.out + i, a.constant);\n    off += x * a.strides[d];\n";
      s.item += "  }\n  ctflow_store(a.out + i, ctflow_load(a.in + off));\n";
      return s.assemble();
    }();
    return k;
  }
  template <class Scratch, class V> static array_launch plan(const ops::index_map_op<T, SIn, S, Tile>& k, T* out, const dims_t<R>& d, Scratch&&, const V& in) {
    auto p = detail::array_head(out, d);
    p.put(static_cast<const void*>(in.data));
    detail::put_strides(p, in);
    detail::put_each(p, in.dims);
    detail::put_each(p, k.before);
    p.put(compute_t<T>(k.constant));
    p.finish();
    return {std::move(p.bytes), product(d)};
  }
};

/// Pad's adjoint (each input element is g's element it was copied to) and tile's (the sum of its
/// copies, in row-major order of the tiles).
template <class T, class SIn0, class S, bool Tile, class SIn> struct array_kernel<ops::index_map_adjoint_op<ops::index_map_op<T, SIn0, S, Tile>, SIn>> {
  static constexpr bool defined = true;
  static constexpr std::size_t R = std::size_t(S::rank);
  using K = ops::index_map_adjoint_op<ops::index_map_op<T, SIn0, S, Tile>, SIn>;
  static const generated_kernel& kernel() {
    static const generated_kernel k = [] {
      detail::array_source s(source_type<T>(), source_type<compute_t<T>>(), R, source_type<detail::array_sum_t<T>>());
      const std::string rm = detail::array_extent(R);
      s.fields = "  const " + std::string(source_type<T>()) + "* g;\n  long long strides[" + rm + "];\n  long long g_dims[" + rm +
                 "];\n  long long before[" + rm + "];\n";
      if constexpr (Tile)
        s.item = "  long long copies = 1;\n  for (int d = 0; d < R; ++d) copies *= a.g_dims[d] / a.dims[d];\n"
                 "  ctflow_sum acc = 0;\n  for (long long t = 0; t < copies; ++t) {\n    long long rest = t, off = 0;\n"
                 "    for (int d = R - 1; d >= 0; --d) {\n      const long long tiles = a.g_dims[d] / a.dims[d];\n"
                 "      off += (c[d] + (rest % tiles) * a.dims[d]) * a.strides[d];\n      rest /= tiles;\n    }\n"
                 "    acc += ctflow_sum(ctflow_load(a.g + off));\n  }\n  ctflow_store(a.out + i, ctflow_value(acc));\n";
      else
        s.item = "  long long off = 0;\n  for (int d = 0; d < R; ++d) off += (c[d] + a.before[d]) * a.strides[d];\n"
                 "  ctflow_store(a.out + i, ctflow_value(ctflow_sum(0) + ctflow_sum(ctflow_load(a.g + off))));  // 0 + g, as a sum: -0 gives +0\n";
      return s.assemble();
    }();
    return k;
  }
  template <class Scratch, class V> static array_launch plan(const K& k, T* out, const dims_t<R>& d, Scratch&&, const V& g) {
    auto p = detail::array_head(out, d);
    p.put(static_cast<const void*>(g.data));
    detail::put_strides(p, g);
    detail::put_each(p, g.dims);
    detail::put_each(p, k.forward.before);
    p.finish();
    return {std::move(p.bytes), product(d)};
  }
};

/// A view's adjoint: the items are g's elements off its broadcast axes (stride 0 in the view),
/// each the sum of g over those axes, stored where the view reads it (out zeroed first: elements
/// the view never reads); where two items land on one element, one thread adds them in order
/// into the scratch.
template <class T, class SE, class S, class M> struct array_kernel<ops::view_adjoint_op<T, SE, S, M>> {
  static constexpr bool defined = true;
  using K = ops::view_adjoint_op<T, SE, S, M>;
  static constexpr std::size_t RI = K::RI, RO = K::RO;
  using sum_t = detail::array_sum_t<T>;
  static const generated_kernel& kernel() {
    static const generated_kernel k = [] {
      detail::array_source s(source_type<T>(), source_type<compute_t<T>>(), RO, source_type<sum_t>());
      const std::string rm = detail::array_extent(RO);
      s.scratch_type = source_type<sum_t>();
      s.fields = "  const " + std::string(source_type<T>()) + "* g;\n  long long strides[" + rm + "];\n  long long summed[" + rm +
                 "];  // g's extents on broadcast axes, 1 elsewhere\n  long long at[" + rm + "];  // the view's strides in out\n"
                 "  long long base, count;\n";
      s.item = "  long long from = 0, to = a.base;\n  for (int d = 0; d < R; ++d) {\n    from += c[d] * a.strides[d];\n"
               "    to += c[d] * a.at[d];\n  }\n  ctflow_sum acc = 0;\n  for (long long j = 0; j < a.count; ++j) {\n"
               "    long long rest = j, off = from;\n    for (int d = R - 1; d >= 0; --d) {\n      off += (rest % a.summed[d]) * a.strides[d];\n"
               "      rest /= a.summed[d];\n    }\n    acc += ctflow_sum(ctflow_load(a.g + off));\n  }\n"
               "  if (Serial) a.scratch[to] += acc;\n  else ctflow_store(a.out + to, ctflow_value(acc));\n";
      return s.assemble();
    }();
    return k;
  }
  template <class Scratch, class V> static array_launch plan(const K& k, T* out, const dims_t<RI>& d, Scratch&& scratch, const V& g) {
    // The view of out's memory gives each element of g its offset there.
    expr::strided_view<T, RO> at;
    k.m.map(expr::strided_view<T, RI>{out, d, row_major_strides(d)}, at);
    dims_t<RO> items{}, summed{};
    long long count = 1;
    std::vector<std::pair<long long, long long>> moving;  // |stride|, extent of the items' axes
    for (std::size_t a = 0; a < RO; ++a) {
      const bool broadcast = at.strides[a] == 0 && g.dims[a] > 1;
      items[a] = broadcast ? 1 : g.dims[a];
      summed[a] = broadcast ? g.dims[a] : 1;
      count *= static_cast<long long>(summed[a]);
      if (!broadcast && g.dims[a] > 1) moving.emplace_back(at.strides[a] < 0 ? -at.strides[a] : at.strides[a], static_cast<long long>(g.dims[a]));
    }
    // Distinct items land on distinct elements where each stride exceeds the reach of the smaller.
    std::sort(moving.begin(), moving.end());
    bool distinct = true;
    long long reach = 0;
    for (const auto& [stride, extent] : moving) {
      distinct = distinct && stride > reach;
      reach += stride * (extent - 1);
    }
    // Otherwise every element of g is an item, added in g's order (the reference device's).
    if (!distinct) {
      items = g.dims;
      summed.fill(1);
      count = 1;
    }
    const std::size_t total = product(d);
    void* sums = distinct || product(items) == 0 ? nullptr : scratch(total * sizeof(sum_t));
    auto p = detail::array_head(out, items, sums, total);
    p.put(static_cast<const void*>(g.data));
    detail::put_strides(p, g);
    detail::put_each(p, summed);
    detail::put_each(p, at.strides);
    p.put(static_cast<long long>(at.data - out));
    p.put(count);
    p.finish();
    return {std::move(p.bytes), product(items), !distinct, sums ? total * sizeof(sum_t) : 0, true};
  }
};

/// gather's adjoint: one item per column (o, i) of the params, which walks the indices in order
/// and adds g[o, j, i] at [o, idx[j], i] of the scratch; an index out of range sets the status.
template <class T, class SP, class SG, class SI, int Axis, class I> struct array_kernel<ops::gather_adjoint_op<T, SP, SG, SI, Axis, I>> {
  static constexpr bool defined = true;
  using K = ops::gather_adjoint_op<T, SP, SG, SI, Axis, I>;
  static constexpr std::size_t RP = std::size_t(SP::rank), RG = std::size_t(SG::rank), RI = std::size_t(SI::rank);
  static constexpr std::size_t RC = RP - 1;  // the columns' rank
  using sum_t = detail::array_sum_t<T>;
  static const generated_kernel& kernel() {
    static const generated_kernel k = [] {
      detail::array_source s(source_type<T>(), source_type<compute_t<T>>(), RC, source_type<sum_t>());
      s.scratch_type = source_type<sum_t>();
      const std::string ax = std::to_string(Axis), ri = std::to_string(RI), rim = detail::array_extent(RI);
      s.fields = "  const " + std::string(source_type<T>()) + "* g;\n  long long gstrides[" + detail::array_extent(RG) + "];\n  const " +
                 source_type<I>() + "* idx;\n  long long istrides[" + rim + "];\n  long long idims[" + rim + "];\n  long long extent;\n";
      // The column's offset in the scratch (the params' row-major order) and in g.
      s.item = "  long long column = 0, g0 = 0, scale = " + ax + " == R ? a.extent : 1;\n"
               "  for (int d = R - 1; d >= 0; --d) {\n    const int gd = d < " + ax + " ? d : d + " + ri + ";\n"
               "    g0 += c[d] * a.gstrides[gd];\n    column += c[d] * scale;\n    scale *= a.dims[d];\n"
               "    if (d == " + ax + ") scale *= a.extent;\n  }\n"
               "  long long row = 1;  // the params' stride along the axis\n  for (int d = " + ax + "; d < R; ++d) row *= a.dims[d];\n"
               "  long long count = 1;\n  for (int j = 0; j < " + ri + "; ++j) count *= a.idims[j];\n"
               "  for (long long j = 0; j < count; ++j) {\n    long long rest = j, at = 0, from = g0;\n"
               "    for (int q = " + ri + " - 1; q >= 0; --q) {\n      const long long x = rest % a.idims[q];\n      rest /= a.idims[q];\n"
               "      at += x * a.istrides[q];\n      from += x * a.gstrides[" + ax + " + q];\n    }\n"
               "    const long long r = (long long)ctflow_load(a.idx + at);\n    if (r < 0 || r >= a.extent) { CTFLOW_STATUS = 1; return; }\n"
               "    a.scratch[column + r * row] += ctflow_sum(ctflow_load(a.g + from));\n  }\n";
      s.failures = {detail::gather_failure};
      return s.assemble();
    }();
    return k;
  }
  template <class Scratch, class VG, class VI> static array_launch plan(const K&, T* out, const dims_t<RP>& d, Scratch&& scratch, const VG& g, const VI& idx) {
    const dims_t<RC> columns = detail::lines_of(d, Axis);
    const std::size_t total = product(d);
    void* sums = total ? scratch(total * sizeof(sum_t)) : nullptr;
    auto p = detail::array_head(out, columns, sums, total);
    p.put(static_cast<const void*>(g.data));
    detail::put_strides(p, g);
    p.put(static_cast<const void*>(idx.data));
    detail::put_strides(p, idx);
    detail::put_each(p, idx.dims);
    p.put(static_cast<long long>(d[std::size_t(Axis)]));
    p.finish();
    return {std::move(p.bytes), sums ? product(columns) : 0, false, sums ? total * sizeof(sum_t) : 0, true};
  }
};

}  // namespace ctflow::backend::cuda
