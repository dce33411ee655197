#pragma once
/// @file
/// @brief `ctflow::matmul` (rank 2 and batched, with transpose_a / transpose_b) and `tensordot`.

#include <type_traits>

#include <ctflow/core/tensor.hpp>
#include <ctflow/expr/computed.hpp>
#include <ctflow/ops/array.hpp>

namespace ctflow {

/// @brief Tags of matmul's options: `matmul(a, b, transpose_b)`.
struct transpose_a_t {};
struct transpose_b_t {};
inline constexpr transpose_a_t transpose_a{};
inline constexpr transpose_b_t transpose_b{};

namespace ops {

template <class T, class SA, class SB, bool TA, bool TB> struct matmul_op {
  static constexpr int RA = SA::rank, RB = SB::rank;
  static constexpr int R = RA > RB ? RA : RB;
  // Static extents of the product: [batch..., M, N].
  static constexpr std::size_t M = SA::extents[std::size_t(TA ? RA - 1 : RA - 2)];
  static constexpr std::size_t KA = SA::extents[std::size_t(TA ? RA - 2 : RA - 1)];
  static constexpr std::size_t KB = SB::extents[std::size_t(TB ? RB - 1 : RB - 2)];
  static constexpr std::size_t N = SB::extents[std::size_t(TB ? RB - 2 : RB - 1)];
  static constexpr dims_t<std::size_t(R)> out_extents = [] {
    dims_t<std::size_t(R)> d{};
    using BS = broadcast_shape_t<shape_of<[] { dims_t<std::size_t(RA - 2)> b{}; for (int i = 0; i < RA - 2; ++i) b[std::size_t(i)] = SA::extents[std::size_t(i)]; return b; }()>,
                                 shape_of<[] { dims_t<std::size_t(RB - 2)> b{}; for (int i = 0; i < RB - 2; ++i) b[std::size_t(i)] = SB::extents[std::size_t(i)]; return b; }()>>;
    for (int i = 0; i < R - 2; ++i) d[std::size_t(i)] = BS::extents[std::size_t(i)];
    d[std::size_t(R - 2)] = M;
    d[std::size_t(R - 1)] = N;
    return d;
  }();

  using value_type = T;
  using shape_type = shape_of<out_extents>;
  dims_t<std::size_t(R)> out_dims{};

};

template <bool TA, bool TB, class A, class B> auto make_matmul(A&& a, B&& b) {
  using SA = shape_t<A>;
  using SB = shape_t<B>;
  using T = value_t<A>;
  constexpr auto op = detail::fixed_string("ctflow::matmul");
  CTFLOW_STATIC_CHECK((std::is_same_v<T, value_t<B>>),
                      detail::concat(op, detail::fixed_string(": dtypes differ: "), detail::fixed_string_of<dtype_name<T>>(),
                                     detail::fixed_string(" vs "), detail::fixed_string_of<dtype_name<value_t<B>>>(),
                                     detail::fixed_string("; convert one with ctflow::cast")));
  if constexpr (SA::rank < 2 || SB::rank < 2) {
    CTFLOW_STATIC_CHECK(false, detail::concat(op, detail::fixed_string(": operands need rank 2 or more: "), shape_string_v<SA>,
                                              detail::fixed_string(" x "), shape_string_v<SB>));
    return 0;
  } else {
    using K = matmul_op<T, SA, SB, TA, TB>;
    constexpr bool inner_ok = K::KA == K::KB || K::KA == dyn || K::KB == dyn;
    CTFLOW_STATIC_CHECK(inner_ok, detail::concat(op, detail::fixed_string(": inner dimensions differ: "), shape_string_v<SA>,
                                                 detail::fixed_string(" x "), shape_string_v<SB>));
    const auto da = a.dims();
    const auto db = b.dims();
    const std::size_t ka = da[std::size_t(TA ? SA::rank - 2 : SA::rank - 1)], kb = db[std::size_t(TB ? SB::rank - 1 : SB::rank - 2)];
    if (ka != kb) throw_shape_error("ctflow::matmul", "inner dimensions differ", da, db);
    dims_t<std::size_t(SA::rank - 2)> ba{};
    dims_t<std::size_t(SB::rank - 2)> bb{};
    for (int i = 0; i < SA::rank - 2; ++i) ba[std::size_t(i)] = da[std::size_t(i)];
    for (int i = 0; i < SB::rank - 2; ++i) bb[std::size_t(i)] = db[std::size_t(i)];
    K k;
    if (!can_broadcast(ba, bb)) throw_shape_error("ctflow::matmul", "batch dimensions cannot be broadcast", da, db);
    const auto bd = broadcast_dims("ctflow::matmul", ba, bb);
    for (std::size_t i = 0; i < bd.size(); ++i) k.out_dims[i] = bd[i];
    k.out_dims[std::size_t(K::R - 2)] = da[std::size_t(TA ? SA::rank - 1 : SA::rank - 2)];
    k.out_dims[std::size_t(K::R - 1)] = db[std::size_t(TB ? SB::rank - 2 : SB::rank - 1)];
    return expr::make_computed(k, std::forward<A>(a), std::forward<B>(b));
  }
}

}  // namespace ops

/// @brief tf.linalg.matmul: [..., M, K] x [..., K, N] -> [..., M, N], batch extents broadcast.
/// `matmul(a, b, transpose_b)` multiplies by b's transpose without copying it.
template <Expression A, Expression B> auto matmul(A&& a, B&& b) {
  return ops::make_matmul<false, false>(std::forward<A>(a), std::forward<B>(b));
}
template <Expression A, Expression B> auto matmul(A&& a, B&& b, transpose_a_t) {
  return ops::make_matmul<true, false>(std::forward<A>(a), std::forward<B>(b));
}
template <Expression A, Expression B> auto matmul(A&& a, B&& b, transpose_b_t) {
  return ops::make_matmul<false, true>(std::forward<A>(a), std::forward<B>(b));
}
template <Expression A, Expression B> auto matmul(A&& a, B&& b, transpose_a_t, transpose_b_t) {
  return ops::make_matmul<true, true>(std::forward<A>(a), std::forward<B>(b));
}


/// @brief tf.tensordot(a, b, axes=N): contracts the last N axes of a with the first N of b
/// (N = 1 is matmul). The contracted extents must be static; the result's shape is a's leading
/// axes followed by b's trailing ones.
template <int N = 1, Expression A, Expression B> auto tensordot(A&& a, B&& b) {
  using SA = shape_t<A>;
  using SB = shape_t<B>;
  constexpr int RA = SA::rank, RB = SB::rank;
  static_assert(N >= 1 && N <= RA && N <= RB, "ctflow::tensordot: contract between 1 and rank axes");
  static constexpr auto k = [] {
    std::size_t p = 1;
    for (int i = RA - N; i < RA; ++i) p = SA::extents[std::size_t(i)] == dyn ? dyn : p * SA::extents[std::size_t(i)];
    return p;
  }();
  static_assert(k != dyn, "ctflow::tensordot: the contracted axes need static extents");
  static constexpr auto out_ext = [] {
    dims_t<std::size_t(RA + RB - 2 * N)> d{};
    for (int i = 0; i < RA - N; ++i) d[std::size_t(i)] = SA::extents[std::size_t(i)];
    for (int i = N; i < RB; ++i) d[std::size_t(RA + i - 2 * N)] = SB::extents[std::size_t(i)];
    return d;
  }();
  const auto da = a.dims();
  const auto db = b.dims();
  for (int i = 0; i < N; ++i)
    if (da[std::size_t(RA - N + i)] != db[std::size_t(i)]) throw_shape_error("ctflow::tensordot", "contracted dimensions differ", da, db);
  dims_t<std::size_t(RA + RB - 2 * N)> out{};
  for (int i = 0; i < RA - N; ++i) out[std::size_t(i)] = da[std::size_t(i)];
  for (int i = N; i < RB; ++i) out[std::size_t(RA + i - 2 * N)] = db[std::size_t(i)];
  auto product_2d = matmul(reshape<Shape<dyn, k>>(std::forward<A>(a)), reshape<Shape<k, dyn>>(std::forward<B>(b)));
  return reshape<shape_of<out_ext>>(std::move(product_2d), out);
}

}  // namespace ctflow
