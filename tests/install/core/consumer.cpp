#include <ctflow/ctflow.hpp>

#include <iostream>

// The core alone: no component, and none of their dependencies.
int main() {
  ctflow::Tensor<float, ctflow::Shape<3>> a = ctflow::range<float>(1.f, 4.f);
  ctflow::Tensor<float, ctflow::Shape<3>> b = a * a - a;
  std::cout << b << "\n";
}
