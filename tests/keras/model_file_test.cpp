// The whole model file both ways: model.save writes a .keras archive (config, weights, compile
// config, the optimizer's variables) and keras::load_model reads it, or one Keras 3 wrote, and
// training continues where it stopped.
#include "keras_check.hpp"

#include <nlohmann/json.hpp>

#include <ctflow/detail/zip.hpp>

using namespace ctflow;
using keras_check::same_weights;
using keras_check::scratch;
namespace layers = keras::layers;
namespace activations = keras::activations;
namespace optimizers = keras::optimizers;

namespace {

using Input = keras::Input<float, Shape<12>>;
using Hidden = layers::Dense<8, activations::relu>;
/// The network of tests/keras/generate_archives.py.
using FileNet = keras::Sequential<Input, Hidden, layers::Dense<3>>;
/// The same but for its last layer.
using Other = keras::Sequential<Input, Hidden, layers::Dense<4>>;
using Loss = keras::losses::SparseCategoricalCrossentropy<>;

std::unique_ptr<FileNet> make_net() { return std::make_unique<FileNet>(Input{}, Hidden{.kernel_regularizer = keras::regularizers::L2(1e-3)}, layers::Dense<3>{}); }

struct batch {
  Tensor<float, Shape<dyn, 12>> x = random_uniform<float, Shape<dyn, 12>>(5, 0, 1, {32, 12});
  Tensor<std::int32_t, Shape<dyn>> y = cast<std::int32_t>(random_uniform<float, Shape<dyn>>(6, 0, 2.99f, {32}));
};

/// The members of the zip at path, as text.
std::string member(const std::string& path, const std::string& name) {
  const auto bytes = test_files::slurp(path);
  const detail::zip_archive zip(std::span(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size()), path, "test");
  const auto m = zip.read(*zip.find(name));
  return std::string(m.begin(), m.end());
}

}  // namespace

TEST_CASE("model.save writes a .keras archive that keras::load_model reads with its optimizer; training then continues bitwise", "[keras][saving]") {
  keras::utils::set_random_seed(2);
  auto model = make_net();
  model->compile(optimizers::Adam{.learning_rate = 2e-3, .amsgrad = true}, Loss{.from_logits = true}, {"accuracy"});
  const batch b;
  model->fit(b.x, b.y, {.batch_size = 8, .epochs = 1, .verbose = 0});
  const auto path = scratch("trained.keras");
  model->save(path);

  auto loaded = make_net();
  keras::load_model<optimizers::Adam, Loss>(*loaded, path);
  CHECK(same_weights(model->get_weights(), loaded->get_weights()));
  CHECK(loaded->optimizer().iterations() == 4);
  CHECK(loaded->optimizer().learning_rate() == Approx(2e-3));

  // The archive is what Keras writes: its config, its compile config, the optimizer's variables.
  const auto config = nlohmann::json::parse(member(path, "config.json"));
  CHECK(config["class_name"] == "Sequential");
  const auto& list = config["config"]["layers"];
  REQUIRE(list.size() == 3);
  CHECK(list[0]["class_name"] == "InputLayer");
  CHECK(list[0]["config"]["batch_shape"] == nlohmann::json::parse("[null, 12]"));
  CHECK(list[1]["class_name"] == "Dense");
  CHECK(list[1]["config"]["units"] == 8);
  CHECK(list[1]["config"]["activation"] == "relu");
  CHECK(list[1]["config"]["kernel_regularizer"]["config"]["l2"] == Approx(1e-3));
  CHECK(list[2]["config"]["units"] == 3);
  CHECK(list[2]["build_config"]["input_shape"] == nlohmann::json::parse("[null, 8]"));
  const auto& compile = config["compile_config"];
  CHECK(compile["optimizer"]["class_name"] == "Adam");
  CHECK(compile["optimizer"]["config"]["amsgrad"] == true);
  CHECK(compile["loss"]["class_name"] == "SparseCategoricalCrossentropy");
  CHECK(compile["loss"]["config"]["from_logits"] == true);
  CHECK(compile["metrics"] == nlohmann::json::parse(R"(["accuracy"])"));

  // Both continue alike: the loaded optimizer has the saved one's state.
  model->fit(b.x, b.y, {.batch_size = 8, .epochs = 1, .verbose = 0, .shuffle = false});
  loaded->fit(b.x, b.y, {.batch_size = 8, .epochs = 1, .verbose = 0, .shuffle = false});
  CHECK(same_weights(model->get_weights(), loaded->get_weights()));
  CHECK(loaded->optimizer().iterations() == 8);

  SECTION("an uncompiled model, and a default-constructed one") {
    auto plain = keras::load_model<FileNet>(path);
    keras::load_model(*plain, path);
    auto fresh = make_net();
    fresh->load_weights(path);
    CHECK(same_weights(plain->get_weights(), fresh->get_weights()));
    const auto again = scratch("uncompiled.keras");
    fresh->save(again);
    CHECK(nlohmann::json::parse(member(again, "config.json")).count("compile_config") == 0);
    CHECK_THROWS_WITH((keras::load_model<optimizers::Adam, Loss>(*plain, again)), Catch::Contains("holds no compile_config"));
  }
}

TEST_CASE("keras::load_model continues training an archive Keras 3 wrote as Keras continues it", "[keras][saving]") {
  const auto check = [](auto optimizer_tag, const std::string& name) {
    using O = decltype(optimizer_tag);
    auto model = make_net();
    keras::load_model<O, Loss>(*model, keras_check::data_file("archives/" + name + ".keras"));
    CHECK(model->optimizer().iterations() == 3);
    const io::safetensors::File ref(keras_check::data_file("archives/" + name + ".safetensors"));
    Tensor<float, Shape<dyn, 12>> x({8, 12});
    Tensor<std::int32_t, Shape<dyn>> y({8});
    ref.read_into("x", x.data());
    ref.read_into("y", y.data());
    model->train_on_batch(x, y);
    CHECK(model->optimizer().iterations() == 4);
    const auto weights = model->get_weights();
    for (std::size_t i = 0; i < weights.size(); ++i) {
      std::vector<float> expected(weights[i].values.size());
      ref.read_into("w" + std::to_string(i), expected.data());
      double d = 0, scale = 0;
      for (std::size_t k = 0; k < expected.size(); ++k) {
        d = std::max(d, double(std::abs(weights[i].values[k] - expected[k])));
        scale = std::max(scale, double(std::abs(expected[k])));
      }
      INFO(name << ": weight " << i);
      CHECK(d <= 1e-5 * std::max(1.0, scale));
    }
  };
  check(optimizers::RMSprop{}, "rmsprop");      // slots Keras lists kind by kind
  check(optimizers::Adam{}, "adam_schedule");   // a schedule (no learning-rate variable), amsgrad's slots last
}

TEST_CASE("keras::load_model names what does not fit, and changes nothing then", "[keras][saving]") {
  const auto keras_file = keras_check::data_file("archives/rmsprop.keras");
  auto model = make_net();
  const auto before = model->get_weights();
  CHECK_THROWS_WITH((keras::load_model<optimizers::Adam, Loss>(*model, keras_file)), Catch::Contains("the optimizer is a RMSprop, the model is loaded with a Adam"));
  CHECK_THROWS_WITH((keras::load_model<optimizers::RMSprop, keras::losses::CategoricalCrossentropy<>>(*model, keras_file)),
                    Catch::Contains("is a SparseCategoricalCrossentropy, the model is loaded with a CategoricalCrossentropy"));
  CHECK_THROWS_WITH(keras::load_model<Other>(keras_file), Catch::Contains("weight kernel: shape [8,3] in the file, [8,4] in the model"));
  CHECK(same_weights(before, model->get_weights()));
  CHECK_THROWS_WITH(model->save(scratch("m.h5")), Catch::Contains("must end in .keras"));

  // A damaged archive: every byte of it matters.
  const auto bytes = test_files::slurp(keras_file);
  const auto damaged = scratch("damaged.keras");
  test_files::spit(damaged, bytes.substr(0, bytes.size() / 2));
  CHECK_THROWS_AS((keras::load_model<optimizers::RMSprop, Loss>(*model, damaged)), io_error);
  CHECK(same_weights(before, model->get_weights()));
}

TEST_CASE("a config read back: members by key, values by kind, and JSON of another form refused", "[keras][saving]") {
  const keras::config_values c(R"({"name": "adam", "beta_1": 0.9, "amsgrad": true, "clipnorm": null, "boundaries": [10, 20], "nested": {"a": [1, {"b": "}"}]}})", "test");
  std::string name;
  double beta = 0;
  bool amsgrad = false;
  std::optional<double> clip = 1.0;
  std::vector<std::int64_t> boundaries;
  c.get("name", name).get("beta_1", beta).get("amsgrad", amsgrad).get("clipnorm", clip).get("boundaries", boundaries);
  CHECK(name == "adam");
  CHECK(beta == 0.9);
  CHECK(amsgrad);
  CHECK(!clip);
  CHECK(boundaries == std::vector<std::int64_t>{10, 20});
  CHECK(*c.text("nested") == R"({"a": [1, {"b": "}"}]})");
  CHECK_THROWS_WITH(c.get("name", beta), Catch::Contains("\"name\" is \"adam\", not a number"));
  for (const char* bad : {"", "[", "{\"a\": [1, 2}", "{\"a\" 1}", "{\"a\": 1,}", "{\"a\": \"x}", "{} x", "3"})
    CHECK_THROWS_AS(keras::config_values(bad, "bad"), io_error);
}

TEST_CASE("model.save writes a functional model's graph (shared layers, merges) as Keras does", "[keras][saving]") {
  keras::Input<float, Shape<8>> in{.name = "x"};
  const auto h = layers::Dense<4, activations::relu>{}(in);
  const layers::Dense<4> shared{};
  const auto a = shared(h);
  const auto out = layers::Add{}(a, shared(a));
  keras::Model model(in, out);
  model.compile(optimizers::SGD{.momentum = 0.9}, keras::losses::MeanSquaredError<>{});
  Tensor<float, Shape<dyn, 8>> x = random_uniform<float, Shape<dyn, 8>>(1, -1, 1, {16, 8});
  Tensor<float, Shape<dyn, 4>> y = random_uniform<float, Shape<dyn, 4>>(2, -1, 1, {16, 4});
  model.fit(x, y, {.batch_size = 4, .epochs = 1, .verbose = 0});
  const auto path = scratch("functional.keras");
  model.save(path);

  const auto config = nlohmann::json::parse(member(path, "config.json"));
  CHECK(config["class_name"] == "Functional");
  CHECK(config["config"]["input_layers"] == nlohmann::json::parse(R"(["x", 0, 0])"));
  const auto& list = config["config"]["layers"];
  REQUIRE(list.size() == 4);
  CHECK(list[0]["class_name"] == "InputLayer");
  CHECK(list[2]["inbound_nodes"].size() == 2);  // the shared Dense, called twice
  CHECK(list[2]["inbound_nodes"][1]["args"][0]["config"]["keras_history"] == nlohmann::json::parse("[\"" + list[2]["name"].get<std::string>() + "\", 0, 0]"));
  CHECK(list[3]["inbound_nodes"][0]["args"][0].size() == 2);  // Add's two inputs, as one list
  CHECK(config["config"]["output_layers"][0] == list[3]["name"]);

  // The same graph built again loads it.
  keras::Input<float, Shape<8>> in2{.name = "x"};
  const auto h2 = layers::Dense<4, activations::relu>{}(in2);
  const layers::Dense<4> shared2{};
  const auto a2 = shared2(h2);
  keras::Model again(in2, layers::Add{}(a2, shared2(a2)));
  keras::load_model<optimizers::SGD, keras::losses::MeanSquaredError<>>(again, path);
  CHECK(same_weights(model.get_weights(), again.get_weights()));
  CHECK(again.optimizer().iterations() == 4);
}
