#pragma once
/// @brief ctflow's exceptions and the machinery that turns a static rule violation into one
/// short g++ error whose text is the user's message.

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <new>
#include <stdexcept>
#include <string>
#include <type_traits>

namespace ctflow {

/// @brief A shape rule broken at run time (a `dyn` extent that does not fit). Its text is the
/// one the compiler prints for the static case.
struct shape_error : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};
/// @brief A value that is out of its domain (an index, a count).
struct value_error : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};
/// @brief A NaN or an infinity where check_numerics looks (tf.debugging.check_numerics), naming
/// the op and the first bad index.
struct numerics_error : std::domain_error {
  using std::domain_error::domain_error;
};
/// @brief A file or stream that cannot be read or written, naming what, where and why.
struct io_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};
/// @brief A device that cannot be used (no driver, no GPU, a library missing, a kernel that does
/// not compile), naming what was asked of it and why.
struct device_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// @brief What ctflow calls, in a program built without exceptions (`-fno-exceptions`), where
/// it would throw: `kind` names the exception ("shape_error", "value_error", ...), `message` is
/// its text. A handler does not return (if it does, std::abort follows); the default one prints
/// "ctflow: <kind>: <message>" to stderr and aborts. A program built with exceptions throws.
using error_handler = void (*)(const char* kind, const char* message);

namespace detail {

inline void print_and_abort(const char* kind, const char* message) {
  // fputs rather than fprintf: a microcontroller's program keeps no formatting code for it.
  std::fputs("ctflow: ", stderr);
  std::fputs(kind, stderr);
  std::fputs(": ", stderr);
  std::fputs(message, stderr);
  std::fputs("\n", stderr);
  std::abort();
}
inline error_handler& current_error_handler() {
  static error_handler h = print_and_abort;
  return h;
}

template <class E> constexpr const char* error_kind() {
  if constexpr (std::is_same_v<E, shape_error>) return "shape_error";
  else if constexpr (std::is_same_v<E, value_error>) return "value_error";
  else if constexpr (std::is_same_v<E, numerics_error>) return "numerics_error";
  else if constexpr (std::is_same_v<E, io_error>) return "io_error";
  else if constexpr (std::is_same_v<E, device_error>) return "device_error";
  else if constexpr (std::is_same_v<E, std::bad_alloc>) return "bad_alloc";
  else static_assert(sizeof(E) == 0, "ctflow::detail::raise: not one of ctflow's errors");
}
/// A message of at most 255 characters, built with no heap: the text of the errors a network's
/// static shapes can reach, in a program linked with no C++ runtime (an embedded one).
class short_message {
 public:
  short_message& operator<<(const char* s) {
    while (*s && n_ + 1 < sizeof text_) text_[n_++] = *s++;
    text_[n_] = 0;
    return *this;
  }
  short_message& operator<<(std::size_t v) {
    char digits[24];
    int k = 0;
    do { digits[k++] = char('0' + v % 10); v /= 10; } while (v);
    while (k > 0 && n_ + 1 < sizeof text_) text_[n_++] = digits[--k];
    text_[n_] = 0;
    return *this;
  }
  const char* c_str() const { return text_; }

 private:
  char text_[256] = {};
  std::size_t n_ = 0;
};

inline const char* message_text(const std::string& m) { return m.c_str(); }
inline const char* message_text(const char* m) { return m; }

/// Throws E(message), or, without exceptions, calls the error handler (and aborts if it returns).
template <class E, class M> [[noreturn]] void raise(const M& message) {
#if defined(__cpp_exceptions)
  throw E(message);
#else
  current_error_handler()(error_kind<E>(), message_text(message));
  std::abort();
#endif
}
/// std::bad_alloc (memory the system did not give).
[[noreturn]] inline void raise_bad_alloc() {
#if defined(__cpp_exceptions)
  throw std::bad_alloc();
#else
  current_error_handler()("bad_alloc", "out of memory");
  std::abort();
#endif
}

}  // namespace detail

/// @brief Sets the handler of errors in a program built without exceptions; returns the one
/// before.
inline error_handler set_error_handler(error_handler h) {
  error_handler before = detail::current_error_handler();
  detail::current_error_handler() = h ? h : detail::print_and_abort;
  return before;
}

namespace detail {

/// A string usable as a template argument: static messages are built at compile time from
/// shapes and dtypes and shown by the compiler in the name of an incomplete type.
template <std::size_t N> struct fixed_string {
  char s[N]{};
  constexpr fixed_string() = default;
  constexpr fixed_string(const char (&x)[N]) { std::copy_n(x, N, s); }
  static constexpr std::size_t size() { return N - 1; }
};
template <std::size_t N> fixed_string(const char (&)[N]) -> fixed_string<N>;

template <std::size_t... N> constexpr auto concat(const fixed_string<N>&... parts) {
  fixed_string<((N - 1) + ... + 0) + 1> r;
  std::size_t at = 0;
  ((std::copy_n(parts.s, N - 1, r.s + at), at += N - 1), ...);
  return r;
}

template <std::size_t V> constexpr auto number_string() {
  constexpr std::size_t digits = [] { std::size_t d = 1; for (std::size_t v = V; v >= 10; v /= 10) ++d; return d; }();
  fixed_string<digits + 1> r;
  std::size_t v = V;
  for (std::size_t i = digits; i-- > 0; v /= 10) r.s[i] = char('0' + v % 10);
  return r;
}

/// The string a constexpr function returns (F()), as a fixed_string.
template <auto F> constexpr auto fixed_string_of() {
  constexpr std::size_t n = std::char_traits<char>::length(F());
  fixed_string<n + 1> r;
  std::copy_n(F(), n, r.s);
  return r;
}

/// Never defined: naming it with a message makes g++ print "error: ... incomplete type
/// 'ctflow::detail::static_error<...{"<message>"}>'", the message inside the error line.
template <fixed_string Message> struct static_error;

/// What a builder returns when one of its static checks failed: `auto y = builder(...);` still
/// declares a value, so the check's message is the only error. It flows on without another
/// error: the element-wise builders, cast and the reductions take it and give it back, and a
/// tensor is made or assigned from it silently (`Tensor<float, S> c = a * b;`), so that the mistake
/// a user wrote is one message however the expression goes on.
struct failed_check {};
/// A failed check's result (an operand that already reported its error).
template <class X> concept failed = std::is_same_v<std::remove_cvref_t<X>, failed_check>;

}  // namespace detail
}  // namespace ctflow

/// Checks a compile-time rule; on failure the compiler's one error line carries the message (a
/// detail::fixed_string built at compile time from the shapes and dtypes involved). clang checks
/// a non-dependent construct where it is written, even in a discarded branch, and prints a
/// fixed_string's characters as numbers: its check is a static_assert in a template of its own,
/// instantiated only where the rule fails, and the message is the macro's line that clang quotes
/// (its type named, so that what only the message reads is read).
#if defined(__clang__)
#define CTFLOW_STATIC_CHECK(COND, ...)                                                                              \
  do {                                                                                                              \
    if constexpr (!(COND)) {                                                                                        \
      (void)sizeof(decltype(__VA_ARGS__));                                                                          \
      []<bool Failed = true>() { static_assert(!Failed, "ctflow: see the message below"); }();                      \
    }                                                                                                               \
  } while (0)
#else
#define CTFLOW_STATIC_CHECK(COND, ...)                                                   \
  do {                                                                                   \
    if constexpr (!(COND)) (void)sizeof(::ctflow::detail::static_error<__VA_ARGS__>);    \
  } while (0)
#endif
