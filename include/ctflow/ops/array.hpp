#pragma once
/// @file
/// @brief Shape ops (tf.reshape, transpose, expand_dims, squeeze, slice, strided_slice, reverse,
/// broadcast_to: views that copy nothing) and those that build new tensors (concat, stack,
/// unstack, split, gather, one_hot, pad, tile).

#include <array>
#include <cstring>
#include <string>
#include <vector>

#include <ctflow/core/tensor.hpp>
#include <ctflow/detail/raw.hpp>
#include <ctflow/expr/computed.hpp>
#include <ctflow/expr/strided.hpp>

namespace ctflow {

namespace ops {

template <std::size_t RO> struct view_base {
  dims_t<RO> out_dims{};
};

/// Reshape: needs contiguous memory, then strides of the new extents.
template <std::size_t RO> struct reshape_map : view_base<RO> {
  template <class T, std::size_t RI> bool map(const expr::strided_view<T, RI>& in, expr::strided_view<T, RO>& out) const {
    if (!in.contiguous()) return false;
    out = {in.data, this->out_dims, row_major_strides(this->out_dims)};
    return true;
  }
};

/// A general affine view: out stride k = sum of in strides weighted by coef, plus an offset.
template <std::size_t RI, std::size_t RO> struct affine_map : view_base<RO> {
  std::array<std::array<std::ptrdiff_t, RI>, RO> coef{};  // out axis k moves in axis i by coef[k][i]
  std::array<std::ptrdiff_t, RI> begin{};
  template <class T> bool map(const expr::strided_view<T, RI>& in, expr::strided_view<T, RO>& out) const {
    std::ptrdiff_t off = 0;
    for (std::size_t i = 0; i < RI; ++i) off += begin[i] * in.strides[i];
    out.data = in.data + off;
    out.dims = this->out_dims;
    for (std::size_t k = 0; k < RO; ++k) {
      std::ptrdiff_t s = 0;
      for (std::size_t i = 0; i < RI; ++i) s += coef[k][i] * in.strides[i];
      out.strides[k] = s;
    }
    return true;
  }
};

template <class S, class M, class E> auto make_view(M m, E&& e) {
  return expr::Strided<E, S, M>{std::move(m), std::forward<E>(e)};
}

template <class SIn, class SOut> struct reshape_rule {
  static constexpr int inferred = [] { int c = 0; for (auto x : SOut::extents) c += x == dyn; return c; }();
  static constexpr std::size_t known = [] { std::size_t p = 1; for (auto x : SOut::extents) if (x != dyn) p *= x; return p; }();
  // With a static input, the one dyn extent of the target is inferred at compile time.
  static constexpr bool infer_static = SIn::is_static && inferred == 1 && known != 0;
  static constexpr auto extents = [] {
    auto d = SOut::extents;
    if (infer_static) for (auto& x : d) if (x == dyn) x = SIn::static_size / known;
    return d;
  }();
  using type = shape_of<extents>;
  static constexpr bool ok = inferred <= 1 && (!SIn::is_static || (inferred == 0 ? known == SIn::static_size
                                                                                  : known != 0 && SIn::static_size % known == 0));
};

}  // namespace ops

/// @brief tf.reshape to S; one `dyn` extent of S is inferred from the size (TensorFlow's -1).
template <ShapeType S, Expression E> auto reshape(E&& e) {
  using In = shape_t<E>;
  using R = ops::reshape_rule<In, S>;
  CTFLOW_STATIC_CHECK(R::ok, detail::concat(detail::fixed_string("ctflow::reshape: sizes differ: "), shape_string_v<In>,
                                            detail::fixed_string(" x "), shape_string_v<S>));
  using Out = typename R::type;
  ops::reshape_map<std::size_t(Out::rank)> m;
  const auto d = e.dims();
  const std::size_t n = product(d);
  std::size_t known = 1;
  int at = -1;
  for (int i = 0; i < Out::rank; ++i) {
    if (S::extents[std::size_t(i)] == dyn) at = i;
    else known *= S::extents[std::size_t(i)];
    m.out_dims[std::size_t(i)] = S::extents[std::size_t(i)];
  }
  if (at >= 0) m.out_dims[std::size_t(at)] = known ? n / known : 0;
  if (product(m.out_dims) != n) throw_shape_error("ctflow::reshape", "sizes differ", d, S::extents);
  return ops::make_view<Out>(m, std::forward<E>(e));
}

/// @brief Reshape to S with every extent given at run time (for shapes with several `dyn`).
template <ShapeType S, Expression E> auto reshape(E&& e, const dims_t<std::size_t(S::rank)>& dims) {
  using In = shape_t<E>;
  CTFLOW_STATIC_CHECK((!In::is_static || !S::is_static || In::static_size == S::static_size),
                      detail::concat(detail::fixed_string("ctflow::reshape: sizes differ: "), shape_string_v<In>,
                                     detail::fixed_string(" x "), shape_string_v<S>));
  const auto d = e.dims();
  if (product(dims) != product(d) || !matches_static<S>(dims)) throw_shape_error("ctflow::reshape", "sizes differ", d, dims);
  ops::reshape_map<std::size_t(S::rank)> m;
  m.out_dims = dims;
  return ops::make_view<S>(m, std::forward<E>(e));
}

/// @brief tf.transpose with permutation Perm (none: reverse the axes).
template <int... Perm, Expression E> auto transpose(E&& e) {
  using S = shape_t<E>;
  constexpr int R = S::rank;
  static constexpr std::array<int, std::size_t(R)> perm = [] {
    std::array<int, std::size_t(R)> p{};
    if constexpr (sizeof...(Perm) != std::size_t(R)) { for (int i = 0; i < R; ++i) p[std::size_t(i)] = R - 1 - i; }
    else { int k = 0; ((p[std::size_t(k++)] = normalize_axis(Perm, R)), ...); }
    return p;
  }();
  static constexpr bool ok = [] {
    if (sizeof...(Perm) != 0 && sizeof...(Perm) != std::size_t(R)) return false;
    std::array<bool, std::size_t(R)> seen{};
    for (int a : perm) { if (a < 0 || seen[std::size_t(a)]) return false; seen[std::size_t(a)] = true; }
    return true;
  }();
  CTFLOW_STATIC_CHECK(ok, detail::concat(detail::fixed_string("ctflow::transpose: not a permutation of the axes of "), shape_string_v<S>));
  constexpr auto out_ext = [] { dims_t<std::size_t(R)> d{}; for (int i = 0; i < R; ++i) d[std::size_t(i)] = S::extents[std::size_t(ok ? perm[std::size_t(i)] : i)]; return d; }();
  ops::affine_map<std::size_t(R), std::size_t(R)> m;
  const auto d = e.dims();
  for (int k = 0; k < R; ++k) {
    const int a = ok ? perm[std::size_t(k)] : k;
    m.out_dims[std::size_t(k)] = d[std::size_t(a)];
    m.coef[std::size_t(k)][std::size_t(a)] = 1;
  }
  return ops::make_view<shape_of<out_ext>>(m, std::forward<E>(e));
}

/// @brief tf.expand_dims: a new axis of extent 1 at Axis (negative counts from the end of the result).
template <int Axis, Expression E> auto expand_dims(E&& e) {
  using S = shape_t<E>;
  constexpr int a = normalize_axis(Axis, S::rank + 1);
  CTFLOW_STATIC_CHECK(a >= 0, detail::concat(detail::fixed_string("ctflow::expand_dims: axis out of range for "), shape_string_v<S>));
  constexpr int at = a < 0 ? 0 : a;
  constexpr auto out_ext = [] {
    dims_t<std::size_t(S::rank + 1)> d{};
    for (int i = 0, j = 0; i <= S::rank; ++i) d[std::size_t(i)] = i == at ? 1 : S::extents[std::size_t(j++)];
    return d;
  }();
  // Inserting an axis of 1 never needs contiguity: keep the operand's strides.
  ops::affine_map<std::size_t(S::rank), std::size_t(S::rank + 1)> m;
  const auto d = e.dims();
  for (int i = 0, j = 0; i <= S::rank; ++i) {
    if (i == at) { m.out_dims[std::size_t(i)] = 1; continue; }
    m.out_dims[std::size_t(i)] = d[std::size_t(j)];
    m.coef[std::size_t(i)][std::size_t(j++)] = 1;
  }
  return ops::make_view<shape_of<out_ext>>(m, std::forward<E>(e));
}

/// @brief tf.squeeze: removes the named axes, which must have extent 1 (none named: every static 1).
template <int... Axes, Expression E> auto squeeze(E&& e) {
  using S = shape_t<E>;
  constexpr int R = S::rank;
  static constexpr std::array<bool, std::size_t(R)> drop = [] {
    std::array<bool, std::size_t(R)> m{};
    if constexpr (sizeof...(Axes) == 0) { for (int i = 0; i < R; ++i) m[std::size_t(i)] = S::extents[std::size_t(i)] == 1; }
    else ((normalize_axis(Axes, R) >= 0 ? void(m[std::size_t(normalize_axis(Axes, R))] = true) : void()), ...);
    return m;
  }();
  constexpr bool ok = ((normalize_axis(Axes, R) >= 0) && ...) &&
                      ((normalize_axis(Axes, R) < 0 || S::extents[std::size_t(normalize_axis(Axes, R))] == 1 ||
                        S::extents[std::size_t(normalize_axis(Axes, R))] == dyn) && ...);
  CTFLOW_STATIC_CHECK(ok, detail::concat(detail::fixed_string("ctflow::squeeze: can only squeeze axes of extent 1: "), shape_string_v<S>));
  constexpr int RO = [] { int k = 0; for (bool b : drop) k += !b; return k; }();
  constexpr auto out_ext = [] { dims_t<std::size_t(RO)> d{}; for (int i = 0, o = 0; i < R; ++i) if (!drop[std::size_t(i)]) d[std::size_t(o++)] = S::extents[std::size_t(i)]; return d; }();
  ops::affine_map<std::size_t(R), std::size_t(RO)> m;
  const auto d = e.dims();
  for (int i = 0, o = 0; i < R; ++i) {
    if (drop[std::size_t(i)]) {
      if (d[std::size_t(i)] != 1) ctflow::detail::raise<shape_error>("ctflow::squeeze: axis " + std::to_string(i) + " has extent " + std::to_string(d[std::size_t(i)]) + ", not 1: " + format_dims(d));
      continue;
    }
    m.out_dims[std::size_t(o)] = d[std::size_t(i)];
    m.coef[std::size_t(o++)][std::size_t(i)] = 1;
  }
  return ops::make_view<shape_of<out_ext>>(m, std::forward<E>(e));
}

/// @brief tf.slice: a block of extents Size (a `dyn` extent: to the end, TensorFlow's -1)
/// starting at `begin`; bounds are checked.
template <ShapeType Size, Expression E> auto slice(E&& e, const std::array<std::size_t, std::size_t(shape_t<E>::rank)>& begin) {
  using S = shape_t<E>;
  constexpr int R = S::rank;
  static_assert(Size::rank == R, "ctflow::slice: the size must have the operand's rank");
  constexpr bool ok = [] {
    for (int i = 0; i < R; ++i) {
      const auto s = Size::extents[std::size_t(i)], x = S::extents[std::size_t(i)];
      if (s != dyn && x != dyn && s > x) return false;
    }
    return true;
  }();
  CTFLOW_STATIC_CHECK(ok, detail::concat(detail::fixed_string("ctflow::slice: size larger than the operand: "), shape_string_v<Size>,
                                         detail::fixed_string(" x "), shape_string_v<S>));
  ops::affine_map<std::size_t(R), std::size_t(R)> m;
  const auto d = e.dims();
  for (int i = 0; i < R; ++i) {
    const std::size_t b = begin[std::size_t(i)];
    const std::size_t n = Size::extents[std::size_t(i)] == dyn ? (b <= d[std::size_t(i)] ? d[std::size_t(i)] - b : 0) : Size::extents[std::size_t(i)];
    if (b > d[std::size_t(i)] || n > d[std::size_t(i)] - b)
      ctflow::detail::raise<shape_error>("ctflow::slice: begin " + std::to_string(b) + " size " + std::to_string(n) + " out of range on axis " +
                        std::to_string(i) + " of " + format_dims(d));
    m.out_dims[std::size_t(i)] = n;
    m.begin[std::size_t(i)] = std::ptrdiff_t(b);
    m.coef[std::size_t(i)][std::size_t(i)] = 1;
  }
  return ops::make_view<Size>(m, std::forward<E>(e));
}

/// @brief tf.strided_slice with begin, end and strides per axis (Python semantics: negative
/// indices count from the end and are clamped; a negative stride walks backwards).
template <Expression E>
auto strided_slice(E&& e, const std::array<std::int64_t, std::size_t(shape_t<E>::rank)>& begin,
                   const std::array<std::int64_t, std::size_t(shape_t<E>::rank)>& end,
                   const std::array<std::int64_t, std::size_t(shape_t<E>::rank)>& strides) {
  constexpr int R = shape_t<E>::rank;
  ops::affine_map<std::size_t(R), std::size_t(R)> m;
  const auto d = e.dims();
  for (int i = 0; i < R; ++i) {
    const std::int64_t n = std::int64_t(d[std::size_t(i)]), s = strides[std::size_t(i)];
    if (s == 0) ctflow::detail::raise<value_error>("ctflow::strided_slice: stride 0 on axis " + std::to_string(i));
    auto clamp = [&](std::int64_t v) {
      if (v < 0) v += n;
      const std::int64_t lo = s > 0 ? 0 : -1, hi = s > 0 ? n : n - 1;
      return std::min(std::max(v, lo), hi);
    };
    const std::int64_t b = clamp(begin[std::size_t(i)]), en = clamp(end[std::size_t(i)]);
    const std::int64_t count = s > 0 ? (en > b ? (en - b + s - 1) / s : 0) : (b > en ? (b - en - s - 1) / -s : 0);
    m.out_dims[std::size_t(i)] = std::size_t(count);
    m.begin[std::size_t(i)] = count ? b : 0;
    m.coef[std::size_t(i)][std::size_t(i)] = s;
  }
  constexpr auto out_ext = [] { dims_t<std::size_t(R)> x{}; x.fill(dyn); return x; }();
  return ops::make_view<shape_of<out_ext>>(m, std::forward<E>(e));
}

/// @brief tf.reverse along the given axes.
template <int... Axes, Expression E> auto reverse(E&& e) {
  using S = shape_t<E>;
  constexpr int R = S::rank;
  CTFLOW_STATIC_CHECK(((normalize_axis(Axes, R) >= 0) && ...),
                      detail::concat(detail::fixed_string("ctflow::reverse: axis out of range for "), shape_string_v<S>));
  ops::affine_map<std::size_t(R), std::size_t(R)> m;
  const auto d = e.dims();
  m.out_dims = d;
  for (int i = 0; i < R; ++i) m.coef[std::size_t(i)][std::size_t(i)] = 1;
  ((normalize_axis(Axes, R) >= 0 ? void((m.coef[std::size_t(normalize_axis(Axes, R))][std::size_t(normalize_axis(Axes, R))] = -1,
                                        m.begin[std::size_t(normalize_axis(Axes, R))] = std::ptrdiff_t(d[std::size_t(normalize_axis(Axes, R))]) - 1))
                                 : void()), ...);
  return ops::make_view<S>(m, std::forward<E>(e));
}

/// @brief tf.broadcast_to shape S (a view: broadcast axes have stride 0).
template <ShapeType S, Expression E> auto broadcast_to(E&& e, const dims_t<std::size_t(S::rank)>& dims = S::extents) {
  using In = shape_t<E>;
  constexpr bool ok = S::rank >= In::rank && std::is_same_v<broadcast_shape_t<In, S>, S> && broadcastable_v<In, S>;
  CTFLOW_STATIC_CHECK(ok, detail::concat(detail::fixed_string("ctflow::broadcast_to: cannot broadcast "), shape_string_v<In>,
                                         detail::fixed_string(" to "), shape_string_v<S>));
  constexpr std::size_t R = std::size_t(S::rank), RI = std::size_t(In::rank);
  ops::affine_map<RI, R> m;
  const auto d = e.dims();
  m.out_dims = dims;
  for (std::size_t k = 0; k < R; ++k) {
    if (k + RI < R) continue;
    const std::size_t i = k + RI - R;
    if (d[i] == dims[k]) m.coef[k][i] = 1;
    else if (d[i] != 1) throw_shape_error("ctflow::broadcast_to", "cannot broadcast", d, dims);
  }
  if (!matches_static<S>(dims)) throw_shape_error("ctflow::broadcast_to", "cannot broadcast", d, dims);
  return ops::make_view<S>(m, std::forward<E>(e));
}

// ---- ops that build new tensors -------------------------------------------------------------

namespace ops {

/// Concatenation of N operands of one dtype along Axis ([outer, n_i, inner] blocks copied in turn).
template <class T, class S, int Axis, std::size_t N> struct concat_op {
  using value_type = T;
  using shape_type = S;
  dims_t<std::size_t(S::rank)> out_dims{};
  std::array<std::size_t, N> along{};
};

template <int Axis, class S0, class... S> constexpr auto concat_extents() {
  auto d = S0::extents;
  constexpr auto a = std::size_t(Axis);
  d[a] = ((S0::extents[a] == dyn || ((S::extents[a] == dyn) || ...)) ? dyn : (S0::extents[a] + ... + S::extents[a]));
  return d;
}

template <int Axis, class S0, class... S> constexpr bool concat_ok() {
  if (((S::rank != S0::rank) || ...)) return false;
  for (int i = 0; i < S0::rank; ++i) {
    if (i == Axis) continue;
    const auto x = S0::extents[std::size_t(i)];
    if (((S::extents[std::size_t(i)] != x && S::extents[std::size_t(i)] != dyn && x != dyn) || ...)) return false;
  }
  return true;
}

}  // namespace ops

/// @brief tf.concat along Axis of operands that agree on every other axis.
template <int Axis, Expression E0, Expression... Es> auto concat(E0&& e0, Es&&... es) {
  using S0 = shape_t<E0>;
  constexpr int a = normalize_axis(Axis, S0::rank);
  constexpr int ax = a < 0 ? 0 : a;
  CTFLOW_STATIC_CHECK(a >= 0, detail::concat(detail::fixed_string("ctflow::concat: axis out of range for "), shape_string_v<S0>));
  CTFLOW_STATIC_CHECK((std::is_same_v<value_t<E0>, value_t<Es>> && ...), detail::fixed_string("ctflow::concat: operands of different dtypes"));
  constexpr bool ok = ops::concat_ok<ax, S0, shape_t<Es>...>();
  CTFLOW_STATIC_CHECK(ok, detail::concat(detail::fixed_string("ctflow::concat: shapes differ off the axis: "), shape_string_v<S0>,
                                         detail::concat(detail::fixed_string(" x "), shape_string_v<shape_t<Es>>)...));
  if constexpr (ok) {
    using Out = shape_of<ops::concat_extents<ax, S0, shape_t<Es>...>()>;
    ops::concat_op<value_t<E0>, Out, ax, 1 + sizeof...(Es)> k;
    const auto d0 = e0.dims();
    k.out_dims = d0;
    std::size_t j = 0;
    auto add = [&](const auto& d) {
      for (int i = 0; i < S0::rank; ++i)
        if (i != ax && d[std::size_t(i)] != d0[std::size_t(i)]) throw_shape_error("ctflow::concat", "shapes differ off the axis", d0, d);
      k.along[j++] = d[std::size_t(ax)];
    };
    add(d0);
    (add(es.dims()), ...);
    k.out_dims[std::size_t(ax)] = 0;
    for (auto n : k.along) k.out_dims[std::size_t(ax)] += n;
    return expr::make_computed(k, std::forward<E0>(e0), std::forward<Es>(es)...);
  } else {
    return std::remove_cvref_t<E0>(std::forward<E0>(e0));
  }
}

/// @brief tf.stack: operands of one shape joined along a new axis.
template <int Axis = 0, Expression E0, Expression... Es> auto stack(E0&& e0, Es&&... es) {
  return concat<Axis < 0 ? Axis : Axis>(expand_dims<Axis>(std::forward<E0>(e0)), expand_dims<Axis>(std::forward<Es>(es))...);
}

/// @brief tf.split into N equal parts along Axis: an array of views.
template <std::size_t N, int Axis = 0, Expression E> auto split(const E& e) {
  using S = shape_t<E>;
  constexpr int a = normalize_axis(Axis, S::rank);
  CTFLOW_STATIC_CHECK(a >= 0, detail::concat(detail::fixed_string("ctflow::split: axis out of range for "), shape_string_v<S>));
  static constexpr int ax = a < 0 ? 0 : a;
  constexpr std::size_t ext = S::extents[std::size_t(ax)];
  CTFLOW_STATIC_CHECK(ext == dyn || ext % N == 0, detail::concat(detail::fixed_string("ctflow::split: axis not divisible into "),
                                                                  detail::number_string<N>(), detail::fixed_string(" parts: "), shape_string_v<S>));
  static constexpr auto part = [] { auto d = S::extents; if (d[std::size_t(ax)] != dyn) d[std::size_t(ax)] /= N; return d; }();
  using P = shape_of<part>;
  const auto d = e.dims();
  if (d[std::size_t(ax)] % N) ctflow::detail::raise<shape_error>("ctflow::split: axis " + std::to_string(ax) + " of " + format_dims(d) + " not divisible into " + std::to_string(N) + " parts");
  auto one = [&](std::size_t i) {
    std::array<std::size_t, std::size_t(S::rank)> b{};
    b[std::size_t(ax)] = i * (d[std::size_t(ax)] / N);
    auto s = slice<shape_of<[] { auto x = part; x[std::size_t(ax)] = dyn; return x; }()>>(e, b);
    s.m.out_dims[std::size_t(ax)] = d[std::size_t(ax)] / N;
    return reshape<P>(std::move(s));
  };
  return [&]<std::size_t... I>(std::index_sequence<I...>) { return std::array{one(I)...}; }(std::make_index_sequence<N>{});
}

/// @brief tf.unstack along Axis (static extent N): an array of N views of rank one lower.
template <int Axis = 0, Expression E> auto unstack(const E& e) {
  using S = shape_t<E>;
  constexpr int ax = normalize_axis(Axis, S::rank) < 0 ? 0 : normalize_axis(Axis, S::rank);
  constexpr std::size_t N = S::extents[std::size_t(ax)];
  static_assert(N != dyn, "ctflow::unstack: the axis must have a static extent");
  auto parts = split<N, ax>(e);
  return [&]<std::size_t... I>(std::index_sequence<I...>) { return std::array{squeeze<ax>(std::move(parts[I]))...}; }(std::make_index_sequence<N>{});
}

namespace ops {

/// Params of extents `params` seen as [outer, n, inner] around Axis, with indices of extents
/// `idx` (nidx of them): gather and its adjoint walk the same slices. Each kernel checks the
/// indices as it reads them (index_out_of_range).
template <int Axis> struct gather_layout {
  std::size_t outer = 1, n = 1, inner = 1, nidx = 1;
  template <std::size_t RP, std::size_t RI> gather_layout(const dims_t<RP>& params, const dims_t<RI>& idx) {
    for (std::size_t i = 0; i < RP; ++i) {
      if (int(i) < Axis) outer *= params[i];
      if (int(i) > Axis) inner *= params[i];
    }
    n = params[std::size_t(Axis)];
    for (auto x : idx) nidx *= x;
  }
};

/// gather's error for an index outside [0, n).
[[noreturn]] inline void index_out_of_range(std::int64_t index, std::size_t n) {
  ctflow::detail::raise<value_error>("ctflow::gather: index " + std::to_string(index) + " out of range [0, " + std::to_string(n) + ")");
}

template <class T, class SP, class SI, class S, int Axis, class I> struct gather_op {
  using value_type = T;
  using shape_type = S;
  dims_t<std::size_t(S::rank)> out_dims{};
};

}  // namespace ops

/// @brief tf.gather(params, indices, axis): slices of params along Axis picked by integer
/// indices; the result's shape is params[:Axis] + indices + params[Axis+1:]. Indices are checked.
template <int Axis = 0, Expression P, Expression I> auto gather(P&& params, I&& indices) {
  using SP = shape_t<P>;
  using SI = shape_t<I>;
  using IT = value_t<I>;
  CTFLOW_STATIC_CHECK((std::is_same_v<IT, std::int32_t> || std::is_same_v<IT, std::int64_t>),
                      detail::fixed_string("ctflow::gather: indices must be int32 or int64"));
  constexpr int a = normalize_axis(Axis, SP::rank);
  CTFLOW_STATIC_CHECK(a >= 0, detail::concat(detail::fixed_string("ctflow::gather: axis out of range for "), shape_string_v<SP>));
  constexpr int ax = a < 0 ? 0 : a;
  constexpr std::size_t RO = std::size_t(SP::rank - 1 + SI::rank);
  constexpr auto out_ext = [] {
    dims_t<RO> d{};
    std::size_t o = 0;
    for (int i = 0; i < ax; ++i) d[o++] = SP::extents[std::size_t(i)];
    for (auto x : SI::extents) d[o++] = x;
    for (int i = ax + 1; i < SP::rank; ++i) d[o++] = SP::extents[std::size_t(i)];
    return d;
  }();
  ops::gather_op<value_t<P>, SP, SI, shape_of<out_ext>, ax, IT> k;
  const auto dp = params.dims();
  const auto di = indices.dims();
  std::size_t o = 0;
  for (int i = 0; i < ax; ++i) k.out_dims[o++] = dp[std::size_t(i)];
  for (auto x : di) k.out_dims[o++] = x;
  for (int i = ax + 1; i < SP::rank; ++i) k.out_dims[o++] = dp[std::size_t(i)];
  return expr::make_computed(k, std::forward<P>(params), std::forward<I>(indices));
}

namespace ops {

template <class T, class I, class SI, class S> struct one_hot_op {
  using value_type = T;
  using shape_type = S;
  dims_t<std::size_t(S::rank)> out_dims{};
  std::size_t depth = 0;
  T on{1}, off{0};
};

}  // namespace ops

/// @brief tf.one_hot(indices, Depth): a new last axis of extent Depth; out-of-range indices give
/// rows of off_value.
template <std::size_t Depth, class T = float, Expression I> auto one_hot(I&& indices, T on_value = T(1), T off_value = T(0)) {
  using SI = shape_t<I>;
  constexpr auto out_ext = [] { dims_t<std::size_t(SI::rank + 1)> d{}; for (int i = 0; i < SI::rank; ++i) d[std::size_t(i)] = SI::extents[std::size_t(i)]; d[std::size_t(SI::rank)] = Depth; return d; }();
  ops::one_hot_op<T, value_t<I>, SI, shape_of<out_ext>> k;
  const auto di = indices.dims();
  for (int i = 0; i < SI::rank; ++i) k.out_dims[std::size_t(i)] = di[std::size_t(i)];
  k.out_dims[std::size_t(SI::rank)] = Depth;
  k.depth = Depth;
  k.on = on_value;
  k.off = off_value;
  return expr::make_computed(k, std::forward<I>(indices));
}

namespace ops {

/// Pad and tile: each output element reads the input at a computed index (or a constant).
template <class T, class SIn, class S, bool Tile> struct index_map_op {
  using value_type = T;
  using shape_type = S;
  static constexpr std::size_t R = std::size_t(S::rank);
  dims_t<R> out_dims{};
  std::array<std::size_t, R> before{};  // pad: leading padding per axis
  T constant{};
};

}  // namespace ops

/// @brief tf.pad in CONSTANT mode: paddings[i] = {before, after} per axis. The paddings are
/// run-time values, so every axis of the result is `dyn`.
template <Expression E>
auto pad(E&& e, const std::array<std::array<std::size_t, 2>, std::size_t(shape_t<E>::rank)>& paddings, value_t<E> constant = {}) {
  using S = shape_t<E>;
  constexpr auto out_ext = [] { dims_t<std::size_t(S::rank)> d{}; d.fill(dyn); return d; }();
  ops::index_map_op<value_t<E>, S, shape_of<out_ext>, false> k;
  const auto d = e.dims();
  for (int i = 0; i < S::rank; ++i) {
    k.before[std::size_t(i)] = paddings[std::size_t(i)][0];
    k.out_dims[std::size_t(i)] = d[std::size_t(i)] + paddings[std::size_t(i)][0] + paddings[std::size_t(i)][1];
  }
  k.constant = constant;
  return expr::make_computed(k, std::forward<E>(e));
}

/// @brief tf.tile: the operand repeated Multiples[i] times along axis i.
template <std::size_t... Multiples, Expression E> auto tile(E&& e) {
  using S = shape_t<E>;
  static_assert(sizeof...(Multiples) == std::size_t(S::rank), "ctflow::tile: one multiple per axis");
  static constexpr std::array<std::size_t, sizeof...(Multiples)> mult{Multiples...};
  constexpr auto out_ext = [] { auto d = S::extents; for (std::size_t i = 0; i < d.size(); ++i) if (d[i] != dyn) d[i] *= mult[i]; return d; }();
  ops::index_map_op<value_t<E>, S, shape_of<out_ext>, true> k;
  const auto d = e.dims();
  for (std::size_t i = 0; i < d.size(); ++i) k.out_dims[i] = d[i] * mult[i];
  return expr::make_computed(k, std::forward<E>(e));
}

/// @brief tf.io.decode_raw: reinterprets bytes as elements of T (little-endian unless told).
template <DType T> Tensor<T, Shape<dyn>> decode_raw(std::span<const std::uint8_t> bytes, bool little_endian = true) {
  if (bytes.size() % sizeof(T))
    ctflow::detail::raise<value_error>("ctflow::decode_raw: " + std::to_string(bytes.size()) + " bytes is not a multiple of the " +
                      std::to_string(sizeof(T)) + "-byte size of " + dtype_name<T>());
  Tensor<T, Shape<dyn>> t({bytes.size() / sizeof(T)});
  detail::load_raw(t.data(), bytes, little_endian);
  return t;
}

namespace ops {

/// The transpose of an affine view: out (the operand's extents) = 0, then out[map(i)] += g[i].
template <class T, class SE, class S, class M> struct view_adjoint_op {
  using value_type = T;
  using shape_type = SE;
  static constexpr std::size_t RI = std::size_t(SE::rank), RO = std::size_t(S::rank);
  dims_t<RI> out_dims{};
  M m;
};
/// Pad's and tile's adjoint: each input element sums the output elements that read it.
template <class K, class SIn> struct index_map_adjoint_op {
  using value_type = typename K::value_type;
  using shape_type = SIn;
  dims_t<K::R> out_dims{};
  K forward;
};
/// gather's adjoint: zeros of the params' extents, each gathered slice added back at its index.
template <class T, class SP, class SG, class SI, int Axis, class I> struct gather_adjoint_op {
  using value_type = T;
  using shape_type = SP;
  dims_t<std::size_t(SP::rank)> out_dims{};
};
}  // namespace ops

}  // namespace ctflow
