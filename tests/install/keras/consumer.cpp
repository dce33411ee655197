// A consumer of ctflow::keras: a Sequential model, its Keras weight file written and read back,
// beside the program (its two builds, by CMake and by pkg-config's line, run at once, each in a
// directory of its own).
#include <ctflow/keras.hpp>

#include <cstdio>
#include <filesystem>

using namespace ctflow;
namespace layers = keras::layers;

int main(int, char** argv) {
  using Net = keras::Sequential<keras::Input<float, Shape<4>>, layers::Dense<8, keras::activations::relu>, layers::Dense<2>>;
  static_assert(Net::count_params() == 58);
  Net a, b;
  const auto path = (std::filesystem::absolute(argv[0]).parent_path() / "keras_consumer.weights.h5").string();
  a.save_weights(path);
  b.load_weights(path);
  std::filesystem::remove(path);
  const auto x = ones<float, Shape<dyn, 4>>({1, 4});
  const float same = reduce_max(abs(a(x) - b(x)));
  std::printf("keras %zu %g\n", Net::count_params(), same);
}
