#pragma once
/// @brief What a dataset element is, and the component-wise operations on elements that the
/// transformations share: a Tensor, a std::string (TensorFlow's scalar string), a
/// std::vector<std::string> (a batch of strings) or a std::tuple of these (TensorFlow's tuple
/// structure; a map function receives the components as separate arguments).

#include <cstdint>
#include <cstring>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include <ctflow/core/tensor.hpp>

namespace ctflow::data {

/// @brief TensorFlow's tf.data.INFINITE_CARDINALITY and UNKNOWN_CARDINALITY.
inline constexpr std::int64_t infinite_cardinality = -1;
inline constexpr std::int64_t unknown_cardinality = -2;
/// @brief tf.data.AUTOTUNE: the pipeline picks the parallelism (map threads, prefetch depth).
inline constexpr int AUTOTUNE = -1;

namespace detail {

template <class T> struct is_tuple : std::false_type {};
template <class... T> struct is_tuple<std::tuple<T...>> : std::true_type {};
template <class T> inline constexpr bool is_tuple_v = is_tuple<std::remove_cvref_t<T>>::value;

template <class T> struct is_tensor : std::false_type {};
template <class T, class S, class D> struct is_tensor<Tensor<T, S, D>> : std::true_type {};
template <class T> inline constexpr bool is_tensor_v = is_tensor<std::remove_cvref_t<T>>::value;

/// A map function's result as an element: expressions are evaluated, C++ numbers become rank-0
/// tensors, tuples component-wise, anything else (tensors, strings) moves through.
template <class R> auto materialize(R&& r) {
  using V = std::remove_cvref_t<R>;
  if constexpr (is_tuple_v<V>)
    return std::apply([](auto&&... c) { return std::tuple{materialize(std::forward<decltype(c)>(c))...}; }, std::forward<R>(r));
  else if constexpr (is_tensor_v<V>) return V(std::forward<R>(r));
  else if constexpr (Expression<V>) return eval(r);
  else if constexpr (std::is_arithmetic_v<V>) {
    Tensor<V, Shape<>> t;
    t.data()[0] = r;
    return t;
  } else return V(std::forward<R>(r));
}
template <class R> using materialized_t = decltype(materialize(std::declval<R>()));

/// What a map or filter function receives for an element component: a tensor as a read-only
/// TensorView of the pipeline's copy, which outlives the returned expression (so a function
/// taking its argument by value, `[](auto x) { return x * 2; }`, returns no dangling reference);
/// anything else by const reference.
template <class C> decltype(auto) argument(const C& c) {
  if constexpr (is_tensor_v<C>) return TensorView<const typename C::value_type, typename C::shape_type>(c);
  else return (c);
}

/// Calls f with an element: a tuple's components are the arguments (TensorFlow's convention).
template <class F, class E> decltype(auto) call_with(F& f, const E& e) {
  if constexpr (is_tuple_v<E>) return std::apply([&](const auto&... c) -> decltype(auto) { return f(argument(c)...); }, e);
  else return f(argument(e));
}

/// A predicate's result as a bool: bool, a number, or a rank-0 expression (tf.data's filter).
template <class R> bool truth(const R& r) {
  if constexpr (Expression<R>) {
    static_assert(shape_t<R>::rank == 0, "ctflow::data::filter: the predicate must return a scalar");
    return bool(eval(r).data()[0]);
  } else return bool(r);
}

// ---- batching: the element type with a leading extent, and the copies that fill it ------------

template <class E, std::size_t N> struct batched;
template <class T, extent_t... X, std::size_t N> struct batched<Tensor<T, Shape<X...>>, N> {
  using type = Tensor<T, Shape<extent_t(N), X...>>;
};
template <std::size_t N> struct batched<std::string, N> { using type = std::vector<std::string>; };
template <class... C, std::size_t N> struct batched<std::tuple<C...>, N> {
  using type = std::tuple<typename batched<C, N>::type...>;
};
template <class E, std::size_t N> using batched_t = typename batched<E, N>::type;

/// Copies a tensor of extents `src` into the row-major block of extents `dst` (each extent of
/// `dst` at least that of `src`) at `out`; the rest of the block keeps its values (the padding).
template <class T, std::size_t R>
void copy_padded(const T* in, const dims_t<R>& src, T* out, const dims_t<R>& dst, std::size_t axis = 0) {
  if constexpr (R == 0) { *out = *in; }
  else {
    if (axis + 1 == R) {
      if (src[axis]) std::memcpy(out, in, src[axis] * sizeof(T));
      return;
    }
    std::size_t in_step = 1, out_step = 1;
    for (std::size_t k = axis + 1; k < R; ++k) { in_step *= src[k]; out_step *= dst[k]; }
    for (std::size_t i = 0; i < src[axis]; ++i) copy_padded(in + i * in_step, src, out + i * out_step, dst, axis + 1);
  }
}

}  // namespace detail
}  // namespace ctflow::data
