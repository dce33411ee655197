#pragma once
/// @file
/// @brief `Variable<T, Shape>`: a tensor with a name and a `trainable` flag (tf.Variable).

#include <string>
#include <utility>

#include <ctflow/core/tensor.hpp>

namespace ctflow {

/// @brief A named tensor that training updates (tf.Variable). Its identity is the object.
template <DType T, ShapeType S, class D = cpu> class Variable : public Tensor<T, S, D> {
 public:
  using base = Tensor<T, S, D>;
  Variable() = default;
  explicit Variable(base initial, std::string name = "Variable", bool trainable = true)
      : base(std::move(initial)), name_(std::move(name)), trainable_(trainable) {}

  /// @brief tf.Variable.assign / assign_add / assign_sub.
  template <Expression E> Variable& assign(const E& e) { base::operator=(e); return *this; }
  template <Operand E> Variable& assign_add(const E& e) { base::operator+=(e); return *this; }
  template <Operand E> Variable& assign_sub(const E& e) { base::operator-=(e); return *this; }

  /// @brief tf.Variable.name and trainable (checkpoints and messages use the name).
  const std::string& name() const { return name_; }
  bool trainable() const { return trainable_; }

 private:
  std::string name_ = "Variable";
  bool trainable_ = true;
};

template <class T, class S, class D> struct is_leaf<Variable<T, S, D>> : std::true_type {};

}  // namespace ctflow
