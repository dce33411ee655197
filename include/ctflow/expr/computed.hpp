#pragma once
// A boundary node: a kernel that reads materialised operands and writes its whole result
// (matmul, reductions, concat, gather, ...). Its result is computed once per evaluation; when it
// is the root of an assignment the kernel writes straight into the destination.

#include <algorithm>
#include <concepts>
#include <cstddef>
#include <string_view>
#include <tuple>

#include <ctflow/core/concepts.hpp>
#include <ctflow/detail/pack.hpp>
#include <ctflow/expr/strided.hpp>

namespace ctflow::expr {

/// K names `value_type`, `shape_type`, the run-time `out_dims`, and
/// `void run(value_type* out, const strided_view<...>&... operands) const`. K may set
/// `strided_operands = true` to take operands as they are instead of contiguous.
///
/// A kernel whose gradient can reuse work of its forward pass (TensorFlow's ops with a second
/// output for their gradient: SparseSoftmaxCrossEntropyWithLogits's backprop, MaxPoolWithArgmax)
/// also names `saved_type`, `std::size_t saved_size() const` and
/// `void run(value_type* out, saved_type* saved, operands...) const`, which fills `saved` as
/// well. value_and_grad's forward pass runs that one and hands `saved` to the node's rule.
///
/// Each device computes K through its kernel for K, except where K runs itself
/// (`static constexpr bool runs_itself = true` and `run(out, operands...)`): an op that evaluates
/// expressions of its own, as a Keras sub-layer's call does, runs the same on every device.
template <class K, class... Ops> struct Computed {
  using ctflow_expression = void;
  using value_type = typename K::value_type;
  using shape_type = typename K::shape_type;
  using device_type = common_device_t<device_t<Ops>...>;
  using op_type = K;
  K k;
  ctflow::detail::pack<stored_t<Ops>...> ops;  // read by detail::get<I> and detail::apply
  dims_t<shape_type::rank> dims() const { return k.out_dims; }
  /// @brief The number of a rank-0 expression, evaluated now (see ctflow::item).
  value_type item() const requires(shape_type::rank == 0) { return ctflow::item(*this); }
  operator value_type() const requires(shape_type::rank == 0) { return ctflow::item(*this); }
};

template <class E> struct is_computed : std::false_type {};
template <class K, class... Ops> struct is_computed<Computed<K, Ops...>> : std::true_type {};

/// Does op K run itself on every device (see Computed)?
template <class K> concept runs_itself = requires { requires K::runs_itself; };

/// Does kernel K leave a by-product for its gradient?
template <class K> concept saving_kernel = requires(const K& k) {
  typename K::saved_type;
  { k.saved_size() } -> std::convertible_to<std::size_t>;
};

namespace detail {
template <class K> constexpr std::string_view pretty_name() { return __PRETTY_FUNCTION__; }
/// The short name of op K: its descriptor's name without namespaces, template arguments and
/// "_op" (ops::matmul_op<...> -> "matmul").
template <class K> constexpr std::string_view op_short_name() {
  std::string_view t = pretty_name<K>();
  t = t.substr(t.find("K = ") + 4);
  t = t.substr(0, t.find_first_of("<;]"));
  if (const auto c = t.rfind("::"); c != std::string_view::npos) t = t.substr(c + 2);
  if (t.size() > 3 && t.substr(t.size() - 3) == "_op") t.remove_suffix(3);
  return t;
}
}  // namespace detail

/// "ctflow::<op>", the name errors about op K give.
template <class K> constexpr auto op_name() {
  constexpr std::string_view n = detail::op_short_name<K>();
  ctflow::detail::fixed_string<n.size() + 9> r;
  std::copy_n("ctflow::", 8, r.s);
  std::copy_n(n.data(), n.size(), r.s + 8);
  return r;
}

/// The node of op k over operands ops, which must be on one device.
template <class K, class... Ops> auto make_computed(K k, Ops&&... ops) {
  check_devices<op_name<K>(), device_t<Ops>...>();
  return Computed<K, Ops&&...>{std::move(k), {{{std::forward<Ops>(ops)}...}}};
}

}  // namespace ctflow::expr
