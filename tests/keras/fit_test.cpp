// Training as Keras trains: compile, fit (tensors and datasets), evaluate, predict, the
// *_on_batch methods, the callbacks and the progress bar, in the forms users write them.
#include "keras_check.hpp"

#include <spawn.h>
#include <sys/wait.h>

#include <csignal>

#include <ctflow/data.hpp>

extern char** environ;

using namespace ctflow;
namespace layers = keras::layers;
namespace activations = keras::activations;
namespace callbacks = keras::callbacks;

namespace {

using Net = keras::Sequential<keras::Input<float, Shape<8>>, layers::Dense<16, activations::relu>, layers::Dense<3>>;
using Losses = keras::losses::SparseCategoricalCrossentropy<>;

/// 256 samples of 8 features and labels of 3 classes a small model can learn.
struct problem {
  Tensor<float, Shape<dyn, 8>> x = random_uniform<float, Shape<dyn, 8>>(5, -1, 1, {256, 8});
  Tensor<std::int32_t, Shape<dyn>> y = cast<std::int32_t>(argmax<1>(matmul(x, random_uniform<float, Shape<8, 3>>(7, -1, 1))));
};

std::string scratch_dir(const std::string& name) { return test_files::temp_dir("ctflow_fit_" + name); }

template <class M> void compile(M& model, double lr = 0.01) {
  model.compile(keras::optimizers::Adam{.learning_rate = lr}, Losses{.from_logits = true}, {"accuracy"});
}

/// The largest difference between two tensors' elements.
template <class A, class B> double max_difference(const A& a, const B& b) {
  double d = 0;
  for (std::size_t i = 0; i < a.size(); ++i) d = std::max(d, std::abs(double(a.data()[i]) - double(b.data()[i])));
  return d;
}

/// Whether two models' weights are bitwise equal.
template <class A, class B> bool same_model_weights(A& a, B& b) {
  const auto wa = a.get_weights(), wb = b.get_weights();
  for (std::size_t i = 0; i < wa.size(); ++i)
    if (wa[i].values != wb[i].values) return false;
  return wa.size() == wb.size();
}

}  // namespace

TEST_CASE("fit: the loss falls, History has each epoch's logs, validation on the last samples") {
  keras::backend::clear_session();
  keras::utils::set_random_seed(1);
  problem p;
  Net model;
  compile(model);
  const auto history = model.fit(p.x, p.y, {.batch_size = 32, .epochs = 4, .verbose = 0, .validation_split = 0.25});
  REQUIRE(history.epoch == std::vector<std::int64_t>{0, 1, 2, 3});
  for (const char* k : {"loss", "accuracy", "val_loss", "val_accuracy"}) CHECK(history.history.at(k).size() == 4);
  CHECK(history.history.at("loss").back() < 0.7 * history.history.at("loss").front());
  // 192 training samples in batches of 32: 6 updates an epoch.
  CHECK(model.optimizer().iterations() == 24);
  // The validation logs are evaluate's on the last quarter.
  const TensorView<const float, Shape<dyn, 8>> vx(p.x.data() + 192 * 8, {64, 8});
  const TensorView<const std::int32_t, Shape<dyn>> vy(p.y.data() + 192, {64});
  const auto val = model.evaluate(vx, vy, {.verbose = 0});
  CHECK(val.at("loss") == Approx(history.history.at("val_loss").back()).epsilon(1e-6));
  CHECK(val.at("accuracy") == Approx(history.history.at("val_accuracy").back()).epsilon(1e-6));
}

TEST_CASE("fit: bitwise the same weights with the same seed, on one and on two threads") {
  problem p;
  auto run = [&](int threads) {
    config::set_num_threads(threads);
    keras::backend::clear_session();
    keras::utils::set_random_seed(3);
    auto model = std::make_unique<Net>();
    compile(*model);
    model->fit(p.x, p.y, {.batch_size = 16, .epochs = 2, .verbose = 0});
    return model;
  };
  const int threads = config::get_num_threads();
  auto a = run(1), b = run(1), c = run(2);
  config::set_num_threads(threads);
  CHECK(same_model_weights(*a, *b));
  CHECK(same_model_weights(*a, *c));
}

TEST_CASE("a model's own train_step and test_step keep fit's loop, callbacks and progress bar (Keras's override)") {
  keras::backend::clear_session();
  keras::utils::set_random_seed(4);
  problem p;
  Net model;
  compile(model);
  // The step of "customizing what happens in fit": the gradient of a loss the step chooses
  // (here with label smoothing's cousin: a doubled loss), its own metrics.
  const Losses loss_fn{.from_logits = true};
  keras::metrics::Mean loss_tracker{.name = "loss"};
  keras::metrics::SparseCategoricalAccuracy accuracy;
  int resets = 0, train_calls = 0, test_calls = 0;
  model.steps.train_step = [&](Net& m, const keras::batch_data<Net>& data) -> callbacks::Logs {
    ++train_calls;
    REQUIRE(data.sparse_y);
    const auto logits = m(data.x, true);
    const auto [loss, dlogits] = loss_fn.value_and_gradient(*data.sparse_y, logits);
    m.backward(dlogits);
    m.optimizer().apply_gradients(m.gradients(), m.trainable_variables());
    loss_tracker.update_state(double(loss));
    accuracy.update_state(*data.sparse_y, logits);
    return {{"loss", loss_tracker.result()}, {"acc", accuracy.result()}};
  };
  model.steps.test_step = [&](Net& m, const keras::batch_data<Net>& data) -> callbacks::Logs {
    ++test_calls;
    const auto logits = m(data.x);
    loss_tracker.update_state(double(loss_fn(*data.sparse_y, logits)));
    return {{"loss", loss_tracker.result()}};
  };
  model.steps.reset_metrics = [&] {
    ++resets;
    loss_tracker.reset_state();
    accuracy.reset_state();
  };
  const auto history = model.fit(p.x, p.y, {.batch_size = 32, .epochs = 3, .verbose = 0, .validation_split = 0.25});
  CHECK(train_calls == 18);
  CHECK(test_calls == 3 * 2);
  CHECK(resets == 6);  // each epoch, each validation
  CHECK(history.history.at("acc").size() == 3);
  CHECK(history.history.at("loss").back() < history.history.at("loss").front());
  CHECK(history.history.at("val_loss").size() == 3);
  CHECK(history.history.count("accuracy") == 0);  // compile's metrics are the default step's
  CHECK(model.optimizer().iterations() == 18);
  // evaluate and the *_on_batch methods take the same steps.
  CHECK(model.evaluate(p.x, p.y, {.verbose = 0}).count("accuracy") == 0);
  CHECK(model.train_on_batch(p.x, p.y).count("acc") == 1);
  CHECK(model.optimizer().iterations() == 19);
}

TEST_CASE("evaluate, predict and the *_on_batch methods are the model's call, the loss and the metric by hand") {
  keras::backend::clear_session();
  problem p;
  Net model;
  compile(model);
  const Tensor<float, Shape<dyn, 3>> logits = model(p.x);
  const auto predicted = model.predict(p.x, {.batch_size = 100, .verbose = 0});  // 3 batches, the last of 56
  REQUIRE(predicted.dims() == logits.dims());
  CHECK(max_difference(logits, predicted) < 1e-6);
  const auto on_batch = model.predict_on_batch(p.x);
  CHECK(std::equal(logits.begin(), logits.end(), on_batch.begin()));

  const auto logs = model.evaluate(p.x, p.y, {.batch_size = 256, .verbose = 0});
  CHECK(logs.at("loss") == Approx(Losses{.from_logits = true}(p.y, logits)).epsilon(1e-6));
  keras::metrics::SparseCategoricalAccuracy accuracy;
  accuracy.update_state(p.y, logits);
  CHECK(logs.at("accuracy") == accuracy.result());
  CHECK(model.test_on_batch(p.x, p.y).at("loss") == Approx(logs.at("loss")).epsilon(1e-6));

  // train_on_batch is one step: forward, the loss's gradient, backward, one Adam update.
  keras::backend::clear_session();
  Net by_hand;
  by_hand.set_weights(model.get_weights());
  keras::optimizers::Adam adam{.learning_rate = 0.01};
  const auto out = by_hand(p.x, true);
  const auto [value, dy] = Losses{.from_logits = true}.value_and_gradient(p.y, out);
  by_hand.backward(TensorView<const float, Shape<dyn, 3>>(dy.data(), dy.dims()));
  adam.apply_gradients(by_hand.gradients(), by_hand.trainable_variables());
  const auto step = model.train_on_batch(p.x, p.y);
  CHECK(step.at("loss") == Approx(value).epsilon(1e-6));
  CHECK(same_model_weights(model, by_hand));
}

TEST_CASE("\"accuracy\" is resolved as Keras resolves it: sparse, categorical or binary") {
  keras::backend::clear_session();
  problem p;
  // Dense one-hot labels with CategoricalCrossentropy: categorical accuracy.
  Net dense;
  dense.compile(keras::optimizers::SGD{}, keras::losses::CategoricalCrossentropy{.from_logits = true}, {"accuracy", "mse"});
  const Tensor<float, Shape<dyn, 3>> one_hot = cast<float>(ctflow::one_hot<3>(p.y));
  const Tensor<float, Shape<dyn, 3>> logits = dense(p.x);
  keras::metrics::CategoricalAccuracy categorical;
  categorical.update_state(one_hot, logits);
  keras::metrics::MeanSquaredError mse;
  mse.update_state(one_hot, logits);
  const auto logs = dense.evaluate(p.x, one_hot, {.verbose = 0});
  CHECK(logs.at("accuracy") == Approx(categorical.result()).epsilon(1e-12));
  CHECK(logs.at("mse") == Approx(mse.result()).epsilon(1e-6));
  // One output unit with BinaryCrossentropy: binary accuracy (threshold 0.5), a metric object too.
  keras::Sequential<keras::Input<float, Shape<8>>, layers::Dense<1, activations::sigmoid>> binary;
  binary.compile(keras::optimizers::SGD{}, keras::losses::BinaryCrossentropy{}, {"acc"}, keras::metrics::BinaryAccuracy{.name = "half", .threshold = 0.5});
  const Tensor<float, Shape<dyn, 1>> labels = cast<float>(reshape<Shape<dyn, 1>>(p.y) > 0);
  const auto b = binary.evaluate(p.x, labels, {.verbose = 0});
  keras::metrics::BinaryAccuracy expected;
  expected.update_state(labels, binary(p.x));
  CHECK(b.at("acc") == Approx(expected.result()).epsilon(1e-12));
  CHECK(b.at("half") == b.at("acc"));
  // Labels without the output's trailing axis of 1 (Keras's y of shape (N,)), and integer labels
  // with one (shape (N, 1)), as Keras takes them.
  const Tensor<float, Shape<dyn>> flat = reshape<Shape<dyn>>(labels);
  CHECK(binary.evaluate(p.x, flat, {.verbose = 0}).at("loss") == b.at("loss"));
  Net sparse;
  compile(sparse);
  const Tensor<std::int32_t, Shape<dyn, 1>> column = reshape<Shape<dyn, 1>>(p.y);
  CHECK(sparse.evaluate(p.x, column, {.verbose = 0}).at("loss") == sparse.evaluate(p.x, p.y, {.verbose = 0}).at("loss"));
  CHECK_THROWS_WITH(dense.compile(keras::optimizers::SGD{}, keras::losses::CategoricalCrossentropy{}, {"precision_at_k"}),
                    Catch::Contains("unknown metric 'precision_at_k'"));
}

TEST_CASE("fit on a Dataset of (x, y) batches, uint8 images converted and their channel axis added") {
  keras::backend::clear_session();
  keras::utils::set_random_seed(5);
  // Images of 4x4 uint8 whose class is the brighter half.
  Tensor<std::uint8_t, Shape<dyn, 4, 4>> images({128, 4, 4});
  Tensor<std::uint8_t, Shape<dyn>> labels({128});
  const auto noise = random_uniform<float, Shape<dyn, 4, 4>>(9, 0, 100, {128, 4, 4});
  for (std::size_t i = 0; i < 128; ++i) {
    labels(i) = std::uint8_t(i % 2);
    for (std::size_t r = 0; r < 4; ++r)
      for (std::size_t c = 0; c < 4; ++c) images(i, r, c) = std::uint8_t(noise(i, r, c) + ((r < 2) == (i % 2 == 0) ? 150 : 0));
  }
  keras::Sequential<keras::Input<float, Shape<4, 4, 1>>, layers::Rescaling, layers::Flatten, layers::Dense<2>> model({}, {.scale = 1.0 / 255}, {}, {});
  model.compile(keras::optimizers::Adam{.learning_rate = 0.05}, Losses{.from_logits = true}, {"accuracy"});
  const auto ds = data::from_tensor_slices(images, labels).shuffle(128, 1).batch(16);
  const auto history = model.fit(ds, {.epochs = 5, .verbose = 0}, data::from_tensor_slices(images, labels).batch(64));
  CHECK(history.history.at("accuracy").back() > 0.9);
  CHECK(history.history.at("val_accuracy").size() == 5);
  CHECK(model.evaluate(data::from_tensor_slices(images, labels).batch(32), {.verbose = 0}).at("accuracy") > 0.9);
  // The same images as tensors: predict adds the channel axis too.
  const auto p = model.predict(images, {.verbose = 0});
  CHECK(p.dims() == dims_t<2>{128, 2});
  const auto empty = data::from_tensor_slices(images, labels).take(0).batch(16);
  CHECK_THROWS_WITH(model.fit(empty, {.verbose = 0}), Catch::Contains("the dataset is empty"));
}

TEST_CASE("bad input to compile, fit and evaluate is a clear error") {
  keras::backend::clear_session();
  problem p;
  Net model;
  CHECK_THROWS_WITH(model.fit(p.x, p.y), Catch::Contains("call compile(optimizer, loss, metrics) before fit"));
  compile(model);
  CHECK_THROWS_WITH(model.fit(p.x, p.y, {.verbose = 0, .validation_split = 1.0}), Catch::Contains("validation_split must be in [0, 1)"));
  const Tensor<float, Shape<dyn, 8>> none({0, 8});
  CHECK_THROWS_WITH(model.fit(none, Tensor<std::int32_t, Shape<dyn>>({0}), {.verbose = 0}), Catch::Contains("no samples"));
  CHECK_THROWS_WITH(model.fit(p.x, Tensor<std::int32_t, Shape<dyn>>({100}), {.verbose = 0}), Catch::Contains("x has 256 samples, y 100"));
  CHECK_THROWS_WITH(model.fit(p.x, Tensor<float, Shape<dyn, 3>>({256, 3}), {.verbose = 0}),
                    Catch::Contains("takes integer labels of the output's shape without its last axis; y is float32 [256,3]"));
  Tensor<std::int32_t, Shape<dyn>> out_of_range = p.y;
  out_of_range(7) = 3;
  CHECK_THROWS_WITH(model.fit(p.x, out_of_range, {.batch_size = 256, .verbose = 0}), Catch::Contains("outside the valid range of [0, 3)"));
  CHECK_THROWS_WITH(model.fit(p.x, p.y, {.verbose = 3}), Catch::Contains("verbose must be 0, 1, 2 or \"auto\""));
  CHECK_THROWS_WITH(model.fit(p.x, p.y, {.batch_size = 0}), Catch::Contains("batch_size must be positive"));
  CHECK_THROWS_WITH(callbacks::ModelCheckpoint({.filepath = "model.h5"}), Catch::Contains("must end in .keras (the whole model), .weights.h5"));
  CHECK_THROWS_WITH(callbacks::ModelCheckpoint({.filepath = "model.keras", .save_weights_only = true}), Catch::Contains("must end in .weights.h5"));
}

TEST_CASE("callbacks: every hook in Keras's order, stop_training, EarlyStopping, learning rates") {
  keras::backend::clear_session();
  problem p;
  Net model;
  compile(model);
  struct Recorder : callbacks::Callback {
    std::vector<std::string> hooks;
    void on_train_begin(const callbacks::Logs&) override { hooks.push_back("train_begin"); }
    void on_epoch_begin(std::int64_t e, const callbacks::Logs&) override { hooks.push_back("epoch_begin " + std::to_string(e)); }
    void on_train_batch_end(std::int64_t b, const callbacks::Logs& logs) override {
      hooks.push_back("batch_end " + std::to_string(b) + (logs.count("loss") && logs.count("accuracy") ? " logs" : ""));
    }
    void on_test_begin(const callbacks::Logs&) override { hooks.push_back("test_begin"); }
    void on_epoch_end(std::int64_t e, const callbacks::Logs& logs) override {
      hooks.push_back("epoch_end " + std::to_string(e) + (logs.count("val_loss") ? " val" : ""));
      if (e == 1) model->stop_training = true;
    }
    void on_train_end(const callbacks::Logs&) override { hooks.push_back("train_end"); }
  } recorder;
  model.fit(p.x, p.y, {.batch_size = 128, .epochs = 5, .verbose = 0, .callbacks = {recorder}, .validation_split = 0.5});
  CHECK(recorder.hooks == std::vector<std::string>{"train_begin", "epoch_begin 0", "batch_end 0 logs", "test_begin", "epoch_end 0 val", "epoch_begin 1",
                                                   "batch_end 0 logs", "test_begin", "epoch_end 1 val", "train_end"});

  // EarlyStopping: a loss that must improve by 10 never does; patience 1 stops after epoch 1.
  callbacks::EarlyStopping stopper({.monitor = "loss", .min_delta = 10, .patience = 1, .restore_best_weights = true});
  const auto before = model.get_weights();
  const auto h = model.fit(p.x, p.y, {.batch_size = 64, .epochs = 10, .verbose = 0, .callbacks = {stopper}});
  CHECK(h.epoch.size() == 2);
  CHECK(stopper.stopped_epoch == 1);
  CHECK(stopper.best_epoch == 0);

  // LearningRateScheduler sets the rate at each epoch; ReduceLROnPlateau divides it.
  model.fit(p.x, p.y,
            {.batch_size = 64, .epochs = 3, .verbose = 0,
             .callbacks = {callbacks::LearningRateScheduler([](std::int64_t epoch, double) { return 0.1 / double(epoch + 1); })}});
  CHECK(model.optimizer().learning_rate() == Approx(0.1 / 3));
  model.fit(p.x, p.y, {.batch_size = 64, .epochs = 3, .verbose = 0, .callbacks = {callbacks::ReduceLROnPlateau({.monitor = "loss", .factor = 0.5, .patience = 1, .min_delta = 100})}});
  CHECK(model.optimizer().learning_rate() == Approx(0.1 / 3 / 4));
  (void)before;
}

TEST_CASE("callbacks: ModelCheckpoint's templates and best weights, CSVLogger, TensorBoard's files, TerminateOnNaN") {
  keras::backend::clear_session();
  problem p;
  Net model;
  compile(model);
  const std::string dir = scratch_dir("callbacks");
  callbacks::ModelCheckpoint every({.filepath = dir + "/ckpt-{epoch:02d}-{loss:.2f}.weights.h5"});
  callbacks::ModelCheckpoint best({.filepath = dir + "/best.keras", .monitor = "val_accuracy", .save_best_only = true});
  model.fit(p.x, p.y,
            {.batch_size = 64, .epochs = 3, .verbose = 0,
             .callbacks = {every, best, callbacks::CSVLogger(dir + "/log.csv"), callbacks::TensorBoard({.log_dir = dir + "/tb", .histogram_freq = 1})},
             .validation_split = 0.25});
  REQUIRE(every.saved.size() == 3);
  CHECK(every.saved[0].find("/ckpt-01-") != std::string::npos);
  CHECK(std::filesystem::exists(every.saved[2]));
  REQUIRE(!best.saved.empty());
  // The best epoch's whole model, with its optimizer's state.
  auto restored = keras::load_model<Net, keras::optimizers::Adam, Losses>(best.saved.back());
  CHECK(restored->optimizer().iterations() > 0);
  // The CSV: a header and a row per epoch.
  const std::string csv = test_files::slurp(dir + "/log.csv");
  CHECK(csv.rfind("epoch,accuracy,loss,val_accuracy,val_loss\n0,", 0) == 0);
  CHECK(std::count(csv.begin(), csv.end(), '\n') == 4);
  // TensorBoard: an event file for training and one for validation.
  CHECK(!std::filesystem::is_empty(dir + "/tb/train"));
  CHECK(!std::filesystem::is_empty(dir + "/tb/validation"));
  // A NaN loss stops training at its batch (a weight made NaN before batch 2).
  const auto poison = [&](std::int64_t batch, const callbacks::Logs&) {
    if (batch != 2) return;
    auto w = model.get_weights();
    w.back().values[0] = std::numeric_limits<float>::quiet_NaN();
    model.set_weights(w);
  };
  callbacks::TerminateOnNaN nan;
  model.fit(p.x, p.y, {.batch_size = 32, .epochs = 2, .verbose = 0, .callbacks = {callbacks::LambdaCallback({.on_train_batch_begin = poison}), nan}});
  REQUIRE(nan.terminated_at);
  CHECK(*nan.terminated_at == 2);
  std::filesystem::remove_all(dir);
}

TEST_CASE("BackupAndRestore: a fit stopped mid-epoch resumes where it stopped, bitwise as an uninterrupted run") {
  problem p;
  const std::string dir = scratch_dir("backup");
  auto fresh = [] {
    keras::backend::clear_session();
    keras::utils::set_random_seed(11);
    auto m = std::make_unique<Net>();
    compile(*m);
    return m;
  };
  auto whole = fresh();
  whole->fit(p.x, p.y, {.batch_size = 32, .epochs = 3, .verbose = 0});

  // Killed at epoch 1, batch 5 (after a backup every 2 batches): an exception as a kill.
  struct Killer : callbacks::Callback {
    std::int64_t epoch = 0;
    void on_epoch_begin(std::int64_t e, const callbacks::Logs&) override { epoch = e; }
    void on_train_batch_begin(std::int64_t b, const callbacks::Logs&) override {
      if (epoch == 1 && b == 5) throw std::runtime_error("killed");
    }
  };
  auto killed = fresh();
  CHECK_THROWS_WITH(killed->fit(p.x, p.y, {.batch_size = 32, .epochs = 3, .verbose = 0,
                                            .callbacks = {callbacks::BackupAndRestore({.backup_dir = dir, .save_freq = 2}), Killer{}}}),
                    "killed");
  REQUIRE(std::filesystem::exists(dir + "/latest.safetensors"));
  auto resumed = fresh();
  const auto h = resumed->fit(p.x, p.y, {.batch_size = 32, .epochs = 3, .verbose = 0, .callbacks = {callbacks::BackupAndRestore({.backup_dir = dir, .save_freq = 2})}});
  CHECK(h.epoch == std::vector<std::int64_t>{1, 2});
  CHECK(resumed->optimizer().iterations() == whole->optimizer().iterations());
  CHECK(same_model_weights(*resumed, *whole));
  CHECK(!std::filesystem::exists(dir));  // deleted once fit ends
}

TEST_CASE("BackupAndRestore: a fit killed mid-epoch (SIGKILL) resumes in a new process, bitwise as an uninterrupted run") {
  const auto run = [](const std::string& dir, const char* kill_after) {
    pid_t pid = 0;
    std::vector<char*> argv = {const_cast<char*>(CTFLOW_BACKUP_KILLEE), const_cast<char*>(dir.c_str())};
    if (kill_after) argv.push_back(const_cast<char*>(kill_after));
    argv.push_back(nullptr);
    REQUIRE(posix_spawn(&pid, CTFLOW_BACKUP_KILLEE, nullptr, nullptr, argv.data(), environ) == 0);
    int status = 0;
    REQUIRE(::waitpid(pid, &status, 0) == pid);
    return status;
  };
  const std::string whole = scratch_dir("backup_whole"), killed = scratch_dir("backup_killed");
  const int clean = run(whole, nullptr);
  REQUIRE((WIFEXITED(clean) && WEXITSTATUS(clean) == 0));
  // Killed after 7 batches (the backup after batch 4 holds), then 8 batches into the resumed run (in epoch 2).
  for (const char* kill_after : {"7", "8"}) {
    const int status = run(killed, kill_after);
    INFO("killed after " << kill_after << " batches: wait status " << status);
    REQUIRE(WIFSIGNALED(status));
    CHECK(WTERMSIG(status) == SIGKILL);
    CHECK(std::filesystem::exists(killed + "/backup"));
  }
  const int resumed = run(killed, nullptr);
  REQUIRE((WIFEXITED(resumed) && WEXITSTATUS(resumed) == 0));
  CHECK(!std::filesystem::exists(killed + "/backup"));  // deleted when fit ends
  using Small = keras::Sequential<keras::Input<float, Shape<8>>, layers::Dense<16, activations::relu>, layers::Dropout, layers::Dense<3>>;
  Small a, b;
  a.load_weights(whole + "/final.weights.h5");
  b.load_weights(killed + "/final.weights.h5");
  const auto wa = a.get_weights(), wb = b.get_weights();
  for (std::size_t i = 0; i < wa.size(); ++i) {
    double d = 0;
    for (std::size_t k = 0; k < wa[i].values.size(); ++k) d = std::max(d, double(std::abs(wa[i].values[k] - wb[i].values[k])));
    INFO("weight " << i << ": largest difference " << d);
    CHECK(wa[i].values == wb[i].values);
  }
}

TEST_CASE("the progress bar: Keras 3's text, redrawn on a terminal, one line per epoch otherwise") {
  double now = 0;
  const auto clock = [&] { return now; };
  std::ostringstream plain, terminal;
  for (auto* out : {&plain, &terminal}) {
    keras::utils::Progbar bar(10, 20, 1, 0.05, "step", out, out == &terminal);
    bar.clock = clock;
    now = 0;
    bar.restart();
    now = 0.5;
    bar.update(1, {{"accuracy", 0.5}, {"loss", 1.25}});
    now = 2.5;
    bar.update(5, {{"accuracy", 0.75}, {"loss", 0.0005}});
    now = 4.5;
    bar.update(10, {{"accuracy", 0.875}, {"loss", 0.25}});
  }
  CHECK(plain.str() == "10/10 ━━━━━━━━━━━━━━━━━━━━ 4s 444ms/step - accuracy: 0.8750 - loss: 0.2500\n");
  const std::string t = terminal.str();
  CHECK(t.find("\r\x1b[1m 1/10\x1b[0m \33[32m━━\x1b[0m\33[37m━━━━━━━━━━━━━━━━━━\x1b[0m \x1b[1m4s\x1b[0m 500ms/step - accuracy: 0.5000 - loss: 1.2500") == 0);
  CHECK(t.find("\x1b[1m 5/10\x1b[0m \33[32m━━━━━━━━━━\x1b[0m\33[37m━━━━━━━━━━\x1b[0m \x1b[1m2s\x1b[0m 500ms/step - accuracy: 0.7500 - loss: 5.0000e-04") != std::string::npos);
  CHECK(t.back() == '\n');
  std::ostringstream two;
  keras::utils::Progbar line(10, 20, 2, 0.05, "step", &two, false);
  line.clock = clock;
  now = 0;
  line.restart();
  now = 3;
  line.update(10, {{"loss", 0.5}});
  CHECK(two.str() == "10/10 - 3s - 300ms/step - loss: 0.5000\n");

  // fit's bar on a stream: "Epoch i/n", then the epoch's line.
  keras::backend::clear_session();
  problem p;
  Net model;
  compile(model);
  std::ostringstream out;
  callbacks::ProgbarLogger logger(&out, false);
  model.fit(p.x, p.y, {.batch_size = 64, .epochs = 2, .callbacks = {logger}});
  const std::string s = out.str();
  CHECK(s.rfind("Epoch 1/2\n4/4 ━━━━━━━━━━━━━━━━━━━━ ", 0) == 0);
  CHECK(s.find("\nEpoch 2/2\n4/4 ") != std::string::npos);
  CHECK(s.find(" - accuracy: ") != std::string::npos);
  CHECK(std::count(s.begin(), s.end(), '\n') == 4);
}

TEST_CASE("fit trains a functional Model (a residual block); a frozen layer keeps its weights (transfer learning)") {
  keras::backend::clear_session();
  keras::utils::set_random_seed(2);
  problem p;
  keras::Input<float, Shape<8>> in;
  auto h = layers::Dense<16, activations::relu>{}(in);
  auto out = layers::Dense<3>{}(layers::Add{}(h, layers::Dense<16, activations::relu>{}(h)));
  keras::Model model(in, out);
  compile(model);
  const auto history = model.fit(p.x, p.y, {.batch_size = 32, .epochs = 5, .verbose = 0});
  CHECK(history.history.at("loss").back() < 0.7 * history.history.at("loss").front());
  // The base frozen, a new run at a low learning rate trains the rest only.
  model.get_layer("dense").trainable = false;
  model.compile(keras::optimizers::Adam{.learning_rate = 1e-4}, Losses{.from_logits = true}, {"accuracy"});
  const auto before = model.get_weights();
  model.fit(p.x, p.y, {.batch_size = 32, .epochs = 1, .verbose = 0});
  const auto after = model.get_weights();
  const auto weights = model.weights();
  std::size_t frozen = 0, changed = 0;
  for (std::size_t i = 0; i < weights.size(); ++i) {
    if (weights[i].path.rfind("dense/", 0) == 0) frozen += after[i].values == before[i].values;
    else changed += after[i].values != before[i].values;
  }
  CHECK(frozen == 2);
  CHECK(changed == 4);
  CHECK(model.trainable_variables().size() == 4);
}
