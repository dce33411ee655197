// keras::export_header as a user calls it: the header it writes for a model (each layer's
// embedded type, a softmax split from its layer, Dropout gone, the weights exact), the errors of
// models and options it cannot write, and the file written whole or not at all. (The headers
// compiled and run on each target: tests/embedded/.)
#include "keras_check.hpp"

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include <ctflow/keras/applications.hpp>
#include <ctflow/keras/export.hpp>

using namespace ctflow;
using test_files::slurp;
using keras_check::scratch;
namespace layers = keras::layers;
namespace activations = keras::activations;

namespace {

/// The numbers of array `name` in header text h.
std::vector<float> array_values(const std::string& h, const std::string& name, const std::string& linkage = "inline constexpr") {
  const auto begin = h.find(linkage + " float " + name + "[");
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
  keras::backend::clear_session();  // the layers' automatic names (conv2d, dense, ...) from the first
  keras::utils::set_random_seed(11);
  keras::Sequential<keras::Input<float, Shape<10, 10, 3>>, layers::Conv2D<4, 3, layers::same, layers::strides<2>, activations::relu>,
                    layers::BatchNormalization, layers::DepthwiseConv2D<3, activations::relu6, layers::use_bias<false>>, layers::MaxPooling2D<2>,
                    layers::Dropout, layers::Flatten, layers::Dense<5, activations::softmax>>
      model({}, {}, {.epsilon = 0.01}, {}, {}, {.rate = 0.25}, {}, {});
  const std::string path = scratch("typed.hpp");
  keras::export_header(model, path, {.name_space = "my net", .batch = 2});
  const std::string h = slurp(path);
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
  // With a weights file: the header declares the arrays, the file defines them, the same values.
  const std::string split = scratch("split.hpp"), source = scratch("split_weights.cpp");
  keras::export_header(model, split, {.name_space = "my net", .batch = 2, .weights_file = source});
  const std::string declared = slurp(split), defined = slurp(source);
  CHECK(declared.find(layers_text) != std::string::npos);
  CHECK(declared.find("// Defined in split_weights.cpp") != std::string::npos);
  CHECK(declared.find("alignas(64) extern const float conv2d_kernel[108];") != std::string::npos);
  CHECK(declared.find("inline constexpr float") == std::string::npos);
  CHECK(defined.find("namespace my_net::weights {") != std::string::npos);
  for (std::size_t i = 0; i < weights.size(); ++i) {
    INFO(names[i]);
    CHECK(array_values(defined, names[i], "alignas(64) extern const") == weights[i].values);
  }
}

TEST_CASE("export_header: the test case holds the inputs and the model's outputs for them, batch by batch") {
  keras::utils::set_random_seed(12);
  keras::Sequential<keras::Input<float, Shape<6>>, layers::Dense<4, activations::tanh>, layers::Dense<3>> model;
  const auto x = random_uniform<float, Shape<dyn, 6>>(3, -1, 1, {4, 6});
  const std::string path = scratch("case.hpp");
  keras::export_header(model, path, {.batch = 2}, x);
  const std::string h = slurp(path);
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
  keras::backend::clear_session();  // the layers' automatic names (conv2d, dense, ...) from the first
  keras::Sequential<keras::Input<float, Shape<4, 4, 2>>, layers::ReLU, layers::Flatten, layers::Dense<2>> capped({}, {.max_value = 4}, {}, {});
  const std::string path = scratch("refused.hpp");
  std::filesystem::remove(path);
  CHECK_THROWS_WITH(keras::export_header(capped, path),
                    "ctflow::keras::export_header: layer re_lu (ReLU) has a max_value, negative_slope or threshold: only ReLU() and ReLU(6) export");
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
  const std::string h = slurp(path);
  CHECK(h.find("#include <ctflow/backend/cpu/cpu.hpp>") != std::string::npos);
  CHECK(h.find("using device = ctflow::cpu;") != std::string::npos);
  for (const auto& e : std::filesystem::directory_iterator(std::filesystem::path(path).parent_path()))
    CHECK(e.path().filename().string().find(".tmp") == std::string::npos);  // no temporary file left
}

TEST_CASE("export_header: a functional model's graph as an embedded::Model, what has no embedded form a value_error naming the layer") {
  keras::backend::clear_session();  // the layers' automatic names (conv2d, dense, ...) from the first
  keras::Input<float, Shape<4, 4, 2>> inputs;
  auto x = layers::Conv2D<2, 1, activations::relu>{}(inputs);
  auto joined = layers::Concatenate<>{}(layers::Add{}(x, inputs), x);
  auto outputs = layers::Dense<3>{}(layers::Flatten{}(joined));
  keras::Model model(inputs, outputs);
  // A directory of its own: what export_header leaves beside its header is checked below.
  const std::filesystem::path dir = scratch("export_functional");
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "functional.hpp").string();
  const auto x_test = random_uniform<float, Shape<2, 4, 4, 2>>(3);
  keras::export_header(model, path, {.name_space = "graph"}, x_test);
  const std::string h = slurp(path);
  CHECK_THAT(h, Catch::Contains("using model = ctflow::embedded::Model<"));
  CHECK_THAT(h, Catch::Contains("ctflow::embedded::Node<ctflow::embedded::Add, 1, 0>"));
  CHECK_THAT(h, Catch::Contains("ctflow::embedded::Node<ctflow::embedded::Concatenate<-1>, 2, 1>"));
  CHECK_THAT(h, Catch::Contains("ctflow::embedded::Node<ctflow::embedded::Flatten, 3>"));
  // The test case: the model's own outputs.
  const auto y = model(x_test);
  const auto expected = array_values(h, "test_outputs");
  REQUIRE(expected.size() == 6);
  for (std::size_t i = 0; i < 6; ++i) CHECK(expected[i] == y.data()[i]);

  // A Sequential model's Conv2DTranspose: Keras's kernel [kh, kw, filters, channels], as it is.
  keras::Sequential<keras::Input<float, Shape<3, 3, 2>>, layers::Conv2DTranspose<3, 2, layers::strides<2>>, layers::Flatten, layers::Dense<2>> up_model;
  keras::export_header(up_model, path);
  CHECK_THAT(slurp(path), Catch::Contains("ctflow::embedded::Conv2DTranspose<3, ctflow::embedded::window{.kh = 2, .kw = 2, .sh = 2, .sw = 2, .dh = 1, "
                                              ".dw = 1, .padding = ctflow::nn::VALID}, ctflow::keras::activations::linear, weights::conv2d_transpose_kernel, "
                                              "weights::conv2d_transpose_bias>"));
  CHECK(array_values(slurp(path), "conv2d_transpose_kernel") == up_model.get_weights()[0].values);

  keras::Input<float, Shape<4, 4, 2>> in2;
  auto up = layers::UpSampling2D<>{}(layers::Conv2D<2, 1>{}(in2));
  keras::Model refused(in2, up);
  const std::string refused_path = (dir / "functional_refused.hpp").string();
  std::filesystem::remove(refused_path);
  CHECK_THROWS_WITH(keras::export_header(refused, refused_path),
                    Catch::StartsWith("ctflow::keras::export_header: layer up_sampling2d") && Catch::Contains("(UpSampling2D) has no embedded form"));
  CHECK_THROWS_AS(keras::export_header(refused, refused_path), value_error);
  CHECK(!std::filesystem::exists(refused_path));
  for (const auto& e : std::filesystem::directory_iterator(dir))
    CHECK(e.path().filename().string().find(".keras") == std::string::npos);  // no archive left
}

TEST_CASE("export_header: the ready residual networks' blocks as nodes of an embedded::Model: ResNet-20 whole") {
  keras::backend::clear_session();  // the layers' automatic names (conv2d, dense, ...) from the first
  keras::utils::set_random_seed(3);
  keras::applications::ResNet20<> net;
  const std::string path = scratch("resnet20.hpp");
  keras::export_header(net, path, {.name_space = "resnet20"});
  const std::string h = slurp(path);
  CHECK_THAT(h, Catch::Contains("(Sequential, 274442 parameters)"));  // Keras's count, the moving statistics too
  CHECK_THAT(h, Catch::Contains("using model = ctflow::embedded::Model<"));
  // The stem (conv, batch norm, relu: activations 1 to 3), then the first block: its main path
  // (4 to 8), the sum of the block's input and the main path, its relu.
  CHECK_THAT(h, Catch::Contains("ctflow::embedded::Node<ctflow::embedded::Add, 3, 8>,\n    ctflow::embedded::Node<ctflow::embedded::Activation<ctflow::keras::activations::relu>, 9>"));
  // The second stack's first block (its input activation 24, after the stem's 3 and three blocks
  // of 7) projects its input with a strided 1x1 convolution.
  const auto projection = h.find(".kh = 1, .kw = 1, .sh = 2, .sw = 2");
  REQUIRE(projection != std::string::npos);
  const std::string line = h.substr(projection, h.find('\n', projection) - projection);
  CHECK_THAT(line, Catch::EndsWith("_bias>, 24>,"));
  std::size_t adds = 0;
  for (std::size_t at = h.find("embedded::Add"); at != std::string::npos; at = h.find("embedded::Add", at + 1)) ++adds;
  CHECK(adds == 9);
}

TEST_CASE("import_header: a model file ctflow saved, its ReLU(6) a relu6, another max_value an io_error naming the layer") {
  keras::Input<float, Shape<4>> in;
  auto h = layers::ReLU{.max_value = 6}(layers::Dense<3>{}(in));
  keras::Model six(in, layers::Dense<2>{}(h));
  six.save(scratch("six.keras"));
  keras::import_header(scratch("six.keras"), scratch("six.hpp"));
  CHECK_THAT(slurp(scratch("six.hpp")), Catch::Contains("ctflow::embedded::Dense<3, ctflow::keras::activations::linear") &&
                                                Catch::Contains("ctflow::embedded::Activation<ctflow::keras::activations::relu6>"));
  keras::Input<float, Shape<4>> in2;
  keras::Model capped(in2, layers::ReLU{.max_value = 4}(layers::Dense<3>{}(in2)));
  capped.save(scratch("capped.keras"));
  CHECK_THROWS_WITH(keras::import_header(scratch("capped.keras"), scratch("capped.hpp")),
                    Catch::Contains("capped.keras: layer re_lu") &&
                        Catch::Contains("(ReLU) has a max_value, negative_slope or threshold: only ReLU() and ReLU(6) are imported"));
  CHECK_THROWS_AS(keras::import_header(scratch("capped.keras"), scratch("capped.hpp")), io_error);
  CHECK(!std::filesystem::exists(scratch("capped.hpp")));
}

TEST_CASE("export_header and import_header: a Permute, its dims Keras's 1-based axes of the example") {
  keras::backend::clear_session();  // the layers' automatic names (conv2d, dense, ...) from the first
  keras::Sequential<keras::Input<float, Shape<3, 4>>, layers::Permute<2, 1>, layers::Flatten, layers::Dense<2>> model;
  keras::export_header(model, scratch("permute_exported.hpp"));
  model.save(scratch("permute.keras"));
  keras::import_header(scratch("permute.keras"), scratch("permute_imported.hpp"));
  for (const char* file : {"permute_exported.hpp", "permute_imported.hpp"}) {
    INFO(file);
    CHECK_THAT(slurp(scratch(file)), Catch::Contains("    ctflow::embedded::Input<float, ctflow::Shape<1, 3, 4>>,\n"
                                                         "    ctflow::embedded::Permute<2, 1>,\n    ctflow::embedded::Flatten,\n"));
  }
}

// ONNX graphs built field by field (ModelProto's wire format), imported as import_header reads
// them: the layouts the network takes (channels last, kernels transposed, a channels-first
// Flatten's rows permuted) and each refusal's message. (The models of generate_onnx.py, against
// onnxruntime's outputs: tests/embedded/.)
#include <ctflow/detail/protobuf.hpp>
#include <ctflow/keras/import.hpp>

namespace {

using pbw = ctflow::detail::pb::writer;

struct onnx_graph {
  std::string body;  // GraphProto's fields

  using attributes = std::vector<std::pair<std::string, std::vector<std::int64_t>>>;
  using texts = std::vector<std::pair<std::string, std::vector<std::string>>>;
  /// A node of op over inputs into out, its integer attributes (one value: an int; more: a list)
  /// and float ones.
  void node(const std::string& op, const std::vector<std::string>& in, const std::string& out, const attributes& ints = {},
            const std::vector<std::pair<std::string, float>>& floats = {}) {
    outputs(op, in, {out}, ints, floats);
  }
  /// A node of several outputs (named after the first), and string attributes (one: a string;
  /// activations: a list).
  void outputs(const std::string& op, const std::vector<std::string>& in, const std::vector<std::string>& out, const attributes& ints = {},
               const std::vector<std::pair<std::string, float>>& floats = {}, const texts& strings = {}) {
    pbw{body}.message(1, [&](pbw& n) {
      for (const auto& i : in) n.bytes(1, i);
      for (const auto& o : out) n.bytes(2, o);
      n.bytes(3, out[0]);
      n.bytes(4, op);
      for (const auto& [name, v] : strings)
        n.message(5, [&](pbw& a) {
          a.bytes(1, name);
          if (name == "activations")
            for (const auto& text : v) a.bytes(9, text);
          else a.bytes(4, v[0]);
        });
      for (const auto& [name, v] : ints)
        n.message(5, [&](pbw& a) {
          a.bytes(1, name);
          if (v.size() == 1 && name != "pads" && name != "kernel_shape" && name != "strides") a.uint64(3, std::uint64_t(v[0]));
          else a.packed_int64s(8, v);
        });
      for (const auto& [name, f] : floats)
        n.message(5, [&](pbw& a) {
          a.bytes(1, name);
          a.float32(2, f);
        });
    });
  }
  /// An initializer of floats (or of int64s), its values 0, 1, 2, ... unless given.
  void init(const std::string& name, const std::vector<std::int64_t>& dims, std::vector<float> v = {}, bool int64 = false, bool external = false) {
    std::size_t n = 1;
    for (auto d : dims) n *= std::size_t(d);
    if (v.empty())
      for (std::size_t k = 0; k < n; ++k) v.push_back(float(k));
    pbw{body}.message(5, [&](pbw& t) {
      t.packed_int64s(1, dims);
      t.uint64(2, int64 ? 7 : 1);
      if (int64) t.packed_int64s(7, std::vector<std::int64_t>(v.begin(), v.end()));
      else if (!external) t.packed_floats(4, v);
      t.bytes(8, name);
      if (external) t.uint64(14, 1);
    });
  }
  /// An initializer of floats kept in an external file, as PyTorch's exporter writes one: its
  /// external_data entries (location, offset, length), then data_location EXTERNAL.
  void external(const std::string& name, const std::vector<std::int64_t>& dims, const std::string& location, const std::string& offset,
                const std::string& length) {
    pbw{body}.message(5, [&](pbw& t) {
      t.packed_int64s(1, dims);
      t.uint64(2, 1);
      t.bytes(8, name);
      for (const auto& [key, v] : {std::pair<const char*, std::string>{"location", location}, {"offset", offset}, {"length", length}})
        t.message(13, [&](pbw& e) {
          e.bytes(1, key);
          e.bytes(2, v);
        });
      t.uint64(14, 1);
    });
  }
  void value(std::uint32_t field, const std::string& name, const std::vector<std::int64_t>& dims, std::uint64_t elem = 1) {
    pbw{body}.message(field, [&](pbw& v) {
      v.bytes(1, name);
      v.message(2, [&](pbw& type) {
        type.message(1, [&](pbw& t) {
          t.uint64(1, elem);
          t.message(2, [&](pbw& s) {
            for (auto d : dims)
              s.message(1, [&](pbw& dim) {
                if (d < 0) dim.bytes(2, "batch");
                else dim.uint64(1, std::uint64_t(d));
              });
          });
        });
      });
    });
  }
  void input(const std::vector<std::int64_t>& dims, std::uint64_t elem = 1) { value(11, "x", dims, elem); }
  void output(const std::string& name) { value(12, name, {-1}); }
  std::vector<std::uint8_t> model(std::uint64_t opset = 17) const {
    std::string m;
    pbw w{m};
    w.uint64(1, 8);
    w.message(8, [&](pbw& o) {
      o.bytes(1, "");
      o.uint64(2, opset);
    });
    w.bytes(7, body);
    return {m.begin(), m.end()};
  }
};

keras::detail::embedded_model import_onnx(const onnx_graph& g, std::uint64_t opset = 17) {
  const auto bytes = g.model(opset);
  return keras::detail::imported_model(bytes, "g.onnx");
}

std::string kinds(const keras::detail::embedded_model& m) {
  std::string s;
  for (const auto& l : m.layers) s += (s.empty() ? "" : " ") + l.kind + (l.activation != "linear" ? "(" + l.activation + ")" : "");
  return s;
}

}  // namespace

TEST_CASE("import_header, ONNX: kernels in Keras's layout, the input channels last, a Flatten's rows in the network's order") {
  onnx_graph g;
  g.input({-1, 2, 3, 3});
  g.init("w", {4, 2, 2, 2});  // [out, in, kh, kw]: w[o][c][y][x] = ((o * 2 + c) * 2 + y) * 2 + x
  g.init("b", {4});
  g.node("Conv", {"x", "w", "b"}, "conv", {{"pads", {0, 0, 1, 1}}});  // bottom and right: SAME for a 2x2 kernel
  g.init("dw", {8, 1, 1, 1});                                           // depthwise, multiplier 2
  g.node("Conv", {"conv", "dw"}, "depthwise", {{"group", {4}}});
  g.node("Relu", {"depthwise"}, "relu");
  g.node("Flatten", {"relu"}, "flat");
  g.init("fc", {72, 1});  // rows in ONNX's order: (c * 3 + h) * 3 + w
  g.node("MatMul", {"flat", "fc"}, "dense");
  g.output("dense");
  const auto m = import_onnx(g);
  CHECK(m.framework == "ONNX");
  CHECK(m.input == std::vector<std::size_t>{3, 3, 2});
  CHECK(m.channels_first_input == std::vector<std::size_t>{2, 3, 3});
  CHECK(m.channels_first_output.empty());
  CHECK(kinds(m) == "Conv2D DepthwiseConv2D(relu) Flatten Dense");
  const auto& conv = m.layers[0];
  CHECK(conv.padding == "same");
  REQUIRE(conv.weights[0].shape == std::vector<std::size_t>{2, 2, 2, 4});
  for (std::size_t o = 0; o < 4; ++o)
    for (std::size_t c = 0; c < 2; ++c)
      for (std::size_t y = 0; y < 2; ++y)
        for (std::size_t x = 0; x < 2; ++x) CHECK(conv.weights[0].values[((y * 2 + x) * 2 + c) * 4 + o] == double(((o * 2 + c) * 2 + y) * 2 + x));
  const auto& depthwise = m.layers[1];
  CHECK(depthwise.units == 2);
  REQUIRE(depthwise.weights[0].shape == std::vector<std::size_t>{1, 1, 4, 2});
  for (std::size_t k = 0; k < 8; ++k) CHECK(depthwise.weights[0].values[k] == double(k));  // output c * 2 + j at [c][j]
  // The network's row (h * 3 + w) * 8 + c holds ONNX's row (c * 3 + h) * 3 + w.
  const auto& dense = m.layers[3];
  REQUIRE(dense.weights[0].values.size() == 72);
  for (std::size_t h = 0; h < 3; ++h)
    for (std::size_t w = 0; w < 3; ++w)
      for (std::size_t c = 0; c < 8; ++c) CHECK(dense.weights[0].values[(h * 3 + w) * 8 + c] == double((c * 3 + h) * 3 + w));
}

TEST_CASE("import_header, ONNX: a node no output of the graph depends on is left out") {
  onnx_graph g;
  g.input({-1, 2, 3, 3});
  g.init("w", {4, 2, 1, 1});
  g.node("Conv", {"x", "w"}, "conv");
  g.node("Sigmoid", {"conv"}, "unread");         // nothing reads it
  g.node("NotAnOp", {"unread"}, "unread_too");   // nor this, which has no embedded form
  g.node("Relu", {"conv"}, "y");
  g.output("y");
  const auto m = import_onnx(g);
  CHECK(kinds(m) == "Conv2D(relu)");  // the convolution's one reader now: the activation taken in
  // A node the output depends on through a dead one's sibling output stays.
  onnx_graph kept;
  kept.input({-1, 4});
  kept.init("fc", {4, 3});
  kept.node("MatMul", {"x", "fc"}, "dense");
  kept.node("Tanh", {"dense"}, "unused");
  kept.node("Sigmoid", {"dense"}, "y");
  kept.output("y");
  CHECK(kinds(import_onnx(kept)) == "Dense(sigmoid)");
  // A needed node of no embedded form is still refused, by name.
  onnx_graph refused;
  refused.input({-1, 4});
  refused.node("NotAnOp", {"x"}, "y");
  refused.output("y");
  CHECK_THROWS_WITH(import_onnx(refused), Catch::Contains("node y (NotAnOp) has no embedded form"));
}

TEST_CASE("import_header, ONNX: a Transpose of an example's axes made a Permute of the network's channels-last axes") {
  // ONNX's [C, H, W] = [2, 3, 4] is the network's [H, W, C]. perm 0, 1, 3, 2 gives ONNX's
  // [C, W, H], held as [W, H, C]: the network's axes 2, 1, 3; perm 0, 2, 3, 1 gives [H, W, C],
  // which the graph reads as [C', H', W'] and the network holds as [W, C, H]: axes 2, 3, 1.
  const std::pair<std::vector<std::int64_t>, std::vector<std::size_t>> cases[] = {{{0, 1, 3, 2}, {2, 1, 3}}, {{0, 2, 3, 1}, {2, 3, 1}}, {{0, 3, 1, 2}, {3, 1, 2}}};
  for (const auto& [perm, order] : cases) {
    onnx_graph g;
    g.input({-1, 2, 3, 4});
    g.node("Transpose", {"x"}, "t", {{"perm", perm}});
    g.node("Flatten", {"t"}, "flat");
    g.init("fc", {24, 1});
    g.node("MatMul", {"flat", "fc"}, "dense");
    g.output("dense");
    const auto m = import_onnx(g);
    REQUIRE(kinds(m) == "Permute Flatten Dense");
    CHECK(m.layers[0].permutation == order);
    // The Flatten reads the transposed extents: ONNX's row of the transposed [C', H', W'] is the
    // network's row of [H', W', C'] (the Dense's rows permuted so).
    std::size_t extents[3];
    for (std::size_t a = 0; a < 3; ++a) extents[a] = std::size_t(std::vector<std::int64_t>{2, 3, 4}[std::size_t(perm[a + 1]) - 1]);
    const auto& dense = m.layers[2];
    for (std::size_t h = 0; h < extents[1]; ++h)
      for (std::size_t w = 0; w < extents[2]; ++w)
        for (std::size_t c = 0; c < extents[0]; ++c)
          CHECK(dense.weights[0].values[(h * extents[2] + w) * extents[0] + c] == double((c * extents[1] + h) * extents[2] + w));
  }
  // The identity adds nothing; a [N, F] input's only order is its own.
  onnx_graph same;
  same.input({-1, 2, 3, 4});
  same.node("Transpose", {"x"}, "t", {{"perm", {0, 1, 2, 3}}});
  same.node("Relu", {"t"}, "y");
  same.output("y");
  CHECK(kinds(import_onnx(same)) == "Activation(relu)");
  onnx_graph batch;
  batch.input({-1, 2, 3, 4});
  batch.node("Transpose", {"x"}, "t", {{"perm", {1, 0, 2, 3}}});
  batch.output("t");
  CHECK_THROWS_WITH(import_onnx(batch), Catch::Contains("node t (Transpose) transposes other than the axes of an example [C, H, W] or [T, F] (perm 0 first)"));
}

TEST_CASE("import_header, ONNX: pads made SAME or ZeroPadding2D, scalars made one Rescaling, Gemm's alpha and beta folded") {
  onnx_graph g;
  g.input({-1, 1, 5, 5});
  g.init("two", {}, {2.f});
  g.init("one", {}, {1.f});
  g.node("Mul", {"x", "two"}, "scaled");
  g.node("Sub", {"scaled", "one"}, "shifted");
  g.init("w", {1, 1, 3, 3});
  g.node("Conv", {"shifted", "w"}, "conv", {{"pads", {2, 0, 0, 1}}});  // neither none nor SAME
  // The conv's 5 x 4, pooled by 3 x 3 windows of stride 2: TensorFlow's SAME pads 1 and 1 rows, 0 and 1 columns.
  g.node("MaxPool", {"conv"}, "pool", {{"kernel_shape", {3, 3}}, {"strides", {2, 2}}, {"pads", {1, 0, 1, 1}}});
  g.node("GlobalAveragePool", {"pool"}, "gap");
  g.node("Flatten", {"gap"}, "flat");
  g.init("fc", {3, 1}, {1.f, 2.f, 3.f});  // transB: [out, in]
  g.init("bias", {3}, {1.f, 1.f, 1.f});
  g.node("Gemm", {"flat", "fc", "bias"}, "gemm", {{"transB", {1}}}, {{"alpha", 0.5f}, {"beta", 3.f}});
  g.output("gemm");
  const auto m = import_onnx(g);
  CHECK(kinds(m) == "Rescaling ZeroPadding2D Conv2D MaxPooling2D GlobalAveragePooling2D Dense");
  CHECK(m.layers[0].scale == 2);
  CHECK(m.layers[0].offset == -1);
  CHECK(m.layers[1].pads == std::array<std::size_t, 4>{2, 0, 0, 1});
  CHECK(m.layers[2].padding == "valid");
  CHECK(m.layers[3].padding == "same");
  CHECK(m.layers[5].weights[0].values == std::vector<double>{0.5, 1.0, 1.5});
  CHECK(m.layers[5].weights[1].values == std::vector<double>{3.0, 3.0, 3.0});
}

TEST_CASE("import_header, ONNX: branches joined by Add, Mul and Concat, an activation fused only where nothing else reads its layer; ConvTranspose") {
  onnx_graph g;
  g.input({-1, 2, 4, 4});
  g.init("w", {2, 2, 1, 1});
  g.node("Conv", {"x", "w"}, "conv");
  g.node("Relu", {"conv"}, "relu");          // conv is read again by sum: a layer of its own
  g.node("Add", {"relu", "conv"}, "sum");    // layer 3
  g.node("Conv", {"sum", "w"}, "conv2");     // 4
  g.node("Sigmoid", {"conv2"}, "gate");      // fused into conv2: nothing else reads it
  g.node("Mul", {"gate", "x"}, "gated");     // 5: reads the input
  g.node("Concat", {"gated", "sum"}, "rows", {{"axis", {2}}});  // ONNX's H: the network's axis 1
  g.node("Concat", {"rows", "rows"}, "both", {{"axis", {-3}}});  // the channels: the last axis
  g.output("both");
  const auto m = import_onnx(g);
  CHECK(kinds(m) == "Conv2D Activation(relu) Add Conv2D(sigmoid) Multiply Concatenate Concatenate");
  using inputs = std::vector<std::size_t>;
  CHECK(m.layers[1].inputs == inputs{1});
  CHECK(m.layers[2].inputs == inputs{2, 1});
  CHECK(m.layers[4].inputs == inputs{4, 0});
  CHECK(m.layers[5].inputs == inputs{5, 3});
  CHECK(m.layers[5].axis == 1);
  CHECK(m.layers[6].inputs == inputs{6, 6});
  CHECK(m.layers[6].axis == -1);
  CHECK(m.channels_first_output == std::vector<std::size_t>{4, 8, 4});
  {
    // ConvTranspose: Keras's [kh, kw, out, in] from ONNX's [in, out, kh, kw]; pads 1 of a 3x3
    // window of stride 1 are TensorFlow's SAME; PyTorch's padding 1 with output_padding 1 at
    // stride 2 crops a row more at the start than SAME does.
    onnx_graph t;
    t.input({-1, 2, 3, 3});
    std::vector<float> w(2 * 4 * 3 * 3);
    for (std::size_t i = 0; i < w.size(); ++i) w[i] = float(i);
    t.init("w", {2, 4, 3, 3}, w);
    t.node("ConvTranspose", {"x", "w"}, "up", {{"pads", {1, 1, 1, 1}}});
    t.output("up");
    const auto tm = import_onnx(t);
    REQUIRE(kinds(tm) == "Conv2DTranspose");
    CHECK(tm.layers[0].padding == "same");
    CHECK(tm.layers[0].units == 4);
    REQUIRE(tm.layers[0].weights[0].shape == std::vector<std::size_t>{3, 3, 4, 2});
    for (std::size_t c = 0; c < 2; ++c)
      for (std::size_t o = 0; o < 4; ++o)
        for (std::size_t k = 0; k < 9; ++k) CHECK(tm.layers[0].weights[0].values[(k * 4 + o) * 2 + c] == double((c * 4 + o) * 9 + k));
    CHECK(tm.channels_first_output == std::vector<std::size_t>{4, 3, 3});
    onnx_graph shifted;
    shifted.input({-1, 2, 3, 3});
    shifted.init("w", {2, 4, 3, 3});
    shifted.node("ConvTranspose", {"x", "w"}, "up", {{"pads", {1, 1, 1, 1}}, {"strides", {2, 2}}, {"output_padding", {1, 1}}});
    shifted.output("up");
    CHECK_THROWS_WITH(import_onnx(shifted), Catch::Contains("node up (ConvTranspose) crops its output by 1 and 0 (its pads, less output_padding at the end)"));
  }
  // The header: a Model whose nodes name what they read.
  const std::string h = keras::detail::embedded_header_text(m, {});
  CHECK_THAT(h, Catch::Contains("ctflow::embedded::Model<"));
  CHECK_THAT(h, Catch::Contains("ctflow::embedded::Node<ctflow::embedded::Add, 2, 1>"));
  CHECK_THAT(h, Catch::Contains("ctflow::embedded::Node<ctflow::embedded::Concatenate<1>, 5, 3>"));
}

namespace {

/// A recurrent node as PyTorch's exporter writes one of batch_first=True over x [N, 3, 2], 2
/// units: its zero initial state a ConstantOfShape of [1, N, 2] from x's Shape, x transposed to
/// [T, N, F], the node (W, R and B counting 0, 1, 2, ...), then what leads to `output`: by
/// default its last step (Y squeezed, transposed back and its step -1 gathered).
struct recurrent_graph {
  std::string op = "LSTM";
  onnx_graph::attributes ints = {};
  onnx_graph::texts strings = {};
  std::vector<std::int64_t> perm = {1, 0, 2};
  std::string initial = "h0";  // the initial state: the ConstantOfShape's, or a constant's ("ones")
  float step = -1;             // the step gathered
  std::string output = "last";

  onnx_graph graph() const {
    const std::int64_t gates = op == "LSTM" ? 8 : 6;
    onnx_graph g;
    g.input({-1, 3, 2});
    g.node("Shape", {"x"}, "shape");
    g.init("zero", {}, {0.f}, true);
    g.node("Gather", {"shape", "zero"}, "n", {{"axis", {0}}});
    g.init("axes0", {1}, {0.f}, true);
    g.node("Unsqueeze", {"n", "axes0"}, "n1");
    g.init("one", {1}, {1.f}, true);
    g.init("units", {1}, {2.f}, true);
    g.node("Concat", {"one", "n1", "units"}, "state_shape", {{"axis", {0}}});
    g.node("ConstantOfShape", {"state_shape"}, "h0");
    g.init("ones", {1, 1, 2}, {1.f, 1.f});
    g.node("Transpose", {"x"}, "xt", {{"perm", perm}});
    g.init("W", {1, gates, 2}), g.init("R", {1, gates, 2}), g.init("B", {1, 2 * gates});
    std::vector<std::string> in = {"xt", "W", "R", "B", "", initial};
    std::vector<std::string> out = {"Y", "Y_h"};
    if (op == "LSTM") in.push_back("h0"), out.push_back("Y_c");
    onnx_graph::attributes a = ints;
    a.push_back({"hidden_size", {2}});
    g.outputs(op, in, out, a, {}, strings);
    // Only what leads to the output reads the node's outputs.
    if (output == "state") {
      g.init("minus_one", {}, {-1.f}, true);
      g.node("Gather", {"Y_h", "minus_one"}, "state", {{"axis", {0}}});
    } else if (output != "Y_c") {
      g.init("axes1", {1}, {1.f}, true);
      g.node("Squeeze", {"Y", "axes1"}, "ys");
      if (output == "relu_of_time_first") {
        g.node("Relu", {"ys"}, "relu_of_time_first");
      } else if (output != "ys") {
        g.node("Transpose", {"ys"}, "yb", {{"perm", {1, 0, 2}}});
        g.init("step", {}, {step}, true);
        if (output == "last") g.node("Gather", {"yb", "step"}, "last", {{"axis", {1}}});
      }
    }
    g.output(output);
    return g;
  }
};

}  // namespace

TEST_CASE("import_header, ONNX: LSTM and GRU as PyTorch's exporter writes them, made Keras's layers over [N, T, F]") {
  // The LSTM's last step: Keras's LSTM of 2 units without return_sequences; its gates [i, o, f, c]
  // reordered to Keras's [i, f, c, o] (Keras's gate k is ONNX's of[k]), W [1, 8, 2] made the
  // kernel [2, 8], the two biases summed.
  const auto m = import_onnx(recurrent_graph{}.graph());
  REQUIRE(kinds(m) == "LSTM(tanh)");
  CHECK(m.input == std::vector<std::size_t>{3, 2});
  CHECK(m.channels_first_input.empty());
  const auto& l = m.layers[0];
  CHECK(l.units == 2);
  CHECK(l.recurrent_activation == "sigmoid");
  CHECK_FALSE(l.return_sequences);
  REQUIRE(l.weights.size() == 3);
  REQUIRE(l.weights[0].shape == std::vector<std::size_t>{2, 8});
  REQUIRE(l.weights[1].shape == std::vector<std::size_t>{2, 8});
  REQUIRE(l.weights[2].shape == std::vector<std::size_t>{8});
  const std::size_t of[4] = {0, 2, 3, 1};
  for (std::size_t k = 0; k < 4; ++k)
    for (std::size_t j = 0; j < 2; ++j) {
      for (std::size_t i = 0; i < 2; ++i) {
        CHECK(l.weights[0].values[i * 8 + k * 2 + j] == double((of[k] * 2 + j) * 2 + i));
        CHECK(l.weights[1].values[i * 8 + k * 2 + j] == double((of[k] * 2 + j) * 2 + i));
      }
      CHECK(l.weights[2].values[k * 2 + j] == double(2 * (of[k] * 2 + j) + 8));
    }
  // Every step: return_sequences, the network's output [N, 3, 2].
  recurrent_graph every;
  every.output = "yb";
  const auto steps = import_onnx(every.graph());
  REQUIRE(kinds(steps) == "LSTM(tanh)");
  CHECK(steps.layers[0].return_sequences);
  // The GRU's last state (Y_h's direction 0): gates [z, r, h] as Keras's; linear_before_reset is
  // Keras's reset_after, its bias [input; recurrent]; without it, the two summed.
  recurrent_graph gru{.op = "GRU", .ints = {{"linear_before_reset", {1}}}, .strings = {{"activations", {"Sigmoid", "Relu"}}}};
  gru.output = "state";
  const auto gm = import_onnx(gru.graph());
  REQUIRE(kinds(gm) == "GRU(relu)");
  const auto& g = gm.layers[0];
  CHECK(g.reset_after);
  CHECK_FALSE(g.return_sequences);
  REQUIRE(g.weights.size() == 3);
  REQUIRE(g.weights[2].shape == std::vector<std::size_t>{2, 6});
  for (std::size_t i = 0; i < 12; ++i) CHECK(g.weights[2].values[i] == double(i));
  CHECK(g.weights[0].values[1 * 6 + 2 * 2 + 1] == double((2 * 2 + 1) * 2 + 1));
  gru.ints = {};
  const auto before = import_onnx(gru.graph());
  REQUIRE(before.layers[0].weights[2].shape == std::vector<std::size_t>{6});
  CHECK_FALSE(before.layers[0].reset_after);
  for (std::size_t i = 0; i < 6; ++i) CHECK(before.layers[0].weights[2].values[i] == double(2 * i + 6));
  // Reverse, its last state (Y_h): Keras's go_backwards, the weights as forward's.
  recurrent_graph backwards{.op = "GRU", .strings = {{"direction", {"reverse"}}}};
  backwards.output = "state";
  const auto bm = import_onnx(backwards.graph());
  REQUIRE(kinds(bm) == "GRU(tanh)");
  CHECK(bm.layers[0].go_backwards);
  CHECK_FALSE(bm.layers[0].return_sequences);
  CHECK(bm.layers[0].weights[0].values == before.layers[0].weights[0].values);
  CHECK_FALSE(gm.layers[0].go_backwards);
  CHECK_THAT(keras::detail::embedded_header_text(bm, {}), Catch::Contains(".go_backwards = true"));
  // The header: Keras's layers with their flags.
  const std::string h = keras::detail::embedded_header_text(m, {});
  CHECK_THAT(h, Catch::Contains("ctflow::embedded::LSTM<2, ctflow::keras::activations::tanh, ctflow::keras::activations::sigmoid, "
                                "ctflow::embedded::recurrence{.return_sequences = false, .go_backwards = false}"));

  // What the embedded layers cannot do, each named.
  const auto refused = [](const recurrent_graph& r, const std::string& message) {
    INFO(message);
    CHECK_THROWS_WITH(import_onnx(r.graph()), Catch::Contains(message));
    CHECK_THROWS_AS(import_onnx(r.graph()), io_error);
  };
  refused({.strings = {{"direction", {"bidirectional"}}}}, "node Y (LSTM) runs bidirectional: the importer takes forward and reverse recurrent nodes");
  refused({.strings = {{"direction", {"reverse"}}}}, "node Y (LSTM) runs reverse and gives Y: the embedded layer gives a reverse node's steps in the order it ran them");
  refused({.ints = {{"layout", {1}}}}, "node Y (LSTM) has layout 1");
  refused({.strings = {{"activations", {"Sigmoid", "Tanh", "Relu"}}}}, "has the activations Tanh and Relu for its cell's input and output");
  refused({.strings = {{"activations", {"HardSigmoid", "Tanh", "Tanh"}}}}, "has the activation HardSigmoid: the importer takes Sigmoid, Tanh and Relu");
  // The sequence's own axes swapped ([N, F, T]: a Permute) cannot be what the LSTM reads.
  refused({.perm = {0, 2, 1}}, "node Y (LSTM) reads [N, T, F] as ONNX's [T, N, F]");
  refused({.perm = {2, 1, 0}}, "node xt (Transpose) transposes other than the axes of an example");
  refused({.initial = "ones"}, "starts from the state ones, which is not zeros");
  refused({.step = 1}, "node last (Gather) gathers other than the last step");
  refused({.output = "Y_c"}, "gives its cell state (Y_c)");
  refused({.output = "relu_of_time_first"}, "node relu_of_time_first (Relu) reads a recurrent node's sequence in ONNX's layout");
  refused({.output = "ys"}, "the graph ends with a recurrent node's sequence in ONNX's layout");
  {
    onnx_graph g;  // a shape computation's Unsqueeze applied to the data
    g.input({-1, 4});
    g.init("axes", {1}, {1.f}, true);
    g.node("Unsqueeze", {"x", "axes"}, "y");
    g.output("y");
    const auto message = "node y (Unsqueeze) reads the graph's data";
    CHECK_THROWS_WITH(import_onnx(g), Catch::Contains(message));
  }
  // As PyTorch's default exporter writes it: the zero state an Expand of 0 to [1, N, 2] (the
  // input's Shape, its first extent), Y transposed to [T, N, 1, F] and reshaped to [T, N, F] by
  // a shape computed from its own Shape (T, N, and 1 * F), then batch first and its last step.
  const auto dynamo = [](std::vector<float> target) {
    onnx_graph g;
    g.input({-1, 3, 2});
    g.node("Shape", {"x"}, "n", {{"end", {1}}});
    g.init("one", {1}, {1.f}, true), g.init("two", {1}, {2.f}, true), g.init("three", {1}, {3.f}, true), g.init("four", {1}, {4.f}, true);
    g.init("zero1", {1}, {0.f}, true), g.init("nought", {}, {0.f});
    g.node("Concat", {"one", "n", "two"}, "state_shape", {{"axis", {0}}});
    g.node("Expand", {"nought", "state_shape"}, "h0");
    g.node("Transpose", {"x"}, "xt", {{"perm", {1, 0, 2}}});
    g.init("W", {1, 6, 2}), g.init("R", {1, 6, 2});
    g.outputs("GRU", {"xt", "W", "R", "", "", "h0"}, {"Y"}, {{"hidden_size", {2}}, {"linear_before_reset", {1}}});
    g.node("Transpose", {"Y"}, "yt", {{"perm", {0, 2, 1, 3}}});
    if (target.empty()) {
      g.node("Shape", {"yt"}, "s");
      g.node("Slice", {"s", "zero1", "two"}, "tn");
      g.node("Slice", {"s", "two", "three"}, "d1");
      g.node("Slice", {"s", "three", "four"}, "d2");
      g.node("Mul", {"d1", "d2"}, "f");
      g.node("Concat", {"tn", "f"}, "target", {{"axis", {0}}});
    } else {
      g.init("target", {std::int64_t(target.size())}, target, true);
    }
    g.node("Reshape", {"yt", "target"}, "ys", {{"allowzero", {1}}});
    g.node("Transpose", {"ys"}, "yb", {{"perm", {1, 0, 2}}});
    g.init("last", {}, {-1.f}, true);
    g.node("Gather", {"yb", "last"}, "y", {{"axis", {1}}});
    g.output("y");
    return g;
  };
  for (const auto& target : {std::vector<float>{}, std::vector<float>{3, -1, 2}}) {
    INFO(target.size());
    const auto d = import_onnx(dynamo(target));
    REQUIRE(kinds(d) == "GRU(tanh)");
    CHECK_FALSE(d.layers[0].return_sequences);
    CHECK(d.layers[0].weights.size() == 2);  // no B: no bias
  }
  CHECK_THROWS_WITH(import_onnx(dynamo({3, -1})), Catch::Contains("node ys (Reshape) reshapes to a shape other than [N, features], or than [T, N, F]"));
  CHECK_THROWS_WITH(import_onnx(dynamo({-1, 3, 2})), Catch::Contains("node ys (Reshape) reshapes to a shape other than"));
}

TEST_CASE("import_header, ONNX: weights in an external file beside the model, read at their offset; a file outside its directory or of another length refused") {
  // ext.bin: 16 bytes before the kernel's 8 floats.
  std::vector<float> stored(12);
  for (std::size_t i = 0; i < stored.size(); ++i) stored[i] = 0.5f * float(i) - 1.f;
  {
    std::FILE* f = std::fopen(scratch("ext.bin").c_str(), "wb");
    REQUIRE(f);
    std::fwrite(stored.data(), sizeof(float), stored.size(), f);
    std::fclose(f);
  }
  const auto graph = [](const std::string& location, const std::string& length) {
    onnx_graph g;
    g.input({-1, 4});
    g.external("w", {4, 2}, location, "16", length);
    g.node("MatMul", {"x", "w"}, "y");
    g.output("y");
    return g.model();
  };
  const auto bytes = graph("ext.bin", "32");
  const auto m = keras::detail::imported_model(bytes, scratch("g.onnx"));
  REQUIRE(kinds(m) == "Dense");
  REQUIRE(m.layers[0].weights[0].values.size() == 8);
  for (std::size_t i = 0; i < 8; ++i) CHECK(m.layers[0].weights[0].values[i] == double(stored[i + 4]));
  const auto refused = [](const std::vector<std::uint8_t>& b, const std::string& message) {
    INFO(message);
    CHECK_THROWS_WITH(keras::detail::imported_model(b, scratch("g.onnx")), Catch::Contains(message));
    CHECK_THROWS_AS(keras::detail::imported_model(b, scratch("g.onnx")), io_error);
  };
  refused(graph("../ext.bin", "32"), "tensor w names the external file ../ext.bin, which is not in the model's directory");
  refused(graph("/etc/passwd", "32"), "which is not in the model's directory");
  refused(graph("ext.bin", "28"), "tensor w takes 28 bytes of");
  refused(graph("ext.bin", "64"), "tensor w takes 64 bytes at 16 of");
  refused(graph("missing.bin", "32"), "tensor w's external file");
  refused(graph("ext.bin", "-4"), "tensor w has the external length \"-4\"");
}

TEST_CASE("import_header, ONNX: what has no embedded form is an io_error naming the node and what it has") {
  const auto refused = [](const onnx_graph& g, const std::string& message, std::uint64_t opset = 17) {
    INFO(message);
    CHECK_THROWS_WITH(import_onnx(g, opset), Catch::Contains(message));
    CHECK_THROWS_AS(import_onnx(g, opset), io_error);
  };
  const auto image = [](const std::string& op, const onnx_graph::attributes& a = {}, std::vector<std::int64_t> dims = {-1, 4, 4, 4}) {
    onnx_graph g;
    g.input(dims);
    g.init("w", {4, 2, 1, 1});
    g.node(op, op == "Conv" ? std::vector<std::string>{"x", "w"} : std::vector<std::string>{"x"}, "y", a);
    g.output("y");
    return g;
  };
  refused(image("Conv", {{"group", {2}}}), "node y (Conv) has group 2 over 4 channels");
  refused(image("MaxPool", {{"kernel_shape", {2, 2}}, {"pads", {1, 0, 0, 0}}}), "node y (MaxPool) has the pads [1,0,0,0], neither none nor TensorFlow's SAME");
  refused(image("MaxPool", {{"kernel_shape", {3, 3}}, {"ceil_mode", {1}}, {"strides", {2, 2}}}), "has ceil_mode: the embedded poolings round down");
  refused(image("AveragePool", {{"kernel_shape", {3, 3}}, {"pads", {1, 1, 1, 1}}, {"count_include_pad", {1}}}), "counts its pads");
  refused(image("Softmax", {{"axis", {-1}}}), "node y (Softmax) is over axis -1: the embedded softmax is over the channels");
  refused(image("ReduceMean", {{"axes", {1, 2}}}), "node y (ReduceMean) reduces axes other than H and W (2 and 3)");
  CHECK(kinds(import_onnx(image("ReduceMax", {{"axes", {-1, -2}}, {"keepdims", {0}}}))) == "GlobalMaxPooling2D");
  refused(image("LSTM"), "node y (LSTM) reads a tensor other than a sequence [T, N, F]");
  refused(image("Relu", {}, {-1, 4, 4, 4, 4}), "input x has 5 dimensions: the importer takes [N, C, H, W], [N, T, F] or [N, features]");
  refused(image("Conv", {}, {-1, 4, 4}), "node y (Conv) reads a sequence [N, T, F]: the importer takes one into element-wise nodes");
  refused(image("Relu"), "opset 9 of ai.onnx: the importer reads opsets 13 to 21", 9);
  {
    onnx_graph g;
    g.input({-1, 4}, 10);  // float16
    refused(g, "input x is of element type 10: the embedded networks import float32 models");
  }
  {
    onnx_graph g;
    g.input({-1, 2, 2, 2});
    g.node("Flatten", {"x"}, "flat");
    g.init("gamma", {8}), g.init("beta", {8}), g.init("mean", {8}), g.init("var", {8});
    g.node("BatchNormalization", {"flat", "gamma", "beta", "mean", "var"}, "bn");
    g.output("bn");
    refused(g, "node bn (BatchNormalization) follows a Flatten of channels-first data");
  }
  {
    onnx_graph g;
    g.input({-1, 4});
    g.init("w", {4, 2}, {}, false, true);
    g.node("MatMul", {"x", "w"}, "y");
    g.output("y");
    refused(g, "tensor w keeps its values in an external file");
  }
  {
    onnx_graph g;
    g.input({-1, 4});
    g.node("Relu", {"x"}, "y");
    g.node("Sigmoid", {"w"}, "z");  // no node gives w
    g.output("z");
    refused(g, "node z (Sigmoid) reads w, which neither the graph's input nor a node before it gives");
  }
  {
    onnx_graph g;
    g.input({-1, 4});
    g.node("Relu", {"x"}, "y");
    g.node("Div", {"x", "y"}, "z");
    g.output("z");
    refused(g, "node z (Div) reads 2 tensors of the graph: it takes one, first");
  }
  {
    onnx_graph g;
    g.input({-1, 2, 4, 4});
    g.node("MaxPool", {"x"}, "pool", {{"kernel_shape", {2, 2}}, {"strides", {2, 2}}});
    g.node("Concat", {"x", "pool"}, "joined", {{"axis", {1}}});
    g.output("joined");
    refused(g, "node joined (Concat) reads tensors of extents 2 4 4 and 2 2 2: they must agree off the joined axis");
  }
  {
    onnx_graph g;
    g.input({-1, 2, 4, 4});
    g.node("Concat", {"x", "x"}, "joined", {{"axis", {0}}});
    g.output("joined");
    refused(g, "node joined (Concat) joins along axis 0: the importer joins an axis other than the batch");
  }
  {
    onnx_graph g;
    g.input({-1, 4});
    g.init("lo", {}, {-1.f});
    g.init("hi", {}, {1.f});
    g.node("Clip", {"x", "lo", "hi"}, "y");
    g.output("y");
    refused(g, "node y (Clip) clips to [-1.000000, 1.000000]");
  }
  {
    onnx_graph g;
    g.input({-1, 2, 3, 4});
    g.init("shape", {3}, {0.f, 2.f, -1.f}, true);
    g.node("Reshape", {"x", "shape"}, "y");
    g.output("y");
    refused(g, "node y (Reshape) reshapes to a shape other than [N, features]");
  }
  {
    onnx_graph g;
    g.input({-1, 4});
    g.node("Relu", {"x"}, "y");
    g.output("x");
    refused(g, "the graph's output x is not the last node's that adds a layer: the network's output is its last layer's");
  }
  // A damaged file: every length checked against what remains.
  onnx_graph g;
  g.input({-1, 4});
  g.node("Relu", {"x"}, "y");
  g.output("y");
  auto bytes = g.model();
  bytes.resize(bytes.size() - 5);
  CHECK_THROWS_WITH(keras::detail::imported_model(bytes, "cut.onnx"), Catch::Contains("cut.onnx: ONNX model: malformed protobuf at offset"));
}

// keras::quantize as a user calls it: a model quantized on representative inputs, its int8
// network's outputs near the float model's, the header it exports, and what has no int8 form.
#include <ctflow/embedded/layers/quantized.hpp>
#include <ctflow/keras/quantize.hpp>

TEST_CASE("quantize: TensorFlow Lite's requantization, a multiplier and a shift per channel") {
  // x * m * 2^(shift - 31) against the real product, for multipliers below and above 1: within
  // half a step, and half a step of the doubling multiply's rounding carried through the shift
  // (TFLite rounds twice).
  for (const double real : {0.0007, 0.013, 0.4999, 0.75, 1.5, 3.2}) {
    std::int32_t m = 0, shift = 0;
    int e = 0;
    const double fraction = std::frexp(real, &e);
    m = std::int32_t(std::llround(fraction * double(1ll << 31))), shift = e;
    for (const std::int32_t x : {0, 1, -1, 77, -77, 1000, -1000, 123456, -123456, 9999999}) {
      const double exact = double(x) * real;
      INFO(real << " * " << x);
      CHECK(std::abs(double(embedded::int8_detail::requantize(x, m, shift)) - exact) <= 0.5 + 0.5 * std::ldexp(1.0, std::min(shift, 0)) + 1e-9);
    }
  }
  CHECK(embedded::int8_detail::requantize(5, 1 << 30, 0) == 3);    // 2.5 rounds up
  CHECK(embedded::int8_detail::requantize(-5, 1 << 30, 0) == -2);  // -2.5 rounds up too, as TFLite's shift does
  CHECK(embedded::int8_detail::saturate(300, -128, 127) == 127);
}

TEST_CASE("quantize: an int8 network near the float model, a BatchNormalization folded, activations as tables, softmax on the dequantized output") {
  keras::backend::clear_session();  // the layers' automatic names (conv2d, dense, ...) from the first
  using Model = keras::Sequential<keras::Input<float, Shape<6, 6, 2>>, layers::Rescaling, layers::Conv2D<4, 3, layers::same>, layers::BatchNormalization,
                                  layers::MaxPooling2D<2>, layers::Activation<activations::sigmoid>, layers::Permute<3, 1, 2>, layers::Flatten,
                                  layers::Dense<5, activations::relu>, layers::Dense<3>, layers::Softmax<>>;
  keras::utils::set_random_seed(3);
  Model model({}, {.scale = 0.5}, {}, {}, {}, {}, {}, {}, {}, {}, {});
  auto& bn = model.get_layer<2>().layer;
  bn.moving_mean.assign(random_uniform<float, Shape<4>>(1, -0.2, 0.2));
  bn.moving_variance.assign(random_uniform<float, Shape<4>>(2, 0.5, 1.5));
  const auto x = random_uniform<float, Shape<dyn, 6, 6, 2>>(4, 0.0, 2.0, {64, 6, 6, 2});
  const auto q = keras::quantize(model, x);
  std::string kinds;
  for (const auto& l : q.network.layers) kinds += (kinds.empty() ? "" : " ") + l.kind;
  CHECK(kinds == "Rescaling Quantize QuantizedConv2D QuantizedMaxPooling2D Lookup Permute Flatten QuantizedDense QuantizedDense Dequantize Activation");
  CHECK(q.input_size == 72);
  CHECK(q.output_size == 3);
  const auto expected = model.predict(x, {.batch_size = 64, .verbose = 0});
  const std::vector<float> y = q.predict(x.data(), 64);
  REQUIRE(y.size() == expected.size());
  double most = 0;
  for (std::size_t i = 0; i < y.size(); ++i) most = std::max(most, std::abs(double(y[i]) - double(expected.data()[i])));
  CHECK(most < 0.05);  // probabilities, a few steps of int8 away at most
  // Each weight int8 per output channel, its largest magnitude 127.
  const auto& kernel = q.network.layers[2].weights[0];
  CHECK(kernel.type == "std::int8_t");
  for (std::size_t o = 0; o < 4; ++o) {
    double largest = 0;
    for (std::size_t i = o; i < kernel.values.size(); i += 4) largest = std::max(largest, std::abs(kernel.values[i]));
    CHECK(largest == 127);
  }
  const std::string path = scratch("int8.hpp");
  keras::export_header(q, path, {.name_space = "int8_net"}, slice<Shape<2, 6, 6, 2>>(x, {0, 0, 0, 0}));
  const std::string h = slurp(path);
  CHECK(h.find("ctflow::embedded::QuantizedConv2D<false, 4, ctflow::embedded::window{.kh = 3, .kw = 3, .sh = 1, .sw = 1, .dh = 1, .dw = 1, .padding = ctflow::nn::SAME}") !=
        std::string::npos);
  CHECK(h.find("alignas(64) inline constexpr std::int8_t conv2d_kernel[72] = {") != std::string::npos);
  CHECK(h.find("ctflow::embedded::Permute<3, 1, 2>,\n    ctflow::embedded::Flatten,") != std::string::npos);
  CHECK(h.find("inline constexpr std::size_t test_count = 2;") != std::string::npos);
  CHECK(array_values(h, "test_outputs") == std::vector<float>(y.begin(), y.begin() + 6));
}

TEST_CASE("quantize: a layer with no int8 form is a value_error naming it") {
  keras::backend::clear_session();  // the layers' automatic names (conv2d, dense, ...) from the first
  keras::Sequential<keras::Input<float, Shape<4>>, layers::Dense<3, activations::tanh>> fused;
  const auto x = random_uniform<float, Shape<dyn, 4>>(1, -1, 1, {8, 4});
  CHECK_THROWS_WITH(keras::quantize(fused, x),
                    Catch::Contains("(Dense) has the activation tanh: a fused activation of int8 is linear, relu or relu6 (give others a layer of their own)"));
  keras::Sequential<keras::Input<float, Shape<4>>, layers::Dense<3, activations::relu>, layers::BatchNormalization> alone;
  CHECK_THROWS_WITH(keras::quantize(alone, x), Catch::Contains("(BatchNormalization) does not follow a Dense or convolution without activation"));
  CHECK_THROWS_WITH(keras::quantize(alone, Tensor<float, Shape<dyn, 4>>({0, 4})), "ctflow::keras::quantize: the representative dataset is empty");
}

TEST_CASE("quantize: the cpu device's int8 kernels equal reference's loops, bit for bit, over tails, chunks, padding and strides, a max pool fused") {
  namespace i8 = embedded::int8_detail;
  std::uint32_t state = 12345;
  const auto next = [&] { return state = state * 1664525u + 1013904223u; };
  const auto bytes = [&](std::size_t n) {
    std::vector<std::int8_t> v(n);
    for (auto& b : v) b = std::int8_t(next() >> 24);
    return v;
  };
  // Per-channel requantization as keras::quantize writes it: multipliers in [2^30, 2^31) and
  // right shifts; one layer with a left shift (a scale above 1), which the cpu device requantizes
  // one lane at a time.
  const auto layer = [&](std::size_t in, std::size_t out, bool left) {
    struct params {
      std::vector<std::int8_t> k;
      std::vector<std::int32_t> bias, m, s;
      std::int32_t in_zero, out_zero;
    } p{bytes(in * out), {}, {}, {}, std::int32_t(next() % 256) - 128, std::int32_t(next() % 256) - 128};
    for (std::size_t o = 0; o < out; ++o) {
      p.bias.push_back(std::int32_t(next() % 20001) - 10000);
      p.m.push_back(std::int32_t((1u << 30) + next() % (1u << 30)));
      p.s.push_back(left && o == 0 ? 1 : -std::int32_t(next() % 12));
    }
    return p;
  };
  for (const std::size_t in : {1, 7, 16, 33, 130})
    for (const std::size_t out : {1, 10, 16, 17, 70})
      for (const std::size_t rows : {1, 3, 6, 300}) {
        const auto p = layer(in, out, rows == 3);
        const bool relu = rows == 6;
        const i8::requant q{p.m.data(), p.s.data(), p.in_zero, p.out_zero, relu ? p.out_zero : -128, 127};
        const auto x = bytes(rows * in);
        std::vector<std::int8_t> want(rows * out), got(rows * out);
        i8::linear_kernel<reference>(p.k.data(), in, out, p.bias.data(), q).dense(x.data(), want.data(), rows);
        i8::linear_kernel<cpu>(p.k.data(), in, out, p.bias.data(), q).dense(x.data(), got.data(), rows);
        INFO("dense " << rows << " x " << in << " -> " << out);
        CHECK(got == want);
      }
  struct window {
    std::size_t batch, h, w, c, kh, kw, sh, sw, dh, dw, out;
    bool same;
  };
  for (const window& s : {window{1, 28, 28, 1, 3, 3, 1, 1, 1, 1, 32, false}, window{2, 13, 13, 5, 3, 3, 1, 1, 1, 1, 17, true},
                         window{1, 9, 11, 3, 5, 3, 2, 2, 1, 1, 8, true}, window{1, 10, 10, 4, 3, 3, 1, 1, 2, 2, 16, true},
                         window{3, 7, 6, 2, 1, 1, 1, 1, 1, 1, 3, false},
                         window{1, 13, 13, 32, 3, 3, 1, 1, 1, 1, 64, false}, window{2, 9, 8, 8, 3, 2, 2, 1, 1, 1, 20, true},
                         window{1, 8, 9, 3, 3, 3, 2, 1, 1, 2, 5, true}, window{2, 12, 12, 16, 3, 3, 2, 2, 2, 1, 33, true},
                         window{1, 7, 7, 6, 3, 3, 1, 1, 1, 1, 12, true}}) {
    const auto g = i8::window_over(s.batch, s.h, s.w, s.c, s.kh, s.kw, s.sh, s.sw, s.dh, s.dw, s.same);
    const std::size_t in = s.kh * s.kw * s.c;
    const auto p = layer(in, s.out, false);
    const i8::requant q{p.m.data(), p.s.data(), p.in_zero, p.out_zero, -128, 127};
    const auto x = bytes(s.batch * s.h * s.w * s.c);
    std::vector<std::int8_t> want(s.batch * g.oh * g.ow * s.out), got(want.size());
    i8::linear_kernel<reference>(p.k.data(), in, s.out, p.bias.data(), q, s.kh).conv(x.data(), want.data(), g);
    i8::linear_kernel<cpu>(p.k.data(), in, s.out, p.bias.data(), q, s.kh).conv(x.data(), got.data(), g);
    INFO("conv " << s.h << "x" << s.w << "x" << s.c << " window " << s.kh << "x" << s.kw << " -> " << s.out);
    CHECK(got == want);
    // With the 2x2 max pool after it, in one pass (odd extents drop their last row or column).
    if (g.oh < 2 || g.ow < 2) continue;
    i8::linear_kernel<cpu> fused(p.k.data(), in, s.out, p.bias.data(), q, s.kh);
    REQUIRE(fused.pools());
    std::vector<std::int8_t> pooled_want(s.batch * (g.oh / 2) * (g.ow / 2) * s.out), pooled_got(pooled_want.size());
    i8::pool2d(want.data(), pooled_want.data(), i8::window_over(s.batch, g.oh, g.ow, s.out, 2, 2, 2, 2, 1, 1, false), true);
    fused.conv_max_pool(x.data(), pooled_got.data(), g);
    CHECK(pooled_got == pooled_want);
    i8::linear_kernel<reference>(p.k.data(), in, s.out, p.bias.data(), q, s.kh).conv_max_pool(x.data(), pooled_got.data(), g);
    CHECK(pooled_got == pooled_want);
  }
}

TEST_CASE("quantize: an input quantized as std::lround rounds, half away from zero, saturated; a NaN is -128") {
  std::vector<float> x = {0.5f, -0.5f, 1.5f, -1.5f, 2.49999f, -2.5000002f, 0.49999997f, 126.5f, 127.5f, -128.5f, -129.5f, 1e9f, -1e9f, 3e-8f};
  for (int i = -600; i <= 600; ++i) x.push_back(float(i) * 0.25f + 0.001f * float(i % 7));
  const std::int32_t zero = -3;
  std::vector<std::int8_t> q(x.size());
  embedded::int8_detail::quantize(x.data(), q.data(), x.size(), 1.0f, zero);
  for (std::size_t i = 0; i < x.size(); ++i) {
    const long r = std::lround(std::min(std::max(double(x[i]), -1e6), 1e6)) + zero;
    INFO(x[i]);
    CHECK(q[i] == std::int8_t(std::min(127l, std::max(-128l, r))));
  }
  const float nan = std::nanf("");
  std::int8_t n = 0;
  embedded::int8_detail::quantize(&nan, &n, 1, 1.0f, zero);
  CHECK(n == -128);
}

TEST_CASE("quantize: int8 pooling is each window's max, or its in-bounds cells' mean rounded half away from zero") {
  namespace i8 = embedded::int8_detail;
  std::uint32_t state = 99;
  const auto next = [&] { return state = state * 1664525u + 1013904223u; };
  for (const std::size_t c : {1, 5, 16, 33})
    for (const bool same : {false, true})
      for (const bool max : {false, true}) {
        const auto g = i8::window_over(2, 7, 6, c, 3, 2, 2, 1, 1, 1, same);
        std::vector<std::int8_t> x(2 * 7 * 6 * c), y(2 * g.oh * g.ow * c);
        for (auto& v : x) v = std::int8_t(next() >> 24);
        i8::pool2d(x.data(), y.data(), g, max);
        for (std::size_t b = 0; b < 2; ++b)
          for (std::size_t oy = 0; oy < g.oh; ++oy)
            for (std::size_t ox = 0; ox < g.ow; ++ox)
              for (std::size_t ch = 0; ch < c; ++ch) {
                long most = -128, sum = 0, count = 0;
                for (std::size_t ky = 0; ky < 3; ++ky)
                  for (std::size_t kx = 0; kx < 2; ++kx) {
                    const long iy = long(oy * 2 + ky) - long(g.top), ix = long(ox + kx) - long(g.left);
                    if (iy < 0 || iy >= 7 || ix < 0 || ix >= 6) continue;
                    const long v = x[((b * 7 + std::size_t(iy)) * 6 + std::size_t(ix)) * c + ch];
                    most = std::max(most, v), sum += v, ++count;
                  }
                const long mean = long(std::lround(double(sum) / double(count)));
                INFO("c " << c << (same ? " same" : " valid") << (max ? " max" : " average") << " at " << b << "," << oy << "," << ox << "," << ch);
                CHECK(long(y[((b * g.oh + oy) * g.ow + ox) * c + ch]) == (max ? most : mean));
              }
      }
}
