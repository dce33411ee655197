#include <ctflow/ctflow.hpp>

#include <iostream>

int main() {
  ctflow::Tensor<float, ctflow::Shape<3>> a = ctflow::range<float>(1.f, 4.f);
  ctflow::Tensor<float, ctflow::Shape<3>> b = a + ctflow::fill<float, ctflow::Shape<3>>(3.f) + a;
  std::cout << b << "\n";
}
