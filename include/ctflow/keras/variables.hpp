#pragma once
/// @file
/// @brief A model's weights as one table, built once from its layers: each weight's path, a typed
/// view of its value on the model's device, its gradient slot, whether it trains and its
/// regularizer. `trainable_variables()`, `gradients()`, `get_weights()` / `set_weights()`, the
/// regularization losses and the optimizers read it; a warm step reads it without walking the
/// layers or allocating.

#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include <ctflow/ctflow.hpp>
#include <ctflow/keras/regularizers.hpp>

namespace ctflow::keras {

/// @brief A model's variable (Keras's `model.weights[i]`): its path ("dense/kernel"), shape and
/// value (memory of device D), the slot where a backward pass leaves its gradient, its
/// regularizer, and whether it trains (its own flag and its layers', read when asked: freezing a
/// layer after the table is built counts).
template <class T, class D = cpu> struct variable_ref {
  using value_type = T;
  using device_type = D;
  std::string path{};
  std::vector<std::size_t> shape{};
  std::span<T> values{};
  /// @brief Where the last backward pass left the gradient (null there: none); null: no slot.
  const T* const* gradient_slot = nullptr;
  /// @brief Its regularizer (null: none).
  const regularizers::Regularizer* regularizer = nullptr;
  /// @brief The trainable flags of its layer and of the layers around it, innermost last (not the
  /// model's own: the model passes it), and the variable's own flag.
  std::vector<const bool*> layer_flags{};
  bool own_trainable = true;

  /// @brief The variable's name within its layer ("kernel").
  std::string name() const { return path.substr(path.rfind('/') + 1); }
  /// @brief Its value, flat, as a tensor view on its device: optimizers assign expressions to it.
  TensorView<T, Shape<dyn>, D> value() const { return TensorView<T, Shape<dyn>, D>(values.data(), {values.size()}); }
  /// @brief The number of its elements.
  std::size_t size() const { return values.size(); }
  /// @brief Whether it trains in a model whose own flag is model_trains.
  bool trainable(bool model_trains = true) const {
    if (!model_trains || !own_trainable) return false;
    for (const bool* f : layer_flags)
      if (!*f) return false;
    return true;
  }
  /// @brief The gradient the last backward pass left, or null.
  const T* gradient() const { return gradient_slot ? *gradient_slot : nullptr; }
};

/// @brief A weight's value with its shape, as Keras's get_weights returns each (a NumPy array).
template <class T> struct weight_value {
  std::vector<std::size_t> shape{};
  std::vector<T> values;
};

/// @brief Some of a model's variables (its trainable ones, or the others), in Keras's order: a
/// view of the model's table, valid while the model lives and until the variables are listed
/// again. `vars[i].path`, `vars.size()`, `for (const auto& v : vars)`.
template <class T, class D = cpu> class variable_list {
 public:
  using value_type = variable_ref<T, D>;
  class iterator {
   public:
    explicit iterator(const variable_ref<T, D>* const* p) : p_(p) {}
    const variable_ref<T, D>& operator*() const { return **p_; }
    const variable_ref<T, D>* operator->() const { return *p_; }
    iterator& operator++() {
      ++p_;
      return *this;
    }
    bool operator==(const iterator&) const = default;

   private:
    const variable_ref<T, D>* const* p_;
  };
  explicit variable_list(std::span<const variable_ref<T, D>* const> items) : items_(items) {}
  /// @brief The number of variables, and whether there are none.
  std::size_t size() const { return items_.size(); }
  /// @brief Whether there are none.
  bool empty() const { return items_.empty(); }
  /// @brief Variable i.
  const variable_ref<T, D>& operator[](std::size_t i) const { return *items_[i]; }
  /// @brief The range of the variables.
  iterator begin() const { return iterator(items_.data()); }
  /// @brief Its end.
  iterator end() const { return iterator(items_.data() + items_.size()); }

 private:
  std::span<const variable_ref<T, D>* const> items_;
};

namespace detail {

/// The table of a model's variables: built once (by the model, on first use, from its
/// layers' descriptions), then read. Copies start empty (a copy of a model builds its own).
template <class T, class D = cpu> class weight_table {
 public:
  using gradient_view = TensorView<const T, Shape<dyn>, D>;
  weight_table() = default;
  weight_table(const weight_table&) {}
  weight_table& operator=(const weight_table&) { return *this; }

  bool built() const { return built_; }
  /// Builds the table from a model's layers (layer_info<T>s), once.
  template <class Layers> void build(const Layers& layers) {
    std::vector<const bool*> flags;
    add(layers, flags, "");
    built_ = true;
  }
  /// Every variable, in Keras's order.
  std::vector<variable_ref<T, D>>& all() { return all_; }

  /// The variables that train (trainable true) or the others, for a model whose own flag
  /// is model_trains. No allocation once the lists have been made.
  variable_list<T, D> select(bool model_trains, bool trainable) {
    refresh(model_trains);
    return variable_list<T, D>(trainable ? std::span<const variable_ref<T, D>* const>(trains_) : std::span<const variable_ref<T, D>* const>(others_));
  }

  /// The gradients of the last backward pass, parallel to select(model_trains, true):
  /// zeros for a variable the pass did not reach.
  std::span<const gradient_view> gradients(bool model_trains) {
    refresh(model_trains);
    grads_.clear();
    if (zeros_.size() < trains_.size()) zeros_.resize(trains_.size());
    for (std::size_t i = 0; i < trains_.size(); ++i) {
      const variable_ref<T, D>& v = *trains_[i];
      const T* g = v.gradient();
      if (!g) {
        if (zeros_[i].size() != v.size()) zeros_[i] = Tensor<T, Shape<dyn>, D>({v.size()});
        g = zeros_[i].data();
      }
      grads_.emplace_back(g, dims_t<1>{v.size()});
    }
    return grads_;
  }

 private:
  template <class Layers> void add(const Layers& layers, std::vector<const bool*>& flags, const std::string& prefix) {
    for (const auto& l : layers) {
      flags.push_back(l.trainable);
      for (const auto& w : l.weights)
        all_.push_back({.path = prefix + *l.name + "/" + w.name,
                        .shape = w.shape,
                        .values = w.values,
                        .gradient_slot = w.gradient,
                        .regularizer = w.regularizer && w.regularizer->active() ? w.regularizer : nullptr,
                        .layer_flags = flags,
                        .own_trainable = w.trainable});
      add(l.children, flags, prefix + *l.name + "/");
      flags.pop_back();
    }
  }
  /// Sorts the variables into trains_ and others_ (again only when a flag changed).
  void refresh(bool model_trains) {
    bool same = sorted_ && model_trains == model_trains_;
    for (std::size_t i = 0; same && i < all_.size(); ++i) same = all_[i].trainable(model_trains) == trains_now_[i];
    if (same) return;
    trains_.clear();
    others_.clear();
    trains_now_.resize(all_.size());
    for (std::size_t i = 0; i < all_.size(); ++i) {
      trains_now_[i] = all_[i].trainable(model_trains);
      (trains_now_[i] ? trains_ : others_).push_back(&all_[i]);
    }
    model_trains_ = model_trains;
    sorted_ = true;
  }

  std::vector<variable_ref<T, D>> all_;
  std::vector<const variable_ref<T, D>*> trains_, others_;
  std::vector<char> trains_now_;
  std::vector<gradient_view> grads_;
  std::vector<Tensor<T, Shape<dyn>, D>> zeros_;
  bool built_ = false, sorted_ = false, model_trains_ = true;
};

}  // namespace detail
}  // namespace ctflow::keras
