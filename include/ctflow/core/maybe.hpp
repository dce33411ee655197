#pragma once
/// @file
/// @brief `ctflow::maybe<T>`: a value or none, for the gradients ctflow returns.

#include <new>
#include <type_traits>
#include <utility>

#include <ctflow/core/errors.hpp>

namespace ctflow {

/// @brief A value or none: what the gradients ctflow returns hold (a leaf the adjoint does not
/// reach has none). The part of std::optional's interface those callers use (`has_value`,
/// `operator bool`, `*`, `->`, `value`, `emplace`, `reset`), for the compiler's sake: each
/// std::optional<Tensor<...>> type costs g++ about 1 MB (its constructors' constraints test
/// Tensor's converting constructors) and a model names one per weight of every layer; a
/// maybe<Tensor<...>> costs a seventh of that.
template <class T> class maybe {
 public:
  using value_type = T;

  maybe() noexcept {}
  maybe(maybe&& o) noexcept(std::is_nothrow_move_constructible_v<T>) {
    if (o.has_) emplace(std::move(o.v_));
  }
  maybe(const maybe& o) {
    if (o.has_) emplace(o.v_);
  }
  maybe& operator=(maybe&& o) noexcept(std::is_nothrow_move_constructible_v<T>) {
    if (this != &o) {
      reset();
      if (o.has_) emplace(std::move(o.v_));
    }
    return *this;
  }
  maybe& operator=(const maybe& o) {
    if (this != &o) {
      reset();
      if (o.has_) emplace(o.v_);
    }
    return *this;
  }
  ~maybe() { reset(); }

  /// @brief Makes the value from a... (destroying the one held first).
  template <class... A> T& emplace(A&&... a) {
    reset();
    ::new (static_cast<void*>(&v_)) T(std::forward<A>(a)...);
    has_ = true;
    return v_;
  }
  /// @brief Destroys the value held, if any.
  void reset() noexcept {
    if (has_) {
      v_.~T();
      has_ = false;
    }
  }

  /// @brief Whether it holds a value (also `if (g)`); `*g` and `g->` reach it.
  bool has_value() const noexcept { return has_; }
  explicit operator bool() const noexcept { return has_; }
  T& operator*() & noexcept { return v_; }
  const T& operator*() const& noexcept { return v_; }
  T&& operator*() && noexcept { return std::move(v_); }
  T* operator->() noexcept { return &v_; }
  const T* operator->() const noexcept { return &v_; }
  /// @brief The value; a value_error when there is none.
  T& value() & { return has_ ? v_ : none(); }
  const T& value() const& { return has_ ? v_ : none(); }
  T&& value() && { return std::move(has_ ? v_ : none()); }

 private:
  [[noreturn]] static T& none() { ctflow::detail::raise<value_error>("ctflow::maybe: no value (a gradient the adjoint did not reach)"); }
  union {
    T v_;
  };
  bool has_ = false;
};

}  // namespace ctflow
