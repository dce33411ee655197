#pragma once
// pack<T...>: values of types T..., one member each, for what the library holds many kinds of
// (a Computed node's operands, a Sequential's layers). It is an aggregate, brace-initialised
// from one value per member, each in braces of its own inside the pack's and its slots' own
// (pack<A, B>{{{a}, {b}}}: clang's -Wmissing-braces asks for all three; a prvalue constructs
// its member in place), and read by get<I>(p) and apply(f, p). Beside std::tuple, whose
// constructors and their constraints the compiler evaluates for each kind, it costs a small part
// of the compile time (a Keras model's backward pass builds some hundreds of kinds of node:
// tests/keras/devices_test.cpp builds in 58.5 s and 1.42 GB instead of 68.2 s and 1.66 GB with
// those operands and Sequential's layers in packs).

#include <cstddef>
#include <utility>

namespace ctflow::detail {

template <std::size_t I, class T> struct pack_slot {
  T value;
};
template <class Is, class... T> struct pack_slots;
template <std::size_t... I, class... T> struct pack_slots<std::index_sequence<I...>, T...> : pack_slot<I, T>... {};

template <class... T> struct pack : pack_slots<std::index_sequence_for<T...>, T...> {};

template <std::size_t I, class T> constexpr T& slot_value(pack_slot<I, T>& s) { return s.value; }
template <std::size_t I, class T> constexpr const T& slot_value(const pack_slot<I, T>& s) { return s.value; }

/// Member I of p.
template <std::size_t I, class... T> constexpr auto& get(pack<T...>& p) { return detail::slot_value<I>(p); }
template <std::size_t I, class... T> constexpr const auto& get(const pack<T...>& p) { return detail::slot_value<I>(p); }

template <class F, class P, std::size_t... I> constexpr decltype(auto) apply_slots(F&& f, P& p, std::index_sequence<I...>) {
  return std::forward<F>(f)(detail::get<I>(p)...);
}
/// f(members of p...).
template <class F, class... T> constexpr decltype(auto) apply(F&& f, pack<T...>& p) {
  return detail::apply_slots(std::forward<F>(f), p, std::index_sequence_for<T...>{});
}
template <class F, class... T> constexpr decltype(auto) apply(F&& f, const pack<T...>& p) {
  return detail::apply_slots(std::forward<F>(f), p, std::index_sequence_for<T...>{});
}

}  // namespace ctflow::detail
