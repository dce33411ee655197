#pragma once
// Element-wise nodes: a constant, a functor over one operand, over two broadcast operands, and
// `where`. They hold operands only; evaluation lives in the backends. Every node's type is defined
// even for operands that break an op's rule (the builder reports that), so a user sees one error.

#include <tuple>

#include <ctflow/core/concepts.hpp>

namespace ctflow::expr {

/// A number broadcast to any shape (rank 0): `x * 2.f` holds Scalar<float>.
template <class T> struct Scalar {
  using ctflow_expression = void;
  using value_type = T;
  using shape_type = Shape<>;
  using device_type = any_device;
  compute_t<T> value;
  constexpr dims_t<0> dims() const { return {}; }
  /// @brief The number of a rank-0 expression, evaluated now (see ctflow::item).
  T item() const { return T(value); }
  operator T() const { return T(value); }
};

/// F applied to each element of E; F::result<In> names the output dtype.
template <class F, class E> struct Unary {
  using ctflow_expression = void;
  using value_type = typename F::template result<value_t<E>>;
  using shape_type = shape_t<E>;
  using device_type = device_t<E>;
  F f;
  stored_t<E> e;
  auto dims() const { return e.dims(); }
  /// @brief The number of a rank-0 expression, evaluated now (see ctflow::item).
  value_type item() const requires(shape_type::rank == 0) { return ctflow::item(*this); }
  operator value_type() const requires(shape_type::rank == 0) { return ctflow::item(*this); }
};

/// F applied to pairs of elements of L and R broadcast against each other.
template <class F, class L, class R> struct Binary {
  using ctflow_expression = void;
  using value_type = typename F::template result<value_t<L>>;
  using shape_type = broadcast_shape_t<shape_t<L>, shape_t<R>>;
  using device_type = common_device_t<device_t<L>, device_t<R>>;
  F f;
  stored_t<L> l;
  stored_t<R> r;
  auto dims() const {
    if constexpr (shape_type::is_static) return shape_type::extents;
    else return broadcast_dims(F::name, l.dims(), r.dims());
  }
  /// @brief The number of a rank-0 expression, evaluated now (see ctflow::item).
  value_type item() const requires(shape_type::rank == 0) { return ctflow::item(*this); }
  operator value_type() const requires(shape_type::rank == 0) { return ctflow::item(*this); }
};

/// where(c, a, b): a where c holds, b elsewhere; all three broadcast together.
template <class C, class A, class B> struct Select {
  using ctflow_expression = void;
  using value_type = value_t<A>;
  using shape_type = broadcast_shape_t<shape_t<C>, broadcast_shape_t<shape_t<A>, shape_t<B>>>;
  using device_type = common_device_t<device_t<C>, device_t<A>, device_t<B>>;
  stored_t<C> c;
  stored_t<A> a;
  stored_t<B> b;
  auto dims() const {
    if constexpr (shape_type::is_static) return shape_type::extents;
    else return broadcast_dims("ctflow::where", c.dims(), broadcast_dims("ctflow::where", a.dims(), b.dims()));
  }
  /// @brief The number of a rank-0 expression, evaluated now (see ctflow::item).
  value_type item() const requires(shape_type::rank == 0) { return ctflow::item(*this); }
  operator value_type() const requires(shape_type::rank == 0) { return ctflow::item(*this); }
};

template <class E> struct is_elementwise : std::false_type {};
template <class T> struct is_elementwise<Scalar<T>> : std::true_type {};
template <class F, class E> struct is_elementwise<Unary<F, E>> : std::true_type {};
template <class F, class L, class R> struct is_elementwise<Binary<F, L, R>> : std::true_type {};
template <class C, class A, class B> struct is_elementwise<Select<C, A, B>> : std::true_type {};

}  // namespace ctflow::expr
