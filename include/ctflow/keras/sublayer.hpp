#pragma once
/// @file
/// @brief A custom layer's sub-layers (keras::sublayer, Keras's `self.dense = Dense(64)`): each
/// call of one is a boundary of its custom layer's expression, run and differentiated as a
/// model's layers are.

#include <cstddef>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include <ctflow/ctflow.hpp>
#include <ctflow/keras/layer_call.hpp>

namespace ctflow::keras {

namespace detail {

/// One call of a sub-layer in its custom layer's call: the sub-layer's own layer_call (its output
/// and what its backward pass needs), its input kept for that pass, the adjoint of its output,
/// and how it runs: whether the sub-layer's weights train, whether it is recorded (its custom
/// layer's call is, or it was called with training_t), whether it runs as in inference.
template <class L> struct sublayer_slot {
  using input_view = std::tuple_element_t<0, input_views<L>>;
  layer_call<L> call;
  Tensor<value_t<input_view>, shape_t<input_view>, layer_device_t<L>> x;
  Tensor<typename L::value_type, output_shape_t<L>, layer_device_t<L>> dy;
  bool trainable = true, training = false, inference_mode = false, backward_done = false;
};

/// A sub-layer's calls in one call of its custom layer (its sublayer_slots, made on the first
/// such call), and how that call runs.
struct sublayer_calls {
  std::vector<void*> slots;
  std::size_t used = 0;
  bool trainable = true, training = false;
};

/// A sub-layer's calls for each call of its custom layer (keyed by the custom layer's
/// layer_call: a custom layer shared by two calls of a model, or called twice by another custom
/// layer, keeps each call's own until its backward pass), and the index of the call being built.
/// A copy starts empty. One type for every sub-layer: the slots' type (and with it the
/// sub-layer's layer_call) is completed only where the sub-layer is called, and `destroy`, set
/// there, deletes them.
struct sublayer_state {
  std::vector<std::pair<const void*, sublayer_calls>> tables;  // a model has one or two owners
  std::size_t current = 0;
  void (*destroy)(void*) = nullptr;
  sublayer_state() = default;
  sublayer_state(const sublayer_state&) {}
  sublayer_state& operator=(const sublayer_state&) { return *this; }
  ~sublayer_state() {
    for (auto& t : tables)
      for (void* s : t.second.slots) destroy(s);
  }
  /// The index of owner's table (made on its first call).
  std::size_t index(const void* owner) {
    std::size_t i = 0;
    while (i < tables.size() && tables[i].first != owner) ++i;
    if (i == tables.size()) tables.emplace_back(owner, sublayer_calls{});
    return i;
  }
};

/// The op of a sub-layer's call in its custom layer's expression (a boundary that runs itself):
/// its operands are the sub-layer's input and weights, so that autodiff sends the adjoint of the
/// output through it to both.
template <class S> struct sublayer_op {
  static constexpr bool runs_itself = true;
  using value_type = typename S::value_type;
  using shape_type = typename S::output_shape;
  dims_t<std::size_t(shape_type::rank)> out_dims{};
  const S* sub = nullptr;
  sublayer_slot<typename S::layer_type>* slot = nullptr;
  template <class X, class... W> void run(value_type* out, const X& x, const W&...) const { sub->run_call(*slot, out, x.data, x.dims); }
};

/// The extents of built layer L's output for an input of extents d.
template <class L, std::size_t R> auto output_dims(const L& l, const dims_t<R>& d) {
  if constexpr (differentiates_itself<L>) return L::output_dims(d);
  else return l.call(std::tuple_element_t<0, input_views<L>>(nullptr, d), inference_t{}).dims();
}

}  // namespace detail

/// @brief A sub-layer of a custom layer (a field: Keras's `self.dense = Dense(64)` in
/// `__init__`): Spec built for inputs of dtype T and shape In on device D, with its name (Keras's automatic
/// one when the spec has none) and trainable flag. `sub(x, training)` calls it, in training mode
/// for `keras::training_t` and in inference mode for `keras::inference_t` (Keras's
/// `self.bn(x, training=False)` inside a training call: still recorded, so the adjoint reaches x).
///
/// A sub-layer's call is a boundary of its custom layer's expression: the sub-layer runs as the
/// layers of a model do (its own expression evaluated, recorded for its own backward pass in
/// training), and the custom layer's backward pass sends the adjoint of the call's output
/// through it. So the compiler sees each layer's expression once, however deep the nesting,
/// and a sub-layer called twice is one layer with two calls (its weights' gradients summed).
template <class Spec, DType T, ShapeType In, class D = cpu> struct sublayer {
  using spec_type = Spec;
  using layer_type = detail::built_on_t<Spec, T, In, D>;
  using value_type = typename layer_type::value_type;
  using device_type = D;
  using output_shape = detail::output_shape_t<layer_type>;
  using input_view = std::tuple_element_t<0, detail::input_views<layer_type>>;
  std::string name;
  bool trainable = true;
  layer_type layer;

  sublayer() : sublayer(Spec{}) {}
  explicit sublayer(const Spec& spec)
      : name(spec.name.empty() ? detail::auto_name(detail::snake_case(Spec::class_name)) : spec.name),
        trainable(spec.trainable),
        layer(detail::construct_layer<layer_type>(spec)) {}

  /// @brief The sub-layer's call on x (an expression of the custom layer's input, weights and
  /// other calls): a node of the custom layer's expression.
  template <class X, class Training> auto operator()(const X& x, Training training) const {
    using S = shape_t<input_view>;
    CTFLOW_STATIC_CHECK((std::is_same_v<value_t<X>, value_t<input_view>> && ctflow::detail::same_extents<S, shape_t<X>>()),
                        ctflow::detail::concat(ctflow::detail::fixed_string("ctflow::keras::"), ctflow::detail::fixed_string_of<[] { return Spec::class_name; }>(),
                                               ctflow::detail::fixed_string(": a sub-layer's input must have the dtype and shape it was built for: "),
                                               shape_string_v<S>, ctflow::detail::fixed_string(" x "), shape_string_v<shape_t<X>>));
    if constexpr (std::is_same_v<value_t<X>, value_t<input_view>> && ctflow::detail::same_extents<S, shape_t<X>>()) {
      auto& l = const_cast<layer_type&>(layer);  // a model's layers are its own: call() is const by convention
      const auto d = x.dims();
      if (!matches_static<S>(d)) throw_shape_error(("ctflow::keras: " + name).c_str(), "its input is not of the shape it was built for", S::extents, d);
      if (state_.tables.empty()) state_.current = state_.index(nullptr);  // a call outside any model's
      auto& calls = state_.tables[state_.current].second;
      if (calls.used == calls.slots.size()) calls.slots.push_back(nullptr);
      if (!calls.slots[calls.used]) {
        state_.destroy = [](void* p) { delete static_cast<slot_type*>(p); };
        calls.slots[calls.used] = new slot_type();
      }
      slot_type& s = *static_cast<slot_type*>(calls.slots[calls.used++]);
      s.trainable = calls.trainable;
      s.training = calls.training || training;
      s.inference_mode = !training;
      const detail::sublayer_op<sublayer> op{detail::output_dims(l, d), this, &s};
      return std::apply([&](auto&... w) { return expr::make_computed(op, x, w...); }, detail::weights_of(l));
    }
  }

 private:
  template <class> friend class layer_call;
  template <class> friend struct detail::sublayer_op;
  template <class> friend struct autodiff::rule;
  using slot_type = detail::sublayer_slot<layer_type>;

  /// Starts a call of the custom layer by owner (its layer_call): the sub-layer's weights train
  /// when `trains` (its custom layer's do) and its flag say so; `training` records its calls.
  void begin_call(const void* owner, bool trains, bool training) {
    state_.current = state_.index(owner);
    auto& calls = state_.tables[state_.current].second;
    calls.used = 0;
    calls.trainable = trains && trainable;
    calls.training = training;
  }
  /// Starts a backward pass of owner's call.
  void begin_backward(const void* owner) {
    auto& calls = state_.tables[state_.index(owner)].second;
    for (std::size_t i = 0; i < calls.used; ++i) static_cast<slot_type*>(calls.slots[i])->backward_done = false;
  }

  /// Runs call s on input x (memory of extents d) into out.
  template <std::size_t R> void run_call(slot_type& s, value_type* out, const value_t<input_view>* x, const dims_t<R>& d) const {
    input_view in(x, d);
    if (s.training) {  // kept until the backward pass (x may be the evaluator's scratch memory)
      detail::resize(s.x, d);
      executor<device_t<input_view>>::assign(s.x.data(), d, in);
      in = input_view(s.x.data(), d);
    }
    const auto y = s.call.forward(const_cast<layer_type&>(layer), s.trainable, {in}, s.training, s.inference_mode);
    executor<device_t<decltype(y)>>::assign(out, y.dims(), y);
  }

  /// The gradient for operand I of call s (0: its input, then its weights) given the adjoint g
  /// of its output: the call's backward pass runs on the first request of a pass.
  template <std::size_t I, class G> auto gradient(slot_type& s, const G& g) const {
    if (!s.backward_done) backward_call(s, g);
    const auto& r = std::get<I>(s.call.gradients());
    if (!r) throw value_error("ctflow::keras: " + name + ": no gradient for operand " + std::to_string(I) + " of its call");
    return TensorView<const value_t<decltype(*r)>, shape_t<decltype(*r)>, device_t<decltype(*r)>>(r->data(), r->dims());
  }

  template <class G> void backward_call(slot_type& s, const G& g) const {
    detail::resize(s.dy, g.dims());
    executor<device_t<G>>::assign(s.dy.data(), s.dy.dims(), g);
    backward_call(s);
  }
  void backward_call(slot_type& s) const {
    s.call.backward(const_cast<layer_type&>(layer), s.trainable, typename layer_call<layer_type>::output_view(s.dy.data(), s.dy.dims()), {true}, name);
    s.backward_done = true;
  }
  mutable detail::sublayer_state state_;
};
/// @brief The sub-layer of Spec that takes Prev's output (a sublayer or a built layer).
template <class Prev, class Spec> using sublayer_after = sublayer<Spec, typename Prev::value_type, typename Prev::output_shape, detail::layer_device_t<Prev>>;

namespace detail {
/// The place of an optional sub-layer that a custom layer's form does not have
/// (`std::conditional_t<projects, sublayer<...>, keras::detail::no_layer>`).
struct no_layer {};
}  // namespace detail

}  // namespace ctflow::keras

namespace ctflow::autodiff {

/// A sub-layer's call sends the adjoint of its output to its input (unless integer) and weights
/// through the sub-layer's own backward pass.
template <class S, class... Ops> struct rule<expr::Computed<keras::detail::sublayer_op<S>, Ops...>> {
  static constexpr bool known = true;
  template <std::size_t I> static constexpr bool differentiable = I > 0 || is_floating_v<value_t<typename S::input_view>>;
  template <std::size_t I, class N, class G, class Y> static auto vjp(const N& n, const G& g, const Y&) { return n.k.sub->template gradient<I>(*n.k.slot, g); }
};

}  // namespace ctflow::autodiff
