#pragma once
/// @file
/// @brief Reductions over compile-time axes (tf.math.reduce_*), argmax / argmin and cumsum.
/// `reduce_sum<1>(x)` drops axis 1, `reduce_sum<1>(x, keepdims)` keeps it as 1, `reduce_sum(x)`
/// reduces everything to rank 0. Negative axes count from the end. The result keeps the dtype
/// (TensorFlow's rule: reduce_sum of uint8 stays uint8; the mean of integers truncates).

#include <limits>
#include <type_traits>

#include <ctflow/core/math.hpp>
#include <ctflow/core/tensor.hpp>
#include <ctflow/expr/computed.hpp>

namespace ctflow {

/// @brief Tag asking a reduction to keep reduced axes with extent 1.
struct keepdims_t {};
inline constexpr keepdims_t keepdims{};

namespace ops {

// A reduction's combine, written once: as code for the host and as text (`source`) for devices
// that generate their kernels (backend/cuda/codegen.hpp), as element-wise functors are.
#define CTFLOW_REDUCER(NAME, VECTORIZABLE, IDENTITY, ...)                                 \
  template <class V> struct NAME##_op {                                                   \
    static constexpr bool vectorizable = VECTORIZABLE;                                    \
    static constexpr const char* source = #__VA_ARGS__;                                   \
    static V identity() { return IDENTITY; }                                              \
    template <class X> X operator()(const X& a, const X& b) const { __VA_ARGS__ }         \
  }

CTFLOW_REDUCER(sum, true, V(0), return X(a + b););
CTFLOW_REDUCER(prod, true, V(1), return X(a * b););
CTFLOW_REDUCER(max, true, std::numeric_limits<V>::has_infinity ? -std::numeric_limits<V>::infinity() : std::numeric_limits<V>::lowest(),
               return math::max(a, b););
CTFLOW_REDUCER(min, true, std::numeric_limits<V>::has_infinity ? std::numeric_limits<V>::infinity() : std::numeric_limits<V>::max(),
               return math::min(a, b););
CTFLOW_REDUCER(any, false, false, return X(a || b););
CTFLOW_REDUCER(all, false, true, return X(a && b););

#undef CTFLOW_REDUCER

/// Which axes of a rank-R input a reduction names (none named: all).
template <int R, int... Axes> struct axis_set {
  static constexpr bool in_range = ((normalize_axis(Axes, R) >= 0) && ...);
  static constexpr std::array<bool, std::size_t(R)> mask = [] {
    std::array<bool, std::size_t(R)> m{};
    if constexpr (sizeof...(Axes) == 0) m.fill(true);
    else ((normalize_axis(Axes, R) >= 0 ? void(m[std::size_t(normalize_axis(Axes, R))] = true) : void()), ...);
    return m;
  }();
  static constexpr int kept = [] { int k = 0; for (bool b : mask) k += !b; return k; }();
};

template <template <class> class Op, class T, class SIn, bool Keep, bool Mean, int... Axes> struct reduce_op {
  static constexpr int RI = SIn::rank;
  using axes = axis_set<RI, Axes...>;
  static constexpr int RO = Keep ? RI : axes::kept;
  static constexpr dims_t<std::size_t(RO)> out_extents = [] {
    dims_t<std::size_t(RO)> d{};
    for (int i = 0, o = 0; i < RI; ++i) {
      if (!axes::mask[std::size_t(i)]) d[std::size_t(o++)] = SIn::extents[std::size_t(i)];
      else if (Keep) d[std::size_t(o++)] = 1;
    }
    return d;
  }();
  using value_type = T;
  using shape_type = shape_of<out_extents>;
  dims_t<std::size_t(RO)> out_dims{};

  static reduce_op make(const dims_t<std::size_t(RI)>& in) {
    reduce_op k;
    for (int i = 0, o = 0; i < RI; ++i) {
      if (!axes::mask[std::size_t(i)]) k.out_dims[std::size_t(o++)] = in[std::size_t(i)];
      else if (Keep) k.out_dims[std::size_t(o++)] = 1;
    }
    return k;
  }

};

template <template <class> class Op, bool Keep, bool Mean, int... Axes, class E> auto make_reduce(E&& e) {
  using S = shape_t<E>;
  using K = reduce_op<Op, value_t<E>, S, Keep, Mean, Axes...>;
  CTFLOW_STATIC_CHECK(K::axes::in_range,
                      detail::concat(detail::fixed_string("ctflow::reduce: axis out of range for rank "),
                                     detail::number_string<std::size_t(S::rank)>(), detail::fixed_string(": "), shape_string_v<S>));
  return expr::make_computed(K::make(e.dims()), std::forward<E>(e));
}

}  // namespace ops

#define CTFLOW_REDUCTION(NAME, OP, MEAN, CHECK)                                                       \
  template <int... Axes, Expression E> auto NAME(E&& e) {                                            \
    CHECK;                                                                                           \
    return ops::make_reduce<ops::OP, false, MEAN, Axes...>(std::forward<E>(e));                      \
  }                                                                                                  \
  template <int... Axes, Expression E> auto NAME(E&& e, keepdims_t) {                                \
    CHECK;                                                                                           \
    return ops::make_reduce<ops::OP, true, MEAN, Axes...>(std::forward<E>(e));                       \
  }                                                                                                  \
  template <int... Axes> detail::failed_check NAME(detail::failed_check) { return {}; }              \
  template <int... Axes> detail::failed_check NAME(detail::failed_check, keepdims_t) { return {}; }

#define CTFLOW_NUMERIC CTFLOW_STATIC_CHECK((!std::is_same_v<value_t<E>, bool>), detail::fixed_string("ctflow::reduce: needs a numeric dtype, got bool"))
#define CTFLOW_BOOLEAN CTFLOW_STATIC_CHECK((std::is_same_v<value_t<E>, bool>), detail::fixed_string("ctflow::reduce_any/reduce_all: need a bool tensor"))

/// @brief tf.math.reduce_sum / reduce_mean / reduce_max / reduce_min / reduce_prod / reduce_any /
/// reduce_all over the axes given as template arguments (all when none).
CTFLOW_REDUCTION(reduce_sum, sum_op, false, CTFLOW_NUMERIC)
CTFLOW_REDUCTION(reduce_mean, sum_op, true, CTFLOW_NUMERIC)
CTFLOW_REDUCTION(reduce_prod, prod_op, false, CTFLOW_NUMERIC)
CTFLOW_REDUCTION(reduce_max, max_op, false, CTFLOW_NUMERIC)
CTFLOW_REDUCTION(reduce_min, min_op, false, CTFLOW_NUMERIC)
CTFLOW_REDUCTION(reduce_any, any_op, false, CTFLOW_BOOLEAN)
CTFLOW_REDUCTION(reduce_all, all_op, false, CTFLOW_BOOLEAN)

#undef CTFLOW_BOOLEAN
#undef CTFLOW_NUMERIC
#undef CTFLOW_REDUCTION

namespace ops {

/// Walks each line along `axis` of a contiguous [outer, n, inner] layout.
template <class T, class SIn, int Axis, class SOut, class OutT, class F> struct along_axis_op {
  using value_type = OutT;
  using shape_type = SOut;
  dims_t<std::size_t(SOut::rank)> out_dims{};
  std::size_t outer = 1, n = 1, inner = 1;  // the input as [outer, n, inner] around the axis
  F f;
};

/// argmax (Max) or argmin along the axis: the first index among ties; a NaN wins over numbers
/// (it is the result there too).
template <bool Max> struct arg_fn {};

template <bool Max, int Axis, class E> auto make_arg(E&& e) {
  using S = shape_t<E>;
  constexpr int a = normalize_axis(Axis, S::rank);
  CTFLOW_STATIC_CHECK(a >= 0, detail::concat(detail::fixed_string(Max ? "ctflow::argmax" : "ctflow::argmin"),
                                             detail::fixed_string(": axis out of range: "), shape_string_v<S>));
  constexpr int ax = a < 0 ? 0 : a;
  constexpr auto out_ext = [] {
    dims_t<std::size_t(S::rank > 0 ? S::rank - 1 : 0)> d{};
    for (int i = 0, o = 0; i < S::rank; ++i) if (i != ax) d[std::size_t(o++)] = S::extents[std::size_t(i)];
    return d;
  }();
  using K = along_axis_op<value_t<E>, S, ax, shape_of<out_ext>, std::int64_t, arg_fn<Max>>;
  K k;
  const auto d = e.dims();
  if (d[std::size_t(ax)] == 0) ctflow::detail::raise<value_error>(std::string(Max ? "ctflow::argmax" : "ctflow::argmin") + ": reduction over an empty axis: " + format_dims(d));
  for (int i = 0, o = 0; i < S::rank; ++i) {
    if (i < ax) k.outer *= d[std::size_t(i)];
    if (i > ax) k.inner *= d[std::size_t(i)];
    if (i != ax) k.out_dims[std::size_t(o++)] = d[std::size_t(i)];
  }
  k.n = d[std::size_t(ax)];
  return expr::make_computed(k, std::forward<E>(e));
}

/// cumsum along the axis, in the compute type: each element the sum of those before it (and
/// itself unless exclusive), from the end where reverse.
struct cumsum_fn {
  bool exclusive, reverse;
};

}  // namespace ops

/// @brief tf.math.argmax over Axis: int64 indices, the first among ties.
template <int Axis = 0, Expression E> auto argmax(E&& e) { return ops::make_arg<true, Axis>(std::forward<E>(e)); }
/// @brief tf.math.argmin over Axis: int64 indices, the first among ties.
template <int Axis = 0, Expression E> auto argmin(E&& e) { return ops::make_arg<false, Axis>(std::forward<E>(e)); }

/// @brief tf.math.cumsum along Axis, with TensorFlow's exclusive and reverse options.
template <int Axis = 0, Expression E> auto cumsum(E&& e, bool exclusive = false, bool reverse = false) {
  using S = shape_t<E>;
  constexpr int a = normalize_axis(Axis, S::rank);
  CTFLOW_STATIC_CHECK(a >= 0, detail::concat(detail::fixed_string("ctflow::cumsum: axis out of range: "), shape_string_v<S>));
  constexpr int ax = a < 0 ? 0 : a;
  using K = ops::along_axis_op<value_t<E>, S, ax, S, value_t<E>, ops::cumsum_fn>;
  K k;
  k.f = {exclusive, reverse};
  const auto d = e.dims();
  k.out_dims = d;
  for (int i = 0; i < S::rank; ++i) {
    if (i < ax) k.outer *= d[std::size_t(i)];
    if (i > ax) k.inner *= d[std::size_t(i)];
  }
  k.n = S::rank ? d[std::size_t(ax)] : 1;
  return expr::make_computed(k, std::forward<E>(e));
}

namespace ops {

/// Sums g (extents of a broadcast result, rank RG) down to the operand's extents (rank RO):
/// leading axes it lacks and axes where it has extent 1.
template <class T, class SG, class SO> struct sum_to_op {
  using value_type = T;
  using shape_type = SO;
  static constexpr std::size_t RG = std::size_t(SG::rank), RO = std::size_t(SO::rank);
  dims_t<RO> out_dims{};
};
/// reduce_prod's adjoint: g times the product of the other elements of each reduced group.
template <class T, class SIn, std::size_t RO> struct prod_adjoint_op {
  using value_type = T;
  using shape_type = SIn;
  static constexpr std::size_t R = std::size_t(SIn::rank);
  dims_t<R> out_dims{};
  std::array<bool, R> reduced{};
};
}  // namespace ops

}  // namespace ctflow
