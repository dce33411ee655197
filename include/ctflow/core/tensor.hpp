#pragma once
/// @file
/// @brief `Tensor<T, Shape>`: owning, contiguous, row-major, 64-byte aligned; `TensorView`: the
/// same over memory the user owns (zero-copy interop).

#include <algorithm>
#include <initializer_list>
#include <ostream>
#include <span>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include <ctflow/detail/buffer.hpp>
#include <ctflow/expr/node.hpp>
#include <ctflow/core/concepts.hpp>
#include <ctflow/core/device.hpp>
#include <ctflow/core/print.hpp>

namespace ctflow {

namespace detail {

template <class S, class ES> constexpr bool same_extents() {
  if constexpr (S::rank != ES::rank) return false;
  else {
    for (int i = 0; i < S::rank; ++i) {
      const auto a = S::extents[std::size_t(i)], b = ES::extents[std::size_t(i)];
      if (a != b && a != dyn && b != dyn) return false;
    }
    return true;
  }
}
template <class T, class S, class D, class E> inline constexpr bool store_ok =
    std::is_same_v<T, value_t<E>> && same_extents<S, shape_t<E>>() && same_device_v<D, device_t<E>>;

/// Rules for storing expression E into a tensor of dtype T and shape S on device D.
template <class T, class S, class D, class E> constexpr bool check_store() {
  if constexpr (!same_device_v<D, device_t<E>>) {
    return check_devices<fixed_string("ctflow::Tensor"), D, device_t<E>>();
  } else if constexpr (!std::is_same_v<T, value_t<E>>) {
    CTFLOW_STATIC_CHECK(false, concat(fixed_string("ctflow::Tensor: dtypes differ: "), fixed_string_of<dtype_name<T>>(),
                                      fixed_string(" vs "), fixed_string_of<dtype_name<value_t<E>>>(),
                                      fixed_string("; convert with ctflow::cast")));
    return false;
  } else {
    constexpr bool ok = same_extents<S, shape_t<E>>();
    CTFLOW_STATIC_CHECK(ok, concat(fixed_string("ctflow::Tensor: shapes differ: "), shape_string_v<S>,
                                   fixed_string(" x "), shape_string_v<shape_t<E>>));
    return ok;
  }
}

/// Does any tensor read by e share memory with [b, end) in a way element-wise order cannot
/// tolerate (through a view, a boundary, or with other extents)?
template <class E, std::size_t R> bool unsafe_alias(const E& e, const void* b, const void* end, const dims_t<R>& d) {
  if constexpr (is_leaf_v<E>) {
    const void* lo = e.data();
    const void* hi = e.data() + e.size();
    const bool overlap = lo < end && b < hi;
    if constexpr (rank_v<E> == R) return overlap && (lo != b || e.dims() != d);
    else return overlap;
  } else if constexpr (expr::is_elementwise<std::remove_cvref_t<E>>::value) {
    return expr::any_operand(e, [&](const auto& o) { return unsafe_alias(o, b, end, d); });
  } else {
    return expr::reads_memory(e, b, end);
  }
}

/// An element of a tensor on a device whose memory the host does not read (the GPU): reading it
/// copies it out, assigning it copies the value in (`g(1, 2) = 5.f`).
template <class T, class D> class device_element {
 public:
  explicit device_element(T* p) : p_(p) {}
  operator T() const {
    T v;
    D::copy_to_host(&v, p_, sizeof(T));
    return v;
  }
  device_element& operator=(const T& v) {
    D::copy_from_host(p_, &v, sizeof(T));
    return *this;
  }
  device_element& operator=(const device_element& o) { return *this = T(o); }

 private:
  T* p_;
};

}  // namespace detail

/// @brief The tag of Tensor's constructor that leaves its values unspecified.
struct uninitialized_t {
  explicit uninitialized_t() = default;
};
/// @brief `Tensor<float, Shape<dyn>> t({n}, uninitialized);`
inline constexpr uninitialized_t uninitialized{};

/// @brief An owning tensor: dtype T, shape S (static extents checked by the compiler, `dyn` ones
/// at run time), contiguous row-major memory aligned to 64 bytes.
///
/// Default-constructed static tensors are zero-filled. A tensor with `dyn` extents is built
/// from its full extents: `Tensor<float, Shape<dyn, 3>> x({5, 3});`. Assigning an expression
/// evaluates it (one fused loop for element-wise work).
template <DType T, ShapeType S, class D = cpu> class Tensor {
 public:
  using ctflow_expression = void;
  using value_type = T;
  using shape_type = S;
  using device_type = D;
  static constexpr int rank = S::rank;
  static constexpr bool is_view = false;

  Tensor() : dims_(initial_dims()), buf_(product(dims_)) {}

  /// @brief A zero-filled tensor of the given extents; they must agree with S's static ones.
  explicit Tensor(const dims_t<std::size_t(rank)>& d) : dims_(checked(d)), buf_(product(dims_)) {}
  /// @brief A tensor of the given extents whose values are unspecified until written (torch.empty):
  /// for a result about to be filled, whose memory then is touched once, by its writer.
  Tensor(const dims_t<std::size_t(rank)>& d, uninitialized_t) : dims_(checked(d)), buf_(product(dims_), false) {}

  /// @brief Evaluates an expression (dtype must be T; extents must fit S).
  template <Expression E> requires(!std::is_same_v<std::remove_cvref_t<E>, Tensor>)
  Tensor(const E& e) {
    detail::check_store<T, S, D, E>();
    if constexpr (detail::store_ok<T, S, D, E>) {
      dims_ = checked(e.dims());
      buf_ = buffer_type(product(dims_), false);
      executor<D>::assign(buf_.data(), dims_, e);
    }
  }

  /// @brief (From a failed check's result: nothing more to say, its message was the error.)
  Tensor(detail::failed_check) {}
  Tensor& operator=(detail::failed_check) { return *this; }

  Tensor(const Tensor&) = default;
  Tensor(Tensor&&) noexcept = default;
  Tensor& operator=(const Tensor& o) {
    if (this != &o) { dims_ = o.dims_; buf_ = o.buf_; }
    return *this;
  }
  Tensor& operator=(Tensor&&) noexcept = default;

  /// @brief Evaluates e into this tensor; a `dyn` tensor takes e's extents, a static one must
  /// already have them. Reading this tensor inside e is safe.
  template <Expression E> requires(!std::is_same_v<std::remove_cvref_t<E>, Tensor>)
  Tensor& operator=(const E& e) {
    detail::check_store<T, S, D, E>();
    if constexpr (detail::store_ok<T, S, D, E>) {
      const auto d = checked(e.dims());
      const void* b = buf_.data();
      if (d != dims_ || detail::unsafe_alias(e, b, static_cast<const void*>(buf_.data() + buf_.size()), dims_)) {
        Tensor t(e);
        *this = std::move(t);
      } else {
        executor<D>::assign(buf_.data(), dims_, e);
      }
    }
    return *this;
  }

  /// @brief In-place arithmetic with an expression or a number (`x += 1.f`), in one fused loop.
  template <Operand E> Tensor& operator+=(const E& e) { return *this = *this + e; }
  template <Operand E> Tensor& operator-=(const E& e) { return *this = *this - e; }
  template <Operand E> Tensor& operator*=(const E& e) { return *this = *this * e; }
  template <Operand E> Tensor& operator/=(const E& e) { return *this = *this / e; }

  /// @brief The elements (contiguous, row-major), their number, and the extents.
  T* data() { return buf_.data(); }
  const T* data() const { return buf_.data(); }
  std::size_t size() const { return buf_.size(); }
  const dims_t<std::size_t(rank)>& dims() const { return dims_; }
  /// @brief The extents, as TensorFlow's `shape`.
  const dims_t<std::size_t(rank)>& shape() const { return dims_; }
  /// @brief Element strides (row-major); the elements as an iterator range and as a span (on a
  /// device whose memory the host reads).
  std::array<std::ptrdiff_t, std::size_t(rank)> strides() const { return row_major_strides(dims_); }
  T* begin() requires host_device_v<D> { return data(); }
  T* end() requires host_device_v<D> { return data() + size(); }
  const T* begin() const requires host_device_v<D> { return data(); }
  const T* end() const requires host_device_v<D> { return data() + size(); }
  std::span<T> flat() requires host_device_v<D> { return {data(), size()}; }
  std::span<const T> flat() const requires host_device_v<D> { return {data(), size()}; }

  /// @brief The same elements as a tensor of shape S2 and extents d, taking this tensor's memory
  /// (a reshape of a value about to be dropped, with no copy): `std::move(t).reshaped<S2>(d)`.
  /// Other extents (or another element count) are a shape_error.
  template <ShapeType S2> Tensor<T, S2, D> reshaped(const dims_t<std::size_t(S2::rank)>& d) && {
    if (product(d) != size())
      ctflow::detail::raise<shape_error>("ctflow::Tensor::reshaped: " + format_dims(dims_) + " has " + std::to_string(size()) + " elements, " + format_dims(d) + " " +
                        std::to_string(product(d)));
    return Tensor<T, S2, D>(d, std::move(buf_));
  }

  /// @brief The element at the given indices (unchecked). On a device whose memory the host does
  /// not read (the GPU): a copy of it, or a handle that copies a value in when assigned.
  template <std::integral... I> requires(sizeof...(I) == std::size_t(rank) && host_device_v<D>)
  T& operator()(I... i) { return buf_.data()[offset({std::size_t(i)...})]; }
  template <std::integral... I> requires(sizeof...(I) == std::size_t(rank) && host_device_v<D>)
  const T& operator()(I... i) const { return buf_.data()[offset({std::size_t(i)...})]; }
  template <std::integral... I> requires(sizeof...(I) == std::size_t(rank) && !host_device_v<D>)
  detail::device_element<T, D> operator()(I... i) { return detail::device_element<T, D>(buf_.data() + offset({std::size_t(i)...})); }
  template <std::integral... I> requires(sizeof...(I) == std::size_t(rank) && !host_device_v<D>)
  T operator()(I... i) const { return detail::device_element<T, D>(buf_.data() + offset({std::size_t(i)...})); }
  /// @brief The element at the given indices; value_error when one is out of range.
  template <std::integral... I> requires(sizeof...(I) == std::size_t(rank) && host_device_v<D>)
  T& at(I... i) { return buf_.data()[checked_offset({std::int64_t(i)...})]; }
  template <std::integral... I> requires(sizeof...(I) == std::size_t(rank) && host_device_v<D>)
  const T& at(I... i) const { return buf_.data()[checked_offset({std::int64_t(i)...})]; }
  template <std::integral... I> requires(sizeof...(I) == std::size_t(rank) && !host_device_v<D>)
  detail::device_element<T, D> at(I... i) { return detail::device_element<T, D>(buf_.data() + checked_offset({std::int64_t(i)...})); }
  template <std::integral... I> requires(sizeof...(I) == std::size_t(rank) && !host_device_v<D>)
  T at(I... i) const { return detail::device_element<T, D>(buf_.data() + checked_offset({std::int64_t(i)...})); }
  /// @brief The number of a rank-0 expression, evaluated now (see ctflow::item).
  value_type item() const requires(shape_type::rank == 0) { return ctflow::item(*this); }
  operator value_type() const requires(shape_type::rank == 0) { return ctflow::item(*this); }

 private:
  static dims_t<std::size_t(rank)> initial_dims() {
    dims_t<std::size_t(rank)> d{};
    for (int i = 0; i < rank; ++i) d[std::size_t(i)] = S::extents[std::size_t(i)] == dyn ? 0 : S::extents[std::size_t(i)];
    return d;
  }
  static const dims_t<std::size_t(rank)>& checked(const dims_t<std::size_t(rank)>& d) {
    if (!matches_static<S>(d)) throw_shape_error("ctflow::Tensor", "shapes differ", S::extents, d);
    return d;
  }
  std::size_t offset(const dims_t<std::size_t(rank)>& idx) const {
    std::size_t o = 0;
    for (int k = 0; k < rank; ++k) o = o * dims_[std::size_t(k)] + idx[std::size_t(k)];
    return o;
  }
  std::size_t checked_offset(const std::array<std::int64_t, std::size_t(rank)>& idx) const {
    dims_t<std::size_t(rank)> u{};
    for (int k = 0; k < rank; ++k) {
      if (idx[std::size_t(k)] < 0 || std::size_t(idx[std::size_t(k)]) >= dims_[std::size_t(k)])
        ctflow::detail::raise<value_error>("ctflow::Tensor::at: index " + std::to_string(idx[std::size_t(k)]) + " out of range for axis " +
                          std::to_string(k) + " of " + format_dims(dims_));
      u[std::size_t(k)] = std::size_t(idx[std::size_t(k)]);
    }
    return offset(u);
  }

  template <DType, ShapeType, class> friend class Tensor;
  using buffer_type = typename D::template buffer<T>;
  Tensor(const dims_t<std::size_t(rank)>& d, buffer_type&& b) : dims_(checked(d)), buf_(std::move(b)) {}
  dims_t<std::size_t(rank)> dims_{};
  buffer_type buf_;
};

template <class T, class S, class D> struct is_leaf<Tensor<T, S, D>> : std::true_type {};

/// @brief A tensor over memory the caller owns (zero-copy): `TensorView<float, Shape<dyn, 3>>
/// v(ptr, {n, 3});`. `TensorView<const float, S>` is read-only.
template <class T, ShapeType S, class D = cpu> class TensorView {
 public:
  using ctflow_expression = void;
  using value_type = std::remove_const_t<T>;
  using shape_type = S;
  using device_type = D;
  static constexpr int rank = S::rank;
  static constexpr bool is_view = true;
  static_assert(DType<value_type>, "ctflow::TensorView: not a ctflow dtype");

  /// @brief A view of contiguous row-major memory.
  TensorView(T* p, const dims_t<std::size_t(rank)>& d) : TensorView(p, d, row_major_strides(d)) {}
  /// @brief A view of a static shape.
  explicit TensorView(T* p) requires S::is_static : TensorView(p, S::extents) {}
  /// @brief A view with element strides of its own.
  TensorView(T* p, const dims_t<std::size_t(rank)>& d, const std::array<std::ptrdiff_t, std::size_t(rank)>& s)
      : p_(p), dims_(d), strides_(s) {
    if (!matches_static<S>(d)) throw_shape_error("ctflow::TensorView", "shapes differ", S::extents, d);
  }
  /// @brief A view of a whole tensor (of this rank; extents checked).
  template <class S2> requires(S2::rank == rank) TensorView(Tensor<value_type, S2, D>& t) : TensorView(t.data(), t.dims()) {}
  template <class S2> requires(S2::rank == rank && std::is_const_v<T>)
  TensorView(const Tensor<value_type, S2, D>& t) : TensorView(t.data(), t.dims()) {}

  /// @brief Writes e into the viewed memory (extents must be equal).
  template <Expression E> requires(!std::is_const_v<T>)
  TensorView& operator=(const E& e) {
    detail::check_store<value_type, S, D, E>();
    if constexpr (detail::store_ok<value_type, S, D, E>) {
      if (e.dims() != dims_) throw_shape_error("ctflow::TensorView", "shapes differ", dims_, e.dims());
      const bool contiguous = strides_ == row_major_strides(dims_);
      const void* b = p_;
      const void* end = p_ + size();
      if (contiguous && !detail::unsafe_alias(e, b, end, dims_)) {
        executor<D>::assign(p_, dims_, e);
      } else if constexpr (host_device_v<D>) {
        // Evaluate first, then scatter into the strided memory (it may overlap the operands).
        const Tensor<value_type, S, D> t(e);
        scatter(t.data(), p_);
      } else if (size() > 0) {
        // On a device whose memory the host does not read: the values and the viewed span
        // copied to the host, scattered there, and the span copied back.
        const Tensor<value_type, S, D> t(e);
        std::vector<value_type> values(t.size());
        D::copy_to_host(values.data(), t.data(), t.size() * sizeof(value_type));
        std::ptrdiff_t lo = 0, hi = 0;
        for (std::size_t k = 0; k < std::size_t(rank); ++k) (strides_[k] < 0 ? lo : hi) += strides_[k] * std::ptrdiff_t(dims_[k] - 1);
        std::vector<value_type> span(std::size_t(hi - lo + 1));
        D::copy_to_host(span.data(), p_ + lo, span.size() * sizeof(value_type));
        scatter(values.data(), span.data() - lo);
        D::copy_from_host(p_ + lo, span.data(), span.size() * sizeof(value_type));
      }
    }
    return *this;
  }

  /// @brief (A failed check's result: nothing more to say.)
  TensorView& operator=(detail::failed_check) requires(!std::is_const_v<T>) { return *this; }

  /// @brief The viewed memory, the number of elements, the extents and the element strides.
  T* data() const { return p_; }
  std::size_t size() const { return product(dims_); }
  const dims_t<std::size_t(rank)>& dims() const { return dims_; }
  const dims_t<std::size_t(rank)>& shape() const { return dims_; }
  const std::array<std::ptrdiff_t, std::size_t(rank)>& strides() const { return strides_; }

  /// @brief An element (on a device whose memory the host does not read, a copy of it, or for a
  /// writable view a proxy that copies what is assigned to it in).
  template <std::integral... I> requires(sizeof...(I) == std::size_t(rank) && host_device_v<D>)
  T& operator()(I... i) const {
    return p_[offset(i...)];
  }
  template <std::integral... I> requires(sizeof...(I) == std::size_t(rank) && !host_device_v<D> && !std::is_const_v<T>)
  detail::device_element<T, D> operator()(I... i) const {
    return detail::device_element<T, D>(p_ + offset(i...));
  }
  template <std::integral... I> requires(sizeof...(I) == std::size_t(rank) && !host_device_v<D> && std::is_const_v<T>)
  value_type operator()(I... i) const {
    return detail::device_element<value_type, D>(const_cast<value_type*>(p_ + offset(i...)));
  }
  /// @brief The number of a rank-0 expression, evaluated now (see ctflow::item).
  value_type item() const requires(shape_type::rank == 0) { return ctflow::item(*this); }
  operator value_type() const requires(shape_type::rank == 0) { return ctflow::item(*this); }

 private:
  template <class... I> std::ptrdiff_t offset(I... i) const {
    std::ptrdiff_t o = 0, k = 0;
    ((o += std::ptrdiff_t(i) * strides_[std::size_t(k++)]), ...);
    return o;
  }
  // The row-major values `from` written at this view's offsets from base.
  void scatter(const value_type* from, value_type* base) const {
    std::size_t idx[rank > 0 ? rank : 1] = {};
    for (std::size_t n = 0; n < size(); ++n) {
      base[offset_of(idx)] = from[n];
      for (int k = rank; k-- > 0;) {
        if (++idx[k] < dims_[std::size_t(k)]) break;
        idx[k] = 0;
      }
    }
  }
  std::ptrdiff_t offset_of(const std::size_t* idx) const {
    std::ptrdiff_t o = 0;
    for (std::size_t k = 0; k < std::size_t(rank); ++k) o += std::ptrdiff_t(idx[k]) * strides_[k];
    return o;
  }
  T* p_;
  dims_t<std::size_t(rank)> dims_;
  std::array<std::ptrdiff_t, std::size_t(rank)> strides_;
};

template <class T, class S, class D> struct is_leaf<TensorView<T, S, D>> : std::true_type {};

/// @brief Evaluates an expression into a new Tensor of its dtype, shape and device.
template <Expression E> auto eval(const E& e) { return Tensor<value_t<E>, shape_t<E>, placed_device_t<device_t<E>>>(e); }

namespace detail {
template <class X, class Y> bool same_extents_as(const X& x, const Y& y) {
  if constexpr (std::is_same_v<std::remove_cvref_t<decltype(x.dims())>, std::remove_cvref_t<decltype(y.dims())>>) return x.dims() == y.dims();
  else return false;
}
template <class X> bool contiguous_memory(const X& x) {
  if constexpr (requires { x.strides(); }) return x.strides() == row_major_strides(x.dims());
  else return true;
}
/// Does e read a destination of `to` other than where it writes? (An earlier destination's new
/// values would be read where assignments in order read its old ones, or the other way.)
template <class E, class To> bool reads_apart(const E& e, const To& to) {
  return std::apply([&](const auto&... t) { return (unsafe_alias(e, t.data(), t.data() + t.size(), t.dims()) || ...); }, to);
}
/// d = e, written into d's memory (a view's copy assignment would rebind it to e's instead).
template <class Dst, class E> void assign_into(Dst& d, const E& e) {
  if constexpr (Dst::is_view && std::is_same_v<E, Dst>) d.template operator=<E>(e);
  else d = e;
}
template <std::size_t... K, class To, class... E> void assign_in_order(std::index_sequence<K...>, const To& to, const E&... es) {
  (assign_into(std::get<K>(to), es), ...);
}
/// Do two destinations of `to` share memory other than as the same tensor? (A pass writes them
/// chunk by chunk, assignments in order one after the other.)
template <class To> bool destinations_overlap(const To& to) {
  return std::apply([](const auto&... t) {
    const std::pair<const void*, const void*> r[] = {{static_cast<const void*>(t.data()), static_cast<const void*>(t.data() + t.size())}...};
    for (std::size_t i = 0; i < sizeof...(t); ++i)
      for (std::size_t j = i + 1; j < sizeof...(t); ++j)
        if (r[i].first < r[j].second && r[j].first < r[i].second && r[i] != r[j]) return true;
    return false;
  }, to);
}
/// assign_together's single pass, where device D has one and it gives the same values.
template <class D, std::size_t... K, class To, class... E> bool assign_in_one_pass(std::index_sequence<K...>, const To& to, const E&... es) {
  if constexpr (requires { executor<D>::assign_together(std::tuple{std::get<K>(to).data()...}, std::get<0>(to).dims(), es...); }) {
    const auto& first = std::get<0>(to);
    if (!((same_extents_as(std::get<K>(to), first) && same_extents_as(es, first) && contiguous_memory(std::get<K>(to))) && ...)) return false;
    if ((reads_apart(es, to) || ...) || destinations_overlap(to)) return false;
    executor<D>::assign_together(std::tuple{std::get<K>(to).data()...}, first.dims(), es...);
    return true;
  } else {
    return false;
  }
}
}  // namespace detail

/// @brief Assigns each expression to its destination, in order, as `d0 = e0; d1 = e1; ...` would
/// (tensors or views of one device, dtype and extents): in one pass over the elements where the
/// device has one and it gives the same values (each expression reads the destinations, if at
/// all, where it writes), which is how an optimizer updates a variable and its slots:
///
///     assign_together(std::tie(m, v, w), m + (g - m) * 0.1f, v + (square(g) - v) * 0.001f, w - m * lr / (sqrt(v) + 1e-7f));
template <class... Dst, Expression... E> requires(sizeof...(Dst) == sizeof...(E) && sizeof...(E) > 0)
void assign_together(const std::tuple<Dst&...>& to, const E&... es) {
  using D = typename std::remove_cvref_t<std::tuple_element_t<0, std::tuple<Dst...>>>::device_type;
  using seq = std::make_index_sequence<sizeof...(E)>;
  if (detail::assign_in_one_pass<D>(seq{}, to, es...)) return;
  detail::assign_in_order(seq{}, to, es...);
}

/// @brief A copy of a tensor (or of an expression's value) on device To: the device is part of
/// the type, so copies between devices are explicit (`to<reference>(x)`).
template <class To, Expression E> auto to(const E& e) {
  using From = placed_device_t<device_t<E>>;
  if constexpr (std::is_same_v<From, To>) {
    return eval(e);
  } else {
    static_assert(host_device_v<From> || host_device_v<To>, "ctflow::to: no copy between these devices");
    const auto v = eval(e);
    Tensor<value_t<E>, shape_t<E>, To> t(v.dims(), uninitialized);
    const std::size_t bytes = v.size() * sizeof(value_t<E>);
    if (!bytes) return t;
    if constexpr (host_device_v<To>) detail::copy_to_host<From>(t.data(), v.data(), bytes);
    else detail::copy_from_host<To>(t.data(), v.data(), bytes);
    return t;
  }
}

/// @brief The number a rank-0 expression holds (declared in core/concepts.hpp).
template <Expression E> requires(shape_t<E>::rank == 0) value_t<E> item(const E& e) {
  if constexpr (is_leaf_v<E> && host_device_v<device_t<E>>) return *e.data();
  else return *to<cpu>(e).data();
}

/// @brief Prints like TensorFlow's str(tensor), summarised past 1000 elements.
template <class T, class S, class D> std::ostream& operator<<(std::ostream& os, const Tensor<T, S, D>& t) {
  if constexpr (host_device_v<D>) return os << detail::tensor_string(t.data(), t.dims());
  else return os << to<cpu>(t);
}

}  // namespace ctflow
