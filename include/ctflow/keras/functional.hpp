#pragma once
/// @file
/// @brief Keras's functional API: layers called on symbolic tensors build a graph, and
/// `keras::Model(inputs, outputs)` runs it. A symbolic tensor (`KerasTensor<T, Shape>`) carries
/// its dtype and shape in its type, so each call is checked and built by the compiler for exactly
/// its input (a layer that cannot take it does not compile); the graph that links the calls is
/// data, run one layer after another, so that a deep network is a list of small layer types
/// rather than one large one. Several inputs and outputs, residual connections, a layer shared by
/// two calls (a spec called twice) and a model called as a layer work as in Keras.
///
///     keras::Input<float, Shape<28, 28, 1>> inputs;
///     auto x = layers::Conv2D<32, 3, activations::relu>{}(inputs);
///     auto y = layers::Conv2D<32, 3, layers::same>{}(x);
///     auto z = layers::Add{}(x, y);                       // a residual connection
///     auto outputs = layers::Dense<10>{}(layers::GlobalAveragePooling2D{}(z));
///     keras::Model model(inputs, outputs);
///     auto logits = model(images);                        // a view of the output

#include <algorithm>
#include <array>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include <ctflow/core/errors.hpp>
#include <ctflow/core/shape.hpp>
#include <ctflow/core/tensor.hpp>
#include <ctflow/keras/layer.hpp>
#include <ctflow/keras/layer_info.hpp>
#include <ctflow/keras/layers/input.hpp>
#include <ctflow/keras/model.hpp>
#include <ctflow/keras/summary.hpp>

namespace ctflow::keras {

template <DType T, ShapeType S, class From = void, class D = cpu> class KerasTensor;

namespace detail {

/// A layer of a functional graph, whatever its type: its name, trainable flag and class, and the
/// number of calls made of it so far (Keras's inbound nodes: the next call's node index).
struct graph_layer_base {
  std::string name;
  bool trainable = true;
  const char* class_name = "";
  std::size_t calls = 0;
  std::string config;  // its spec's get_config (JSON), for model.save
  graph_layer_base() = default;
  graph_layer_base(const graph_layer_base&) = delete;
  graph_layer_base& operator=(const graph_layer_base&) = delete;
  virtual ~graph_layer_base() = default;
};

/// A layer with weights of dtype T: its run-time description, and the gradients of its weights
/// summed over its calls in one backward pass.
template <class T> struct graph_layer : graph_layer_base {
  virtual layer_info<T> describe() = 0;
  virtual void begin_backward() = 0;
  virtual void end_backward() = 0;
};

/// One call of a layer (or an input) in a graph: its inputs' nodes, its layer, its output.
struct graph_node {
  std::vector<std::shared_ptr<graph_node>> inputs;
  std::shared_ptr<graph_layer_base> layer;
  std::size_t node_index = 0;          // which call of its layer
  bool is_input = false;
  bool has_adjoint = false;
  std::vector<std::size_t> extents;    // the output's static extents (dyn: None)
  const char* dtype = "";              // the output's dtype name
  std::string shape_text;              // the output's shape as messages print it ("[None,8]")
  graph_node() = default;
  graph_node(const graph_node&) = delete;
  graph_node& operator=(const graph_node&) = delete;
  virtual ~graph_node() = default;
  /// Runs the call; `frozen`: an enclosing model does not train (its layers run as frozen).
  virtual void forward(bool training, bool frozen) = 0;
  /// Sends the adjoint of the output (when it has one) to the inputs' nodes and the layer's
  /// weights; an input node's adjoint is computed only when input_gradients is set.
  virtual void backward(bool input_gradients, bool frozen) = 0;
  /// The mask of the output (Keras's: one bool per step), or null.
  virtual const bool* mask() const { return nullptr; }
  /// The same call on other inputs' nodes (of the same types), sharing the layer.
  virtual std::shared_ptr<graph_node> clone(std::vector<std::shared_ptr<graph_node>> new_inputs) const = 0;
};

/// A node whose output has dtype T and shape S on device D, and the adjoint of that output in a
/// backward pass.
template <class T, class S, class D> struct typed_node : graph_node {
  using output_view = TensorView<const T, S, D>;
  typed_node() {
    const auto& e = S::extents;
    extents.assign(e.begin(), e.end());
    shape_text = shape_string_v<S>.s;
    dtype = dtype_name<T>();
  }
  virtual output_view output() const = 0;
  /// Sums g into the adjoint, in the node's own memory (its layer's backward pass may overwrite
  /// it: a tensor's memory is never shared here).
  template <class G> void add_adjoint(const G& g) {
    const output_view v(g.data(), g.dims());
    if (!has_adjoint) {
      adjoint = v;
      has_adjoint = true;
    } else {
      adjoint += v;
    }
  }
  output_view adjoint_view() const { return output_view(adjoint.data(), adjoint.dims()); }
  Tensor<T, S, D> adjoint;
};

/// A model's input: its value is set by the model before each forward pass.
template <class T, class S, class D> struct input_node final : typed_node<T, S, D> {
  std::optional<typename typed_node<T, S, D>::output_view> value;
  const bool* value_mask = nullptr;  // a nested model's input: the outer node's mask
  const bool* mask() const override { return value_mask; }
  typename typed_node<T, S, D>::output_view output() const override {
    if (!value) throw value_error("ctflow::keras: input " + this->layer->name + " has no value");
    return *value;
  }
  void forward(bool, bool) override {}
  void backward(bool, bool) override {}
  std::shared_ptr<graph_node> clone(std::vector<std::shared_ptr<graph_node>>) const override {
    auto n = std::make_shared<input_node>();
    n->layer = this->layer;
    n->is_input = true;
    return n;
  }
};

/// A built layer of a functional graph, shared by its calls.
template <class L> struct shared_layer final : graph_layer<typename L::value_type> {
  using T = typename L::value_type;
  using gradients_type = typename gradients_of<std::tuple<>, weights_tuple<L>>::type;
  L layer;
  std::string input_text;  // the shapes it was built for, for messages
  gradients_type grads;
  std::array<const T*, weight_count<L>() + 1> weight_gradients{};  // the slots of grads' memory (null: none)

  template <class Spec> shared_layer(const Spec& spec, std::string inputs) : layer(construct_layer<L>(spec)), input_text(std::move(inputs)) {
    this->name = spec.name.empty() ? auto_name(snake_case(L::class_name)) : spec.name;
    this->trainable = spec.trainable;
    this->class_name = L::class_name;
    this->config = config_json(spec);
  }
  layer_info<T> describe() override {
    auto info = describe_layer(layer, &this->name, &this->trainable, weight_gradients.data());
    info.config = &this->config;
    return info;
  }
  void begin_backward() override {
    std::apply([](auto&... g) { (g.reset(), ...); }, grads);
    weight_gradients.fill(nullptr);
  }
  /// Adds one call's weight gradients (after its First inputs') to the layer's.
  template <std::size_t First, class G> void accumulate(G& call_grads) {
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      ([&] {
        auto& from = std::get<First + I>(call_grads);
        auto& to = std::get<I>(grads);
        if (!from) return;
        if (!to) to.emplace(*from);
        else *to += *from;
      }(), ...);
    }(std::make_index_sequence<weight_count<L>()>{});
  }
  void end_backward() override {
    add_regularization<0>(layer, grads);
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      ((weight_gradients[I] = std::get<I>(grads) ? std::get<I>(grads)->data() : nullptr), ...);
    }(std::make_index_sequence<weight_count<L>()>{});
  }
};

/// One call of built layer L on the outputs of its inputs' nodes.
template <class L> struct layer_node final : typed_node<typename L::value_type, output_shape_t<L>, layer_device_t<L>> {
  using base = typed_node<typename L::value_type, output_shape_t<L>, layer_device_t<L>>;
  using views = input_views<L>;
  static constexpr std::size_t arity = std::tuple_size_v<views>;
  std::shared_ptr<shared_layer<L>> owner;
  layer_call<L> call;

  layer_node(std::shared_ptr<shared_layer<L>> o, std::vector<std::shared_ptr<graph_node>> in) : owner(std::move(o)) {
    this->inputs = std::move(in);
    this->layer = owner;
    this->node_index = owner->calls++;
  }
  template <std::size_t I> auto* producer() const {
    using V = std::tuple_element_t<I, views>;
    return static_cast<typed_node<std::remove_const_t<value_t<V>>, shape_t<V>, device_t<V>>*>(this->inputs[I].get());
  }
  void forward(bool training, bool frozen) override {
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      call.forward(owner->layer, owner->trainable && !frozen, views(producer<I>()->output()...), training, false, {this->inputs[I]->mask()...});
    }(std::make_index_sequence<arity>{});
  }
  typename base::output_view output() const override { return call.output(); }
  const bool* mask() const override { return call.output_mask(); }
  void backward(bool input_gradients, bool frozen) override {
    if (!this->has_adjoint) return;
    std::array<bool, arity> want{};
    for (std::size_t i = 0; i < arity; ++i) want[i] = !this->inputs[i]->is_input || input_gradients;
    // The node's summed adjoint is read by this layer alone: its backward pass may overwrite it.
    auto& g = call.backward(owner->layer, owner->trainable && !frozen, this->adjoint_view(), want, owner->name, this->adjoint.data());
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      ([&] {
        if constexpr (is_floating_v<std::remove_const_t<value_t<std::tuple_element_t<I, views>>>>)
          if (std::get<I>(g)) producer<I>()->add_adjoint(*std::get<I>(g));
      }(), ...);
    }(std::make_index_sequence<arity>{});
    owner->template accumulate<arity>(g);
  }
  std::shared_ptr<graph_node> clone(std::vector<std::shared_ptr<graph_node>> new_inputs) const override {
    auto n = std::make_shared<layer_node>(owner, std::move(new_inputs));
    return n;
  }
};

/// A symbolic tensor of the functional API from x: a KerasTensor, or an Input (its node made on
/// first use).
template <class T, class S, class F, class D> const KerasTensor<T, S, F, D>& as_tensor(const KerasTensor<T, S, F, D>& x) { return x; }
template <class T, class S, extent_t B, class D> KerasTensor<T, batched<S, B>, Input<T, S, B, D>, D> as_tensor(const Input<T, S, B, D>& in) {
  using node = input_node<T, batched<S, B>, D>;
  if (!in.tensor_) {
    auto n = std::make_shared<node>();
    auto layer = std::make_shared<graph_layer_base>();
    layer->name = in.name.empty() ? auto_name("input_layer") : in.name;
    layer->class_name = "InputLayer";
    n->node_index = layer->calls++;
    n->layer = std::move(layer);
    n->is_input = true;
    in.tensor_ = std::move(n);
  }
  return KerasTensor<T, batched<S, B>, Input<T, S, B, D>, D>(std::static_pointer_cast<typed_node<T, batched<S, B>, D>>(in.tensor_));
}
template <class X> using tensor_of = std::remove_cvref_t<decltype(as_tensor(std::declval<const X&>()))>;
/// A symbolic tensor or an Input.
template <class X> concept symbolic = requires(const X& x) { as_tensor(x); };

/// Spec's built form for inputs of dtype T and shapes S... on device D: built<T, S, D> for one
/// input, built_on<T, D, S...> for a merge layer's several.
template <class Spec, class T, class D, class... S> struct built_for { using type = typename Spec::template built_on<T, D, S...>; };
template <class Spec, class T, class D, class S> struct built_for<Spec, T, D, S> { using type = built_on_t<Spec, T, S, D>; };

}  // namespace detail

/// @brief A symbolic tensor of the functional API (Keras's KerasTensor): the output of a layer's
/// call or a model's input, with its dtype T and shape S (batch first) known to the compiler, the
/// spec of the layer that made it (From: for the compiler's messages) and its device D (its
/// model's Input's).
template <DType T, ShapeType S, class From, class D> class KerasTensor {
 public:
  using value_type = T;
  using shape_type = S;
  using producer = From;
  using device_type = D;
  /// @brief Its node's type in a graph, an input node's, and what a model's call takes or gives
  /// for it (a view) and keeps (a tensor).
  using node_type = detail::typed_node<T, S, D>;
  using input_node_type = detail::input_node<T, S, D>;
  using view_type = TensorView<const T, S, D>;
  using tensor_type = Tensor<T, S, D>;
  explicit KerasTensor(std::shared_ptr<node_type> node) : node_(std::move(node)) {}
  KerasTensor(const KerasTensor&) = default;
  KerasTensor& operator=(const KerasTensor&) = default;
  /// @brief (Python's `x = layer(x)`: not in C++, where each call's tensor has a type of its own,
  /// its shape in it. The compiler says to name the result anew.)
  template <class T2, class S2, class F2, class D2> requires(!std::is_same_v<KerasTensor<T2, S2, F2, D2>, KerasTensor>)
  KerasTensor& operator=(const KerasTensor<T2, S2, F2, D2>&) {
    CTFLOW_STATIC_CHECK((std::is_same_v<T2, void>),
                        ctflow::detail::concat(ctflow::detail::fixed_string("ctflow::keras::KerasTensor: the result of a layer has a type of its own (here "),
                                               shape_string_v<S2>, ctflow::detail::fixed_string(", the name holds "), shape_string_v<S>,
                                               ctflow::detail::fixed_string("): give it a new name, auto y = layer(x), rather than x = layer(x)")));
    return *this;
  }
  /// @brief Its graph node (the layer's call that makes it).
  const std::shared_ptr<node_type>& node() const { return node_; }
  /// @brief Keras's tensor.shape as text: "[None,28,28,1]".
  std::string shape() const { return shape_string_v<S>.s; }

 private:
  std::shared_ptr<node_type> node_;
};

namespace detail {

/// The shape layer Spec is built for from the input X among its inputs Xs (symbolic tensors):
/// X's, or, where the layer's check failed, one it takes (one input), the first's (a merge).
template <class Spec, class... Xs> struct fitting_shapes {
  template <class X> using for_input = typename X::shape_type;
};
template <class Spec, class X> struct fitting_shapes<Spec, X> {
  template <class> using for_input = fitting_input_t<Spec, typename X::shape_type>;
};
template <class Spec, class X0, class X1, class... Xs>
  requires(requires { Spec::broadcasts_inputs; } && !broadcast_together<typename X0::shape_type, typename X1::shape_type, typename Xs::shape_type...>())
struct fitting_shapes<Spec, X0, X1, Xs...> {
  template <class> using for_input = typename X0::shape_type;
};
template <class Spec, class... X> auto call_layer(const Spec& spec, const X&... x) {
  static_assert(sizeof...(X) > 0, "ctflow::keras: a layer is called on one symbolic tensor or more");
  using first = std::tuple_element_t<0, std::tuple<tensor_of<X>...>>;
  using T = typename first::value_type;
  using D = typename first::device_type;
  static_assert((std::is_same_v<typename tensor_of<X>::device_type, D> && ...), "ctflow::keras: a layer's inputs come from Inputs of one device");
  // A layer that cannot take its inputs is one error naming it, its inputs' layers and shapes;
  // it is then built for inputs it takes, so that nothing else fails.
  if constexpr (sizeof...(X) == 1) {
    [[maybe_unused]] input_check<Spec, typename first::shape_type, typename first::producer> checked;
  } else {
    [[maybe_unused]] merge_check<Spec, std::tuple<typename tensor_of<X>::producer...>, typename tensor_of<X>::shape_type...> checked;
  }
  using fit = fitting_shapes<Spec, tensor_of<X>...>;
  using L = typename built_for<Spec, T, D, typename fit::template for_input<tensor_of<X>>...>::type;
  const std::string inputs = [] {
    std::string s;
    ((s += (s.empty() ? "" : " x ") + std::string(shape_string_v<typename tensor_of<X>::shape_type>.s)), ...);
    return s;
  }();
  std::shared_ptr<shared_layer<L>> owner;
  if (spec.shared_layer_) {
    owner = std::dynamic_pointer_cast<shared_layer<L>>(spec.shared_layer_);
    if (!owner)
      throw value_error("ctflow::keras::" + std::string(Spec::class_name) + ": layer " + spec.shared_layer_->name + " was built for other inputs than " +
                        inputs + " (a layer called twice takes the same shapes)");
  } else {
    owner = std::make_shared<shared_layer<L>>(spec, inputs);
    spec.shared_layer_ = owner;
  }
  auto node = std::make_shared<layer_node<L>>(owner, std::vector<std::shared_ptr<graph_node>>{as_tensor(x).node()...});
  return KerasTensor<typename L::value_type, output_shape_t<L>, Spec, D>(std::move(node));
}

/// The symbolic tensors a model's inputs or outputs are: one, or a std::tuple of them.
template <class X> struct tensor_list {
  using type = std::tuple<tensor_of<X>>;
  static constexpr bool single = true;
  static auto get(const X& x) { return type(as_tensor(x)); }
};
template <class... X> struct tensor_list<std::tuple<X...>> {
  using type = std::tuple<tensor_of<X>...>;
  static constexpr bool single = false;
  static auto get(const std::tuple<X...>& x) {
    return std::apply([](const auto&... e) { return type(as_tensor(e)...); }, x);
  }
};

/// The graph of a functional model: its nodes in an order that runs them (inputs first), its
/// layers in Keras's order (by depth from the outputs, then by first traversal), and what its
/// summary needs. It is the model's layer when the model is called as a layer.
template <class T> struct functional_graph final : graph_layer<T> {
  std::vector<std::shared_ptr<graph_node>> inputs, outputs, order;
  std::vector<std::shared_ptr<graph_layer_base>> layers;
  std::map<const graph_node*, int> depth;

  functional_graph(std::vector<std::shared_ptr<graph_node>> in, std::vector<std::shared_ptr<graph_node>> out) : inputs(std::move(in)), outputs(std::move(out)) {
    this->class_name = "Functional";
    // Keras's map_graph: the nodes by a depth-first walk from the outputs (each after its inputs),
    // each layer's index at its first visit.
    std::set<const graph_node*> done, active;
    std::map<const graph_layer_base*, int> first_seen;
    const std::set<const graph_node*> declared = [&] {
      std::set<const graph_node*> s;
      for (const auto& n : inputs) s.insert(n.get());
      return s;
    }();
    const auto visit = [&](const auto& self, const std::shared_ptr<graph_node>& n) -> void {
      if (done.count(n.get())) return;
      if (active.count(n.get())) throw value_error("ctflow::keras::Model: the graph has a cycle at layer " + n->layer->name);
      if (!first_seen.count(n->layer.get())) first_seen.emplace(n->layer.get(), int(first_seen.size()));
      if (n->is_input && !declared.count(n.get()))
        throw value_error("ctflow::keras::Model: graph disconnected: input " + n->layer->name + " " + n->shape_text +
                          " is needed to compute the outputs but is not one of the model's inputs");
      active.insert(n.get());
      for (const auto& i : n->inputs) self(self, i);
      active.erase(n.get());
      done.insert(n.get());
      order.push_back(n);
    };
    for (const auto& o : outputs) visit(visit, o);
    // Depths: 0 at the outputs, growing toward the inputs; a shared layer at its deepest call.
    std::map<const graph_layer_base*, int> layer_depth;
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
      const graph_node* n = it->get();
      int d = depth.count(n) ? depth[n] : 0;
      if (layer_depth.count(n->layer.get())) d = std::max(d, layer_depth[n->layer.get()]);
      layer_depth[n->layer.get()] = d;
      depth[n] = d;
      for (const auto& i : n->inputs) depth[i.get()] = std::max(depth.count(i.get()) ? depth[i.get()] : 0, d + 1);
    }
    // Inputs that no output needs are layers too, at depth 0.
    for (const auto& i : inputs)
      if (!layer_depth.count(i->layer.get())) {
        layer_depth[i->layer.get()] = 0;
        first_seen[i->layer.get()] = -1;
        depth[i.get()] = 0;
      }
    std::vector<std::shared_ptr<graph_layer_base>> all;
    std::set<const graph_layer_base*> seen;
    for (const auto& n : order)
      if (seen.insert(n->layer.get()).second) all.push_back(n->layer);
    for (const auto& i : inputs)
      if (seen.insert(i->layer.get()).second) all.push_back(i->layer);
    // The deepest first, then by first use, then as found (std::sort on positions: see
    // io/impl/trace.ipp on std::stable_sort).
    std::vector<std::size_t> at(all.size());
    for (std::size_t i = 0; i < at.size(); ++i) at[i] = i;
    std::sort(at.begin(), at.end(), [&](std::size_t a, std::size_t b) {
      const int da = layer_depth[all[a].get()], db = layer_depth[all[b].get()];
      const int fa = first_seen[all[a].get()], fb = first_seen[all[b].get()];
      return da != db ? da > db : fa != fb ? fa < fb : a < b;
    });
    layers.clear();
    for (std::size_t i : at) layers.push_back(std::move(all[i]));
    std::set<std::string> names;
    for (const auto& l : layers)
      if (!names.insert(l->name).second)
        throw value_error("ctflow::keras::Model: the name \"" + l->name + "\" is used by two layers of the model; layer names must be unique");
    for (const auto& l : layers)
      if (!dynamic_cast<graph_layer<T>*>(l.get()) && l->class_name != std::string_view("InputLayer"))
        throw value_error("ctflow::keras::Model: layer " + l->name + " (" + l->class_name + ") has weights of another dtype than the model's outputs");
  }

  void run(bool training, bool frozen) {
    for (const auto& n : order) n->forward(training, frozen);
  }
  void run_backward(bool input_gradients, bool frozen) {
    for (auto it = order.rbegin(); it != order.rend(); ++it) (*it)->backward(input_gradients, frozen);
  }
  void clear_adjoints() {
    for (const auto& n : order) n->has_adjoint = false;
  }

  /// The layers with weights' descriptions (InputLayers: none) in Keras's order.
  std::vector<layer_info<T>> describe_layers() {
    std::vector<layer_info<T>> out;
    for (const auto& l : layers) {
      if (auto* g = dynamic_cast<graph_layer<T>*>(l.get())) out.push_back(g->describe());
      else {
        layer_info<T> info;
        info.name = &l->name;
        info.trainable = &l->trainable;
        info.class_name = l->class_name;
        for (const auto& n : order)
          if (n->layer == l) info.output_shape = n->extents;
        for (const auto& n : inputs)
          if (n->layer == l) {
            info.output_shape = n->extents;
            info.dtype = n->dtype;
          }
        out.push_back(std::move(info));
      }
      out.back().inbound_nodes = inbound_nodes(*l);
    }
    return out;
  }
  /// Keras's inbound_nodes of layer l: the tensors each of its calls took (JSON).
  std::string inbound_nodes(const graph_layer_base& l) const {
    std::vector<const graph_node*> calls;
    for (const auto& n : order)
      if (n->layer.get() == &l && !n->is_input) calls.push_back(n.get());
    std::sort(calls.begin(), calls.end(), [](const graph_node* a, const graph_node* b) { return a->node_index < b->node_index; });
    std::string out = "[";
    for (const graph_node* c : calls) {
      std::string args;
      for (const auto& in : c->inputs) {
        std::string shape;
        for (const auto e : in->extents) shape += (shape.empty() ? "" : ", ") + (e == dyn ? std::string("null") : std::to_string(e));
        args += (args.empty() ? "" : ", ") + std::string(R"({"class_name": "__keras_tensor__", "config": {"shape": [)") + shape + R"(], "dtype": ")" + in->dtype +
                R"(", "keras_history": [)" + config_dict::quote(in->layer->name) + ", " + std::to_string(in->node_index) + ", 0]}}";
      }
      if (c->inputs.size() > 1) args = "[" + args + "]";
      out += (out.size() > 1 ? ", " : "") + std::string(R"({"args": [)") + args + R"(], "kwargs": {}})";
    }
    return out + "]";
  }
  /// Keras's input_layers or output_layers of nodes (JSON): [name, node, 0], a list of them for several.
  static std::string endpoints(const std::vector<std::shared_ptr<graph_node>>& nodes) {
    std::string out = nodes.size() == 1 ? "" : "[";
    for (std::size_t i = 0; i < nodes.size(); ++i)
      out.append(i ? ", [" : "[").append(config_dict::quote(nodes[i]->layer->name)).append(", ").append(std::to_string(nodes[i]->node_index)).append(", 0]");
    return nodes.size() == 1 ? out : out.append("]");
  }
  layer_info<T> describe() override {
    layer_info<T> info;
    info.name = &this->name;
    info.trainable = &this->trainable;
    info.class_name = this->class_name;
    info.is_model = true;
    info.output_shape = outputs.front()->extents;
    info.children = describe_layers();
    info.input_layers = endpoints(inputs);
    info.output_layers = endpoints(outputs);
    return info;
  }
  void begin_backward() override {
    for (const auto& l : layers)
      if (auto* g = dynamic_cast<graph_layer<T>*>(l.get())) g->begin_backward();
  }
  void end_backward() override {
    for (const auto& l : layers)
      if (auto* g = dynamic_cast<graph_layer<T>*>(l.get())) g->end_backward();
  }
};

/// A call of a functional model as a layer: a copy of the model's graph (sharing its layers) on
/// this call's inputs.
template <class T, class Out> struct model_node final : typed_node<value_t<Out>, shape_t<Out>, device_t<Out>> {
  using base = typed_node<value_t<Out>, shape_t<Out>, device_t<Out>>;
  std::shared_ptr<functional_graph<T>> model;
  std::vector<std::shared_ptr<graph_node>> inner_inputs, inner_order;
  std::shared_ptr<graph_node> inner_output;
  // How to move values and adjoints between the outer inputs and the copy's.
  std::vector<void (*)(graph_node&, graph_node&)> bind, gather;

  model_node(std::shared_ptr<functional_graph<T>> m, std::vector<std::shared_ptr<graph_node>> in, std::vector<void (*)(graph_node&, graph_node&)> b,
             std::vector<void (*)(graph_node&, graph_node&)> g)
      : model(std::move(m)), bind(std::move(b)), gather(std::move(g)) {
    this->inputs = std::move(in);
    this->layer = model;
    this->node_index = model->calls++;
    std::map<const graph_node*, std::shared_ptr<graph_node>> copy;
    for (const auto& i : model->inputs) {
      auto c = i->clone({});
      copy[i.get()] = c;
      inner_inputs.push_back(c);
    }
    for (const auto& n : model->order) {
      if (copy.count(n.get())) continue;
      std::vector<std::shared_ptr<graph_node>> ins;
      for (const auto& i : n->inputs) ins.push_back(copy.at(i.get()));
      auto c = n->clone(std::move(ins));
      copy[n.get()] = c;
      inner_order.push_back(c);
    }
    inner_output = copy.at(model->outputs.front().get());
  }
  void forward(bool training, bool frozen) override {
    for (std::size_t i = 0; i < inner_inputs.size(); ++i) bind[i](*this->inputs[i], *inner_inputs[i]);
    for (const auto& n : inner_order) n->forward(training, frozen || !model->trainable);
  }
  typename base::output_view output() const override { return static_cast<const base&>(*inner_output).output(); }
  const bool* mask() const override { return inner_output->mask(); }
  void backward(bool input_gradients, bool frozen) override {
    if (!this->has_adjoint) return;
    for (const auto& n : inner_inputs) n->has_adjoint = false;
    for (const auto& n : inner_order) n->has_adjoint = false;
    static_cast<base&>(*inner_output).add_adjoint(this->adjoint);
    for (auto it = inner_order.rbegin(); it != inner_order.rend(); ++it) (*it)->backward(true, frozen || !model->trainable);
    for (std::size_t i = 0; i < inner_inputs.size(); ++i)
      if (!this->inputs[i]->is_input || input_gradients) gather[i](*inner_inputs[i], *this->inputs[i]);
  }
  std::shared_ptr<graph_node> clone(std::vector<std::shared_ptr<graph_node>> new_inputs) const override {
    return std::make_shared<model_node>(model, std::move(new_inputs), bind, gather);
  }
};

/// Sets a copy's input node to the outer node's output (bind), and adds the copy's input adjoint
/// to the outer node's (gather), for the nodes of KerasTensor K.
template <class K> void bind_input(graph_node& outer, graph_node& inner) {
  auto& in = static_cast<typename K::input_node_type&>(inner);
  in.value = static_cast<typename K::node_type&>(outer).output();
  in.value_mask = outer.mask();
}
template <class K> void gather_adjoint(graph_node& inner, graph_node& outer) {
  auto& i = static_cast<typename K::node_type&>(inner);
  if (i.has_adjoint) static_cast<typename K::node_type&>(outer).add_adjoint(i.adjoint);
}

/// The first of a model's outputs (its dtype and device are the model's).
template <class Outputs> using first_output = std::tuple_element_t<0, typename tensor_list<Outputs>::type>;

}  // namespace detail

/// @brief keras.Model(inputs, outputs): the functional model from symbolic inputs to outputs
/// (one, or a std::tuple of several, each a KerasTensor or a keras::Input). A Model is a handle:
/// its copies are the same model (as Python's references), and calling it on symbolic tensors
/// makes it a layer of another model.
template <class Inputs, class Outputs>
class Model : public model_base<Model<Inputs, Outputs>, typename detail::first_output<Outputs>::value_type, typename detail::first_output<Outputs>::device_type> {
  std::shared_ptr<detail::functional_graph<typename detail::first_output<Outputs>::value_type>> graph_;
  using in_list = detail::tensor_list<Inputs>;
  using out_list = detail::tensor_list<Outputs>;
  using in_tensors = typename in_list::type;
  using out_tensors = typename out_list::type;
  template <std::size_t I> using in_t = std::tuple_element_t<I, in_tensors>;
  template <std::size_t I> using out_t = std::tuple_element_t<I, out_tensors>;
  template <class Tuple> struct views_of;
  template <class... K> struct views_of<std::tuple<K...>> {
    using type = std::tuple<typename K::view_type...>;
    using adjoints = std::tuple<std::optional<typename K::tensor_type>...>;
  };

 public:
  /// @brief The dtype of the (first) output and of the weights, and their device (the Inputs').
  using value_type = typename out_t<0>::value_type;
  using device_type = typename out_t<0>::device_type;
  using input_views = typename views_of<in_tensors>::type;
  using output_views = typename views_of<out_tensors>::type;
  static constexpr std::size_t input_count = std::tuple_size_v<in_tensors>, output_count = std::tuple_size_v<out_tensors>;
  /// @brief What a call takes and gives: a view for one input or output, a std::tuple of views
  /// for several.
  using input_type = std::conditional_t<in_list::single, std::tuple_element_t<0, input_views>, input_views>;
  using output_type = std::conditional_t<out_list::single, std::tuple_element_t<0, output_views>, output_views>;
  static constexpr const char* class_name = "Functional";

  /// @brief Builds the model from its inputs to its outputs (Keras's checks: every input an
  /// output needs is one of the model's; layer names are unique).
  Model(const Inputs& inputs, const Outputs& outputs) : Model(in_list::get(inputs), out_list::get(outputs)) {}

  /// @brief The model's name (Keras's automatic functional, functional_1, ... by default) and
  /// whether its weights train (false: frozen, as a whole).
  std::string& name;
  bool& trainable;

  Model(const Model& other) : graph_(other.graph_), name(graph_->name), trainable(graph_->trainable) {}
  Model& operator=(const Model&) = delete;

  /// @brief Runs the model on its input(s) and returns a view of its output (a tuple of views for
  /// several), valid until the next call; training records what backward needs.
  output_type operator()(const input_type& x, bool training = false) {
    if constexpr (in_list::single) set_inputs(input_views(x));
    else set_inputs(x);
    graph_->run(training, !trainable);
    return outputs();
  }
  /// @brief The same for tensors (viewed) or expressions (evaluated first): one for one input, a
  /// std::tuple of them for several. Another dtype or rank is a compile error, other extents a
  /// shape_error, each naming the model and the input.
  template <class X> requires(in_list::single && Expression<X> && !std::is_same_v<std::remove_cvref_t<X>, input_type>)
  output_type operator()(const X& x, bool training = false) {
    return (*this)(std::tuple<const X&>(x), training);
  }
  template <class... X> requires(sizeof...(X) == input_count && (Expression<X> && ...) && !std::is_same_v<std::tuple<std::remove_cvref_t<X>...>, input_views>)
  output_type operator()(const std::tuple<X...>& xs, bool training = false) {
    [&]<std::size_t... I>(std::index_sequence<I...>) { (check_input<I, std::tuple_element_t<I, std::tuple<X...>>>(), ...); }(std::make_index_sequence<input_count>{});
    constexpr bool fits = []<std::size_t... I>(std::index_sequence<I...>) {
      return (detail::takes_model_input<typename in_t<I>::value_type, typename in_t<I>::shape_type, typename in_t<I>::device_type, std::tuple_element_t<I, std::tuple<X...>>> &&
              ...);
    }(std::make_index_sequence<input_count>{});
    if constexpr (!fits) {
      return outputs();
    } else {
      [&]<std::size_t... I>(std::index_sequence<I...>) {
        (detail::check_model_input<typename in_t<I>::shape_type>(class_name, name, graph_->inputs[I]->layer->name, std::get<I>(xs).dims()), ...);
        using held_type = std::tuple<typename in_t<I>::tensor_type...>;
        evaluated_ = std::make_shared<held_type>();
        auto& held = *std::static_pointer_cast<held_type>(evaluated_);
        const auto view = [&]<std::size_t K>(std::integral_constant<std::size_t, K>) {
          using V = std::tuple_element_t<K, input_views>;
          const auto& x = std::get<K>(xs);
          if constexpr (detail::whole_tensor<decltype(x)>) return V(x.data(), x.dims());
          else {
            std::get<K>(held) = x;  // evaluated here, kept until the next call (backward reads it)
            return V(std::get<K>(held).data(), std::get<K>(held).dims());
          }
        };
        set_inputs(input_views(view(std::integral_constant<std::size_t, I>{})...));
      }(std::make_index_sequence<input_count>{});
      graph_->run(training, !trainable);
      return outputs();
    }
  }
  /// @brief The model called as a layer on symbolic tensors: its graph, on them, as one layer of
  /// another model.
  template <class... X> requires(sizeof...(X) == input_count && (detail::symbolic<X> && ...))
  auto operator()(const X&... x) {
    static_assert(out_list::single, "ctflow::keras::Model: a model called as a layer has one output");
    using Out = out_t<0>;
    auto args = std::tuple{detail::as_tensor(x)...};
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      static_assert(((std::is_same_v<typename std::remove_cvref_t<std::tuple_element_t<I, decltype(args)>>::value_type, typename in_t<I>::value_type> &&
                      std::is_same_v<typename std::remove_cvref_t<std::tuple_element_t<I, decltype(args)>>::shape_type, typename in_t<I>::shape_type>) &&
                     ...),
                    "ctflow::keras::Model: a model called as a layer takes tensors of its inputs' dtypes and shapes");
    }(std::make_index_sequence<input_count>{});
    std::vector<void (*)(detail::graph_node&, detail::graph_node&)> bind, gather;
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      ((bind.push_back(&detail::bind_input<in_t<I>>), gather.push_back(&detail::gather_adjoint<in_t<I>>)), ...);
    }(std::make_index_sequence<input_count>{});
    std::vector<std::shared_ptr<detail::graph_node>> ins;
    std::apply([&](const auto&... a) { (ins.push_back(a.node()), ...); }, args);
    auto node = std::make_shared<detail::model_node<value_type, typename Out::view_type>>(graph_, std::move(ins), std::move(bind), std::move(gather));
    return KerasTensor<typename Out::value_type, typename Out::shape_type, void, typename Out::device_type>(std::move(node));
  }

  /// @brief The backward pass of the last training call: from dy, the adjoint of the output (a
  /// tuple for several), every trainable weight's gradient (`gradients()` gives them in
  /// trainable_variables()'s order); the adjoints of the inputs when input_gradient is set.
  typename views_of<in_tensors>::adjoints backward(const output_type& dy, bool input_gradient = false) {
    graph_->clear_adjoints();
    graph_->begin_backward();
    const output_views d = [&] {
      if constexpr (out_list::single) return output_views(dy);
      else return dy;
    }();
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      (static_cast<typename out_t<I>::node_type&>(*graph_->outputs[I]).add_adjoint(std::get<I>(d)), ...);
    }(std::make_index_sequence<output_count>{});
    graph_->run_backward(input_gradient, !trainable);
    graph_->end_backward();
    typename views_of<in_tensors>::adjoints out;
    if (input_gradient)
      [&]<std::size_t... I>(std::index_sequence<I...>) {
        ([&] {
          auto& n = static_cast<typename in_t<I>::node_type&>(*graph_->inputs[I]);
          if (n.has_adjoint) std::get<I>(out).emplace(n.adjoint);
        }(), ...);
      }(std::make_index_sequence<input_count>{});
    return out;
  }

  /// @brief The layers at run time, in Keras's order (the InputLayers included).
  std::vector<layer_info<value_type>> layers() { return graph_->describe_layers(); }
  /// @brief The number of the model's parameters (`model.count_params()`, as a Sequential's; a
  /// Sequential's is also known to the compiler, `Net::count_params()`).
  std::size_t count_params() const {
    std::size_t n = 0;
    for (const auto& l : graph_->describe_layers()) n += l.param_count();
    return n;
  }
  /// @brief The layer named `layer_name` (its name, trainable flag and class), as Keras's get_layer.
  detail::graph_layer_base& get_layer(const std::string& layer_name) {
    for (const auto& l : graph_->layers)
      if (l->name == layer_name) return *l;
    throw value_error("ctflow::keras::Model::get_layer: no layer named " + layer_name + " in model " + name);
  }

  /// @brief For model.save: the model's inputs and outputs as a .keras archive's config names them.
  void describe_inputs(detail::saved_model& m) const {
    m.input_layers = graph_->endpoints(graph_->inputs);
    m.output_layers = graph_->endpoints(graph_->outputs);
  }

  /// @brief Keras's model.summary(): its layers, output shapes, parameters and, when the graph is
  /// not a chain, what each layer is connected to; then the totals.
  void summary(const summary_options& options = {}) {
    const auto infos = layers();
    // Keras's "sequential-like": no depth holds two nodes, no node has two inputs, no layer is called twice.
    std::map<int, int> per_depth;
    std::map<const detail::graph_layer_base*, int> per_layer;
    bool chain = true;
    for (const auto& [n, d] : graph_->depth) {
      if (++per_depth[d] > 1 || n->inputs.size() > 1) chain = false;
      if (++per_layer[n->layer.get()] > 1) chain = false;
    }
    std::vector<std::string> connected(infos.size());
    for (std::size_t i = 0; i < infos.size(); ++i)
      for (const auto& [index, n] : node_calls(graph_->layers[i].get()))
        for (const auto& in : n->inputs) connected[i] += (connected[i].empty() ? "" : ", ") + in->layer->name + "[" + std::to_string(in->node_index) + "][0]";
    detail::summarize(name, infos, trainable, connected, !chain, options);
  }

 private:
  Model(in_tensors inputs, out_tensors outputs)
      : graph_(std::make_shared<detail::functional_graph<value_type>>(nodes_of(inputs), nodes_of(outputs))), name(graph_->name), trainable(graph_->trainable) {
    name = detail::auto_name("functional");
  }
  template <class Tuple> static std::vector<std::shared_ptr<detail::graph_node>> nodes_of(const Tuple& t) {
    std::vector<std::shared_ptr<detail::graph_node>> out;
    std::apply([&](const auto&... k) { (out.push_back(k.node()), ...); }, t);
    return out;
  }
  /// The static check of input I called on X (its message names the model and the input).
  template <std::size_t I, class X> static void check_input() {
    using K = in_t<I>;
    CTFLOW_STATIC_CHECK((detail::takes_model_input<typename K::value_type, typename K::shape_type, typename K::device_type, X>),
                        (detail::model_input_message<Model, typename K::value_type, typename K::shape_type, X>()));
  }
  std::shared_ptr<void> evaluated_;  // the inputs a call evaluated, kept until the next call
  void set_inputs(const input_views& x) {
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      ((static_cast<typename in_t<I>::input_node_type&>(*graph_->inputs[I]).value = std::get<I>(x)), ...);
    }(std::make_index_sequence<input_count>{});
  }
  output_type outputs() const {
    auto all = [&]<std::size_t... I>(std::index_sequence<I...>) {
      return output_views(static_cast<const typename out_t<I>::node_type&>(*graph_->outputs[I]).output()...);
    }(std::make_index_sequence<output_count>{});
    if constexpr (out_list::single) return std::get<0>(all);
    else return all;
  }
  /// The nodes of layer l in this model, by their call index (for "Connected to").
  std::map<std::size_t, const detail::graph_node*> node_calls(const detail::graph_layer_base* l) const {
    std::map<std::size_t, const detail::graph_node*> out;
    for (const auto& [n, d] : graph_->depth)
      if (n->layer.get() == l) out.emplace(n->node_index, n);
    return out;
  }
};

template <class I, class O> Model(const I&, const O&) -> Model<I, O>;

}  // namespace ctflow::keras
