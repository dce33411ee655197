#include <ctflow/ctflow.hpp>
#include <ctflow/data.hpp>

#include <iostream>

int main() {
  ctflow::Tensor<float, ctflow::Shape<3>> a = ctflow::range<float>(1.f, 4.f);
  ctflow::Tensor<float, ctflow::Shape<3>> b = a + ctflow::fill<float, ctflow::Shape<3>>(3.f) + a;
  std::cout << b << "\n";
  // ctflow::data links zlib, libpng and libjpeg: a pipeline and a PNG round trip.
  std::int64_t total = 0;
  for (auto& x : ctflow::data::range(5).batch(2)) total += ctflow::Tensor<std::int64_t, ctflow::Shape<>>(ctflow::reduce_sum(x)).data()[0];
  ctflow::Tensor<std::uint8_t, ctflow::Shape<1, 2, 1>> img;
  img.data()[1] = 7;
  std::cout << "pipeline " << total << " png " << int(ctflow::io::decode_png(ctflow::io::encode_png(img)).data()[1]) << "\n";
}
