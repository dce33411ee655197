// keras::export_header as a user calls it: the header it writes for a model (each layer's
// embedded type, a softmax split from its layer, Dropout gone, the weights exact), the errors of
// models and options it cannot write, and the file written whole or not at all. (The headers
// compiled and run on each target: tests/embedded/.)
#include "keras_check.hpp"

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include <ctflow/keras/export.hpp>

using namespace ctflow;
using keras_check::read_text;
using keras_check::scratch;
namespace layers = keras::layers;
namespace activations = keras::activations;

namespace {

/// The numbers of array `name` in header text h.
std::vector<float> array_values(const std::string& h, const std::string& name) {
  const auto begin = h.find("inline constexpr float " + name + "[");
  REQUIRE(begin != std::string::npos);
  std::size_t at = h.find('{', begin) + 1;
  const std::size_t end = h.find("};", at);
  std::vector<float> values;
  while (true) {
    char* stop = nullptr;
    const float v = std::strtof(h.c_str() + at, &stop);
    if (stop == h.c_str() + at || std::size_t(stop - h.c_str()) > end) break;
    values.push_back(v);
    at = std::size_t(stop - h.c_str());
    at = h.find_first_not_of("f, \n", at);
  }
  return values;
}

}  // namespace

TEST_CASE("export_header: each layer's embedded type, a softmax of its own, Dropout gone, and the weights exact") {
  keras::utils::set_random_seed(11);
  keras::Sequential<keras::Input<float, Shape<10, 10, 3>>, layers::Conv2D<4, 3, layers::same, layers::strides<2>, activations::relu>,
                    layers::BatchNormalization, layers::DepthwiseConv2D<3, activations::relu6, layers::use_bias<false>>, layers::MaxPooling2D<2>,
                    layers::Dropout, layers::Flatten, layers::Dense<5, activations::softmax>>
      model({}, {}, {.epsilon = 0.01}, {}, {}, {.rate = 0.25}, {}, {});
  const std::string path = scratch("typed.hpp");
  keras::export_header(model, path, {.name_space = "my net", .batch = 2});
  const std::string h = read_text(path);
  CHECK(h.find("namespace my_net {") != std::string::npos);
  CHECK(h.find("#include <ctflow/backend/reference/reference.hpp>") != std::string::npos);
  const std::string layers_text =
      "using model = ctflow::embedded::Sequential<\n"
      "    ctflow::embedded::Input<float, ctflow::Shape<2, 10, 10, 3>>,\n"
      "    ctflow::embedded::Conv2D<4, ctflow::embedded::window{.kh = 3, .kw = 3, .sh = 2, .sw = 2, .dh = 1, .dw = 1, .padding = ctflow::nn::SAME}, "
      "ctflow::keras::activations::relu, weights::conv2d_kernel, weights::conv2d_bias>,\n"
      "    ctflow::embedded::BatchNormalization<0.01, weights::batch_normalization_gamma, weights::batch_normalization_beta, "
      "weights::batch_normalization_moving_mean, weights::batch_normalization_moving_variance>,\n"
      "    ctflow::embedded::DepthwiseConv2D<1, ctflow::embedded::window{.kh = 3, .kw = 3, .sh = 1, .sw = 1, .dh = 1, .dw = 1, .padding = "
      "ctflow::nn::VALID}, ctflow::keras::activations::relu6, weights::depthwise_conv2d_kernel>,\n"
      "    ctflow::embedded::MaxPooling2D<ctflow::embedded::window{.kh = 2, .kw = 2, .sh = 2, .sw = 2, .dh = 1, .dw = 1, .padding = ctflow::nn::VALID}>,\n"
      "    ctflow::embedded::Flatten,\n"
      "    ctflow::embedded::Dense<5, ctflow::keras::activations::linear, weights::dense_kernel, weights::dense_bias>,\n"
      "    ctflow::embedded::Activation<ctflow::keras::activations::softmax>>;\n";
  CHECK(h.find(layers_text) != std::string::npos);
  CHECK(h.find("Dropout") == std::string::npos);
  CHECK(h.find("test_inputs") == std::string::npos);  // none given
  // Every weight, exactly (9 significant digits give a float back).
  const auto weights = model.get_weights();
  const char* names[] = {"conv2d_kernel", "conv2d_bias", "batch_normalization_gamma", "batch_normalization_beta",
                         "batch_normalization_moving_mean", "batch_normalization_moving_variance", "depthwise_conv2d_kernel", "dense_kernel",
                         "dense_bias"};
  REQUIRE(weights.size() == std::size(names));
  for (std::size_t i = 0; i < weights.size(); ++i) {
    INFO(names[i]);
    CHECK(array_values(h, names[i]) == weights[i].values);
  }
}

TEST_CASE("export_header: the test case holds the inputs and the model's outputs for them, batch by batch") {
  keras::utils::set_random_seed(12);
  keras::Sequential<keras::Input<float, Shape<6>>, layers::Dense<4, activations::tanh>, layers::Dense<3>> model;
  const auto x = random_uniform<float, Shape<dyn, 6>>(3, -1, 1, {4, 6});
  const std::string path = scratch("case.hpp");
  keras::export_header(model, path, {.batch = 2}, x);
  const std::string h = read_text(path);
  CHECK(h.find("inline constexpr std::size_t test_count = 2;") != std::string::npos);
  const auto inputs = array_values(h, "test_inputs");
  CHECK(inputs == std::vector<float>(x.data(), x.data() + x.size()));
  const auto y = model(x);
  CHECK(array_values(h, "test_outputs") == std::vector<float>(y.data(), y.data() + y.size()));
  // Inputs that are not whole batches, and no batch.
  CHECK_THROWS_WITH(keras::export_header(model, path, {.batch = 3}, x),
                    "ctflow::keras::export_header: give test inputs in whole batches of 3");
  CHECK_THROWS_WITH(keras::export_header(model, path, {.batch = 0}, x), "ctflow::keras::export_header: the batch must be positive");
}

TEST_CASE("export_header: what it cannot write is an error before anything is written, and a file appears whole") {
  keras::Sequential<keras::Input<float, Shape<4, 4, 2>>, layers::ReLU, layers::Flatten, layers::Dense<2>> capped({}, {.max_value = 6}, {}, {});
  const std::string path = scratch("refused.hpp");
  std::filesystem::remove(path);
  CHECK_THROWS_WITH(keras::export_header(capped, path),
                    "ctflow::keras::export_header: layer re_lu (ReLU) has a max_value, negative_slope or threshold: only ReLU() exports");
  CHECK(!std::filesystem::exists(path));
  keras::Sequential<keras::Input<float, Shape<4, 4, 2>>, layers::ReLU, layers::Flatten, layers::Dense<2>> model;
  CHECK_THROWS_WITH(keras::export_header(model, path, {.device = "gpu"}),
                    "ctflow::keras::export_header: device gpu: give \"reference\" or \"cpu\"");
  CHECK_THROWS_WITH(keras::export_header(model, path, {.batch = 0}), "ctflow::keras::export_header: the batch must be positive");
  CHECK(!std::filesystem::exists(path));
  // A directory where the file would go: an io_error, and the directory as it was.
  const std::string dir = scratch("a_directory.hpp");
  std::filesystem::create_directories(dir);
  CHECK_THROWS_AS(keras::export_header(model, dir), io_error);
  CHECK(std::filesystem::is_directory(dir));
  // The cpu device's header includes its backend.
  keras::export_header(model, path, {.device = "cpu"});
  const std::string h = read_text(path);
  CHECK(h.find("#include <ctflow/backend/cpu/cpu.hpp>") != std::string::npos);
  CHECK(h.find("using device = ctflow::cpu;") != std::string::npos);
  for (const auto& e : std::filesystem::directory_iterator(std::filesystem::path(path).parent_path()))
    CHECK(e.path().filename().string().find(".tmp") == std::string::npos);  // no temporary file left
}
