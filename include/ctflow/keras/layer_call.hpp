#pragma once
/// @file
/// @brief How a model runs a built layer: one call of it (layer_call: its output, and in training
/// the recording its backward pass needs and the gradients that pass computes), and the layer in
/// a model with its Keras name and trainable flag (layer_instance).

#include <algorithm>
#include <array>
#include <cstddef>
#include <new>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

#include <ctflow/core/maybe.hpp>
#include <ctflow/ctflow.hpp>
#include <ctflow/keras/config_dict.hpp>
#include <ctflow/keras/detail/layer_weights.hpp>
#include <ctflow/keras/layer_base.hpp>

namespace ctflow::keras {

namespace detail {

/// The recording of a call of built layer L in mode Mode (training_t, or inference_t for a layer
/// that runs as in inference when frozen), over its input views and its weights.
template <class L, class Inputs, class W, class Mode> struct recording_of;
template <class L, class... In, class... W, class Mode> struct recording_of<L, std::tuple<In...>, std::tuple<W&...>, Mode> {
  using expr = decltype(std::declval<const L&>().call(std::declval<const In&>()..., Mode{}));
  using type = autodiff::recording<expr, In..., W...>;
};

/// An optional R on the heap whose type is completed only where one is made or used: a model
/// that is only built, or only infers, never instantiates its layers' recordings. Its memory is
/// kept from one emplace to the next (a warm training step makes its recordings in place).
template <class R> class lazy_optional {
 public:
  lazy_optional() = default;
  lazy_optional(const lazy_optional&) = delete;
  lazy_optional& operator=(const lazy_optional&) = delete;
  ~lazy_optional() {
    reset();
    if (memory_) release_(memory_);
  }
  template <class... A> R& emplace(A&&... a) {
    reset();
    if (!memory_) {
      memory_ = ::operator new(sizeof(R), std::align_val_t(alignof(R)));
      release_ = [](void* p) { ::operator delete(p, std::align_val_t(alignof(R))); };
      destroy_ = [](void* p) { static_cast<R*>(p)->~R(); };
    }
    R* r = ::new (memory_) R(std::forward<A>(a)...);
    live_ = true;
    return *r;
  }
  void reset() {
    if (live_) destroy_(memory_);
    live_ = false;
  }
  explicit operator bool() const { return live_; }
  R* operator->() const { return static_cast<R*>(memory_); }
  R& operator*() const { return *static_cast<R*>(memory_); }

 private:
  void* memory_ = nullptr;
  bool live_ = false;
  void (*destroy_)(void*) = nullptr;
  void (*release_)(void*) = nullptr;
};

/// Nothing to record (a layer that differentiates itself; the frozen form of most layers).
struct no_record {};
template <class L, class Mode, bool Use> struct optional_recording { using type = no_record; };
template <class L, class Mode> struct optional_recording<L, Mode, true> {
  using type = lazy_optional<typename recording_of<L, input_views<L>, weights_tuple<L>, Mode>::type>;
};

/// The gradients of a call's backward pass: one optional tensor per input, then one per weight.
template <class Inputs, class W> struct gradients_of;
template <class... In, class... W> struct gradients_of<std::tuple<In...>, std::tuple<W&...>> {
  using type = std::tuple<maybe<Tensor<value_t<In>, shape_t<In>, device_t<In>>>..., maybe<Tensor<value_t<W>, shape_t<W>, device_t<W>>>...>;
};

/// Whether L computes its own backward pass (forward / backward members taking a `call_state`,
/// what one call keeps for its backward pass, as the recurrent layers) rather than ctflow's from
/// the expression of its call.
template <class L> concept differentiates_itself = requires { L::differentiates_itself; };

/// What a call of L keeps for its backward pass when L differentiates itself.
template <class L> struct call_state_of { using type = no_record; };
template <class L> requires differentiates_itself<L> struct call_state_of<L> { using type = typename L::call_state; };

/// Whether L, frozen (trainable false), runs as in inference even in training (Keras's
/// BatchNormalization). A custom layer holding one runs its training expression: its sub-layers
/// are called as layers are, so a frozen BatchNormalization among them runs as in inference.
template <class L> constexpr bool inference_when_frozen() {
  if constexpr (requires { L::inference_when_frozen; }) return L::inference_when_frozen;
  else return false;
}

/// Whether a call of L in inference mode during training (frozen, or asked for by a custom
/// layer's call) needs a recording of its own: its inference expression is not its training one
/// (BatchNormalization, Dropout, a custom layer that branches on `training`).
template <class L> constexpr bool records_inference() {
  if constexpr (differentiates_itself<L>) {
    return false;
  } else {
    using training_expr = typename recording_of<L, input_views<L>, weights_tuple<L>, training_t>::expr;
    using inference_expr = typename recording_of<L, input_views<L>, weights_tuple<L>, inference_t>::expr;
    return inference_when_frozen<L>() || !std::is_same_v<training_expr, inference_expr>;
  }
}

/// Whether a call of L (in training) is an activation whose adjoint reads only its value, over
/// the layer's sum (autodiff::recording's activation_from_value: Dense's and the convolutions'
/// relu(product + bias)).
template <class L> constexpr bool activation_from_value() {
  if constexpr (differentiates_itself<L> || records_inference<L>()) return false;
  else return recording_of<L, input_views<L>, weights_tuple<L>, training_t>::type::activation_from_value;
}

/// A kept tensor given new extents (a new batch size): its old block goes back to the cache
/// first, so the new one can be taken from it. Its elements are zeros, or with `uninitialized`
/// left for the caller to write.
template <class T, class S, class D, class... Init> void resize(Tensor<T, S, D>& t, const dims_t<std::size_t(S::rank)>& d, Init... init) {
  if (t.dims() == d) return;
  t = Tensor<T, S, D>();
  t = Tensor<T, S, D>(d, init...);
}

/// Keras's masks (one bool per step of a sequence: the output's extents without its last axis).
/// L makes one (Embedding with mask_zero, Masking: `produces_mask`, `masks()`, and
/// `compute_mask(x)`, a bool expression), reads its input's in its own forward pass (the recurrent
/// layers: `consumes_mask`), passes its input's on (`supports_masking`: Dense, Dropout, the
/// activations, LayerNormalization, a recurrent layer with return_sequences), or joins its inputs'
/// (`merges_masks`: Add, Multiply, Concatenate on the last axis give the OR of their inputs' masks
/// when every input has one); any other layer drops it, as Keras's layers that do not support
/// masking do.
template <class L> concept produces_mask = requires { L::produces_mask; };
template <class L> concept consumes_mask = requires { L::consumes_mask; };
template <class L> constexpr bool passes_mask() {
  if constexpr (requires { L::supports_masking; }) return L::supports_masking;
  else return false;
}
template <class L> constexpr bool merges_masks() {
  if constexpr (requires { L::merges_masks; }) return L::merges_masks;
  else return false;
}
/// Whether L's call is a reshape of its one input (Flatten, Reshape): a call's output is then a
/// view of its input's memory, and its backward pass the adjoint reshaped.
template <class L> concept views_input = requires { requires L::views_input; };

/// Whether L is a max pooling: the adjoint of an output element reaches only inputs whose value
/// is that element.
template <class L> constexpr bool selects_maximum() {
  if constexpr (requires { L::selects_maximum; }) return L::selects_maximum;
  else return false;
}
/// The mask a call of L keeps (when L makes one, or joins its inputs': one bool per step).
template <class L> struct mask_of { using type = std::conditional_t<merges_masks<L>(), Tensor<bool, Shape<dyn>, layer_device_t<L>>, no_record>; };
template <class L> requires produces_mask<L> struct mask_of<L> {
  using expr = decltype(std::declval<const L&>().compute_mask(std::declval<const std::tuple_element_t<0, input_views<L>>&>()));
  using type = Tensor<bool, shape_t<expr>, layer_device_t<L>>;
};

}  // namespace detail


/// @brief One call of a built layer: its input views and output, and in training the recording
/// its backward pass needs (or, for a layer that differentiates itself, what it keeps) and the
/// gradients that pass computed. A layer called twice (shared by two calls of a functional
/// model) has two.
template <class L> class layer_call {
 public:
  using value_type = typename L::value_type;
  using device_type = detail::layer_device_t<L>;
  using output_shape = detail::output_shape_t<L>;
  using output_view = TensorView<const value_type, output_shape, device_type>;
  /// @brief The views of its inputs (one for most layers).
  using inputs = detail::input_views<L>;
  static constexpr std::size_t arity = std::tuple_size_v<inputs>;
  /// @brief The gradients of a backward pass: one optional tensor per input, then per weight.
  using gradient_tensors = typename detail::gradients_of<inputs, detail::weights_tuple<L>>::type;

  layer_call() = default;
  layer_call(const layer_call&) = delete;
  layer_call& operator=(const layer_call&) = delete;

  /// @brief Runs layer on xs (training: recording what backward needs); `trainable` is the
  /// layer's flag (a frozen BatchNormalization runs as in inference); `inference_mode` runs a
  /// training call's layer as in inference, still recorded (Keras's `layer(x, training=False)`
  /// inside a training call). `masks`: each input's mask, one bool per step, or null. Returns a
  /// view of the output, valid until the next forward; the inputs' memory (and the masks') must
  /// stay valid until backward.
  output_view forward(L& layer, bool trainable, const inputs& xs, bool training, bool inference_mode = false,
                      const std::array<const bool*, arity>& masks = {}) {
    const bool* const mask = masks[0];
    trained_ = false;
    out_mask_ = nullptr;
    if constexpr (!detail::differentiates_itself<L>) record_.reset();
    if constexpr (detail::records_inference<L>()) inference_record_.reset();
    xs_.emplace(xs);
    detail::each_sublayer(layer, [&](auto& s) { s.begin_call(this, trainable, training); });
    if constexpr (detail::views_input<L>) {
      const auto& x = std::get<0>(*xs_);
      auto e = layer.call(x, inference_t{});
      if (x.strides() == row_major_strides(x.dims())) {
        view_.emplace(x.data(), e.dims());
      } else {
        detail::resize(out_, e.dims(), uninitialized);
        executor<device_t<decltype(e)>>::assign(out_.data(), out_.dims(), e);
        view_.emplace(out_.data(), out_.dims());
      }
      trained_ = training;
    } else if constexpr (detail::differentiates_itself<L>) {
      if constexpr (detail::consumes_mask<L>) layer.forward(std::get<0>(*xs_), out_, training, state_, mask);
      else layer.forward(std::get<0>(*xs_), out_, training, state_);
      trained_ = training;
    } else if (!training) {
      auto e = std::apply([&](const auto&... x) { return layer.call(x..., inference_t{}); }, *xs_);
      detail::resize(out_, e.dims(), uninitialized);
      executor<device_t<decltype(e)>>::assign(out_.data(), out_.dims(), e);
    } else if (inference_mode || (!trainable && detail::inference_when_frozen<L>())) {
      // The inference expression, recorded (the adjoint still flows through); where it has the
      // training expression's type, into the same recording.
      if constexpr (detail::records_inference<L>()) record(layer, inference_record_, inference_t{});
      else record(layer, record_, inference_t{});
    } else {
      record(layer, record_, training_t{});
    }
    if constexpr (detail::produces_mask<L>) {
      if (layer.masks()) {
        auto m = layer.compute_mask(std::get<0>(*xs_));
        detail::resize(mask_, m.dims(), uninitialized);
        executor<device_t<decltype(m)>>::assign(mask_.data(), mask_.dims(), m);
        out_mask_ = mask_.data();
      }
    } else if constexpr (detail::passes_mask<L>()) {
      out_mask_ = mask;
    } else if constexpr (detail::merges_masks<L>()) {
      merge_masks(masks);
    }
    return output();
  }

  /// @brief The last output.
  output_view output() const {
    if constexpr (detail::views_input<L>)
      if (view_) return *view_;
    return output_view(out_.data(), out_.dims());
  }
  /// @brief Gives the output's memory back (output() is then empty until the next forward): a
  /// backward pass that no longer reads it lets the layer after it take that memory. An output of
  /// a static shape (a model with a static batch) keeps its memory: a tensor of that shape has
  /// its extents' elements, so an empty one would be a new, zero-filled block.
  void release_output() {
    if constexpr (!output_shape::is_static) out_ = Tensor<value_type, output_shape, device_type>();
  }
  /// @brief The mask of the last output (one bool per step: the output's extents without its last
  /// axis), or null when it has none.
  const bool* output_mask() const { return out_mask_; }
  /// @brief The inputs of the last forward.
  const inputs& input() const { return *xs_; }

  /// @brief The backward pass of the last training forward: from dy (the adjoint of the output),
  /// the gradients of the layer's trainable weights (none when `trainable` is false) and of the
  /// inputs whose flag in want_input is set. `name` is the layer's, for errors. `writable_dy`,
  /// when given, is dy's memory, which its owner no longer needs: the pass may overwrite it.
  /// `pooled` (only where detail::activation_from_value<L>()): dy is a max pooling's gradient,
  /// which spread `pooled`, the adjoint of the activation's operand over the pooled extents
  /// (activation_adjoint taken there): the pass starts below the activation.
  template <class P = std::nullptr_t>
  gradient_tensors& backward(L& layer, bool trainable, const output_view& dy, const std::array<bool, arity>& want_input, const std::string& name,
                             value_type* writable_dy = nullptr, const P& pooled = nullptr) {
    static_assert(std::is_null_pointer_v<P> || detail::activation_from_value<L>(), "only an activated sum's backward pass starts below its activation");
    if (!trained_) throw value_error("ctflow::keras: " + name + ": backward without a training forward pass");
    gradient_tensors& grads = gradients();
    std::array<bool, detail::weight_count<L>() + 1> trains{};
    detail::weight_trains(layer, trainable, trains.data());
    auto targets = [&]<std::size_t... I, std::size_t... W>(std::index_sequence<I...>, std::index_sequence<W...>) {
      [[maybe_unused]] auto w = detail::weights_of(layer);
      return std::tuple{(want_input[I] ? &std::get<I>(*xs_) : nullptr)..., (trains[W] ? &std::get<W>(w) : nullptr)...};
    }(std::make_index_sequence<arity>{}, std::make_index_sequence<detail::weight_count<L>()>{});
    detail::each_sublayer(layer, [&](auto& s) { s.begin_backward(this); });
    if constexpr (detail::views_input<L>) {
      const auto& x = std::get<0>(*xs_);
      auto& dx = std::get<0>(grads);
      if (want_input[0]) dx.emplace(TensorView<const value_type, shape_t<decltype(x)>, device_type>(dy.data(), x.dims()));
      else dx.reset();
    } else if constexpr (detail::differentiates_itself<L>) {
      layer.backward(dy, grads, targets, state_);
    } else if constexpr (detail::records_inference<L>()) {
      grads = std::apply([&](auto*... t) { return record_ ? record_->gradient(writable_dy, dy, t...) : inference_record_->gradient(writable_dy, dy, t...); }, targets);
    } else if constexpr (!std::is_null_pointer_v<P>) {
      grads = std::apply([&](auto*... t) { return record_->gradient_below_activation(writable_dy, dy, pooled, t...); }, targets);
    } else {
      grads = std::apply([&](auto*... t) { return record_->gradient(writable_dy, dy, t...); }, targets);
    }
    [&]<std::size_t... W>(std::index_sequence<W...>) {
      ((weight_gradients_[W] = std::get<arity + W>(grads) ? std::get<arity + W>(grads)->data() : nullptr), ...);
    }(std::make_index_sequence<detail::weight_count<L>()>{});
    return grads;
  }
  /// @brief The adjoint of the activation of the last training forward, given g the adjoint of
  /// its value y (an expression; only where detail::activation_from_value<L>()).
  template <class G, class Y> auto activation_adjoint(const G& g, const Y& y) const { return record_->activation_adjoint(g, y); }
  /// @brief The gradients of the last backward pass.
  gradient_tensors& gradients() { return grads_ ? *grads_ : grads_.emplace(); }
  /// @brief The memory of each weight's gradient from the last backward pass (null: none).
  const std::array<const value_type*, detail::weight_count<L>()>& weight_gradients() const { return weight_gradients_; }

 private:
  // Keras's merges: the OR of the inputs' masks when every input has one over the output's steps
  // (its extents without the last axis); none otherwise.
  void merge_masks(const std::array<const bool*, arity>& masks) {
    const auto& d = out_.dims();
    const std::size_t steps = d.back() ? ctflow::product(d) / d.back() : 0;
    bool all = true;
    for (const bool* m : masks) all = all && m;
    std::apply([&](const auto&... x) { ((all = all && x.dims().back() && ctflow::product(x.dims()) / x.dims().back() == steps), ...); }, *xs_);
    if (!all) return;
    using mask_view = TensorView<const bool, Shape<dyn>, device_type>;
    mask_ = mask_view(masks[0], {steps});
    for (std::size_t i = 1; i < arity; ++i) mask_ = logical_or(mask_, mask_view(masks[i], {steps}));
    out_mask_ = mask_.data();
  }

  template <class R, class Mode> void record(L& layer, R& into, Mode mode) {
    auto e = std::apply([&](const auto&... x) { return layer.call(x..., mode); }, *xs_);
    detail::resize(out_, e.dims(), uninitialized);
    into.emplace(std::move(e), out_.data());
    trained_ = true;
  }

  maybe<inputs> xs_;  // the expressions recorded refer to these views
  Tensor<value_type, output_shape, device_type> out_;
  maybe<output_view> view_;  // the output of a layer that views its input
  typename detail::optional_recording<L, training_t, !detail::differentiates_itself<L>>::type record_;
  typename detail::optional_recording<L, inference_t, detail::records_inference<L>()>::type inference_record_;
  typename detail::call_state_of<L>::type state_;
  typename detail::mask_of<L>::type mask_;
  const bool* out_mask_ = nullptr;
  // Made by the first backward pass (or request): a model that only infers never instantiates
  // its layers' gradient tensors.
  detail::lazy_optional<gradient_tensors> grads_;
  std::array<const value_type*, detail::weight_count<L>()> weight_gradients_{};
  bool trained_ = false;
};

namespace detail {
/// Adds the gradients of L's weight regularizers to the weights' gradients in grads (those after
/// the First inputs' that were computed).
template <std::size_t First, class L, class G> void add_regularization(L& layer, G& grads) {
  walk_layer(layer, [&]<std::size_t I>(index_t<I>, auto& w, const regularizers::Regularizer& reg) {
    auto& g = std::get<First + I>(grads);
    if (g && reg.active()) reg.add_gradient(w, *g);
  });
}
}  // namespace detail

/// @brief A built layer in a model: its Keras name and trainable flag, and its call (the output
/// and, in training, what the backward pass needs).
template <class L> class layer_instance {
 public:
  using layer_type = L;
  using value_type = typename L::value_type;
  using call_type = layer_call<L>;
  using output_shape = detail::output_shape_t<L>;
  using output_view = typename call_type::output_view;
  using gradient_tensors = typename call_type::gradient_tensors;
  static constexpr std::size_t arity = call_type::arity;
  /// @brief The input's dtype, shape and view (of the first input, for a merge layer).
  using input_view = std::tuple_element_t<0, typename call_type::inputs>;
  using input_value_type = value_t<input_view>;
  using input_shape = shape_t<input_view>;

  /// @brief The built layer.
  L layer;
  /// @brief Its name (Keras's automatic one unless the spec gave one) and whether its weights train.
  std::string name;
  bool trainable = true;
  /// @brief Its spec's Keras config (get_config's JSON object), which model.save writes.
  std::string config;

  /// @brief Builds the layer from its spec; an empty name is Keras's automatic one, given by
  /// name_if_unnamed() (models call it in layer order).
  template <class Spec>
  explicit layer_instance(const Spec& spec) : layer(detail::construct_layer<L>(spec)), name(spec.name), trainable(spec.trainable), config(detail::config_json(spec)) {}
  layer_instance(const layer_instance&) = delete;
  layer_instance& operator=(const layer_instance&) = delete;

  /// @brief Gives the layer Keras's automatic name (dense, dense_1, ...) if it has none.
  void name_if_unnamed() {
    if (name.empty()) name = detail::auto_name(detail::snake_case(L::class_name));
  }

  /// @brief Runs the layer on its inputs (training: recording what backward needs) and returns a
  /// view of its output, valid until the next forward; the inputs' memory must stay valid until
  /// backward.
  /// `frozen`: the model holding the layer does not train (a BatchNormalization then runs as in
  /// inference, and no weight gets a gradient).
  /// `masks` / `mask`: the inputs' masks (Keras's), one bool per step, or null.
  output_view forward(const typename call_type::inputs& xs, bool training, bool frozen = false, const std::array<const bool*, arity>& masks = {}) {
    return call_.forward(layer, trainable && !frozen, xs, training, false, masks);
  }
  output_view forward(const input_view& x, bool training, bool frozen = false, const bool* mask = nullptr) requires(arity == 1) {
    return call_.forward(layer, trainable && !frozen, {x}, training, false, {mask});
  }
  /// @brief The last output, and its mask (null: none).
  output_view output() const { return call_.output(); }
  /// @brief Gives the last output's memory back (output() is empty until the next forward; an
  /// output of a static shape keeps it).
  void release_output() { call_.release_output(); }
  const bool* output_mask() const { return call_.output_mask(); }

  /// @brief The backward pass of the last training forward: from dy (the adjoint of the output),
  /// the gradients of the trainable weights (with their regularizers': `gradient<I>()`,
  /// `each_gradient`) and, when input_gradient is set, of the input(s), which it returns (for one
  /// input, its gradient; for several, the tuple). With `dy_writable`, dy's memory is the
  /// caller's to give up: the pass may overwrite it (a Sequential's adjoints between layers).
  /// `pooled`: dy is the gradient of a max pooling after the activation, and pooled the
  /// activation's adjoint over the pooled extents (activation_adjoint): the pass starts below the
  /// activation.
  template <class P = std::nullptr_t> auto backward(const output_view& dy, bool input_gradient = true, bool frozen = false, bool dy_writable = false, const P& pooled = nullptr) {
    std::array<bool, arity> want;
    want.fill(input_gradient);
    auto& g = call_.backward(layer, trainable && !frozen, dy, want, name, dy_writable ? const_cast<value_type*>(dy.data()) : nullptr, pooled);
    detail::add_regularization<arity>(layer, g);
    if constexpr (arity == 1) return std::move(std::get<0>(g));
    else return [&]<std::size_t... I>(std::index_sequence<I...>) { return std::tuple{std::move(std::get<I>(g))...}; }(std::make_index_sequence<arity>{});
  }

  /// @brief Whether the layer's training call is an activation whose adjoint reads only its value
  /// (relu(product + bias)): activation_adjoint then takes it at any values of that activation,
  /// and backward(..., pooled) starts below it.
  static constexpr bool activation_from_value = detail::activation_from_value<L>();
  /// @brief The adjoint of the activation of the last training call, given g the adjoint of y
  /// (values the activation gave, any extents): an expression.
  template <class G, class Y> auto activation_adjoint(const G& g, const Y& y) const requires activation_from_value { return call_.activation_adjoint(g, y); }

  /// @brief The gradients of the last backward pass, one per weight (empty when the weight does
  /// not train or was not reached).
  template <std::size_t I> const auto& gradient() const { return std::get<arity + I>(const_cast<layer_call<L>&>(call_).gradients()); }
  /// @brief The memory of each weight's gradient from the last backward pass (null: none).
  const auto& weight_gradients() const { return call_.weight_gradients(); }
  /// @brief Calls f(weight, gradient or null) for each weight, in Keras's order.
  template <class F> void each_gradient(F&& f) {
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      [[maybe_unused]] auto w = detail::weights_of(layer);
      auto& g = call_.gradients();
      (f(std::get<I>(w), std::get<arity + I>(g) ? &*std::get<arity + I>(g) : nullptr), ...);
    }(std::make_index_sequence<detail::weight_count<L>()>{});
  }

 private:
  layer_call<L> call_;
};

}  // namespace ctflow::keras
