// What the tests of Keras models on a device other than cpu share: comparing a model on another
// device (reference, cuda) with the same model, with the same weights, on cpu.
#pragma once

#include "keras_check.hpp"

namespace devices_check {

using namespace ctflow;

/// The largest difference of a's and b's elements, relative to b's largest magnitude where that
/// exceeds 1 (a large network's gradients sum many terms in each device's order).
template <class A, class B> double largest_difference(const A& a, const B& b) {
  const auto x = to<cpu>(a);
  const auto y = to<cpu>(b);
  REQUIRE(x.dims() == y.dims());
  double d = 0, scale = 1;
  for (std::size_t i = 0; i < x.size(); ++i) {
    d = std::max(d, double(std::abs(x.data()[i] - y.data()[i])));
    scale = std::max(scale, double(std::abs(y.data()[i])));
  }
  return d / scale;
}

/// An adjoint of a model's input: a Sequential's backward gives one, a functional Model's a tuple.
template <class A> const auto& first_adjoint(const A& a) {
  if constexpr (requires { std::tuple_size<A>::value; }) return std::get<0>(a);
  else return a;
}

/// A model on cpu and the same model on another device, their weights made the same here, on
/// input x: the same outputs in inference and in training, the same gradients of every weight and
/// (for a float input) of the input, the same weights after the training call (moving
/// statistics).
template <class OnCpu, class OnDevice, class X> void same_models(OnCpu& on_cpu, OnDevice& on_device, const X& x, double tolerance) {
  using Device = typename OnDevice::device_type;
  on_device.set_weights(on_cpu.get_weights());
  const auto xd = to<Device>(x);  // a training call's input lives until its backward pass
  CHECK(largest_difference(eval(on_device(xd)), eval(on_cpu(x))) < tolerance);
  const auto t_cpu = eval(on_cpu(x, true));
  const auto t_device = eval(on_device(xd, true));
  CHECK(largest_difference(t_device, t_cpu) < tolerance);
  const auto dy = random_uniform<float, shape_t<decltype(t_cpu)>>(8, -1, 1, t_cpu.dims());
  constexpr bool float_input = std::is_floating_point_v<value_t<X>>;
  const auto dx_cpu = on_cpu.backward(dy, float_input);
  const auto dx_device = on_device.backward(to<Device>(dy), float_input);
  if constexpr (float_input) {
    REQUIRE(first_adjoint(dx_cpu));
    REQUIRE(first_adjoint(dx_device));
    CHECK(largest_difference(*first_adjoint(dx_device), *first_adjoint(dx_cpu)) < tolerance);
  }
  const auto g_cpu = on_cpu.gradients();
  const auto g_device = on_device.gradients();
  REQUIRE(g_cpu.size() == g_device.size());
  CHECK(!g_cpu.empty());
  for (std::size_t i = 0; i < g_cpu.size(); ++i) {
    INFO("gradient " << i << " (" << on_cpu.trainable_variables()[i].path << ")");
    CHECK(largest_difference(g_device[i], g_cpu[i]) < tolerance);
  }
  const auto w_cpu = on_cpu.get_weights(), w_device = on_device.get_weights();
  REQUIRE(w_cpu.size() == w_device.size());
  for (std::size_t i = 0; i < w_cpu.size(); ++i) {
    REQUIRE(w_cpu[i].values.size() == w_device[i].values.size());
    double d = 0;
    for (std::size_t j = 0; j < w_cpu[i].values.size(); ++j) d = std::max(d, double(std::abs(w_cpu[i].values[j] - w_device[i].values[j])));
    INFO("weight " << i);
    CHECK(d < tolerance);
  }
}

/// Net<cpu> and Net<Device> compared by same_models.
template <template <class> class Net, class Device = reference, class X> void same_on_both(const X& x, double tolerance = 1e-4) {
  keras::backend::clear_session();
  Net<cpu> on_cpu;
  Net<Device> on_device;
  static_assert(std::is_same_v<typename Net<Device>::device_type, Device>);
  same_models(on_cpu, on_device, x, tolerance);
}

}  // namespace devices_check
