#pragma once
/// @file
/// @brief keras.callbacks: what `fit`, `evaluate` and `predict` call at each stage (Keras's
/// hooks, on_train_begin ... on_predict_batch_end), and Keras's callbacks: History,
/// ProgbarLogger, EarlyStopping, ModelCheckpoint, BackupAndRestore, TensorBoard,
/// ReduceLROnPlateau, LearningRateScheduler, CSVLogger, TerminateOnNaN and LambdaCallback.
///
///     auto history = model.fit(x, y, {.epochs = 10, .validation_split = 0.1,
///                                     .callbacks = {callbacks::EarlyStopping({.patience = 2}),
///                                                   callbacks::ModelCheckpoint({.filepath = "best.weights.h5",
///                                                                               .save_best_only = true})}});
///
/// A user callback derives from Callback and overrides the hooks it needs; `model` reaches the
/// model being trained (its weights, its optimizer's learning rate, `stop_training`).

#include <any>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <ctflow/core/errors.hpp>
#include <ctflow/io/summary.hpp>
#include <ctflow/io/trace.hpp>
#include <ctflow/keras/progbar.hpp>

namespace ctflow::keras::callbacks {

/// @brief The logs a hook receives (Keras's logs dict): "loss", the metrics, "val_..." at an
/// epoch's end, in Keras's order (sorted by name).
using Logs = std::map<std::string, double>;

/// @brief What callbacks reach of the model being trained (Keras's `callback.model`): its weights,
/// its optimizer's learning rate and iterations, `stop_training`, and the state BackupAndRestore
/// keeps. `fit` makes it for the model it trains.
class ModelHandle {
 public:
  virtual ~ModelHandle() = default;
  /// @brief Keras's model.stop_training: set by a callback, `fit` stops after the current batch.
  bool stop_training = false;
  /// @brief The model's name.
  virtual std::string name() const = 0;
  /// @brief A copy of every weight (model.get_weights()), for set_weights.
  virtual std::any get_weights() = 0;
  /// @brief Puts back what get_weights returned.
  virtual void set_weights(const std::any& weights) = 0;
  /// @brief model.save_weights(path).
  virtual void save_weights(const std::string& path) = 0;
  /// @brief model.save(path): the whole model as a .keras archive.
  virtual void save(const std::string& path) = 0;
  /// @brief The optimizer's learning rate now (its schedule's value at the current step).
  virtual double learning_rate() const = 0;
  /// @brief Sets the optimizer's learning rate to a number (replacing a schedule).
  virtual void set_learning_rate(double rate) = 0;
  /// @brief The optimizer's iterations (its updates so far).
  virtual std::int64_t iterations() const = 0;
  /// @brief Writes the model, the optimizer and where `fit` is (epoch, step) to a checkpoint.
  virtual void write_backup(const std::string& file_prefix, std::int64_t epoch, std::int64_t step) = 0;
  /// @brief Restores what write_backup wrote; returns {epoch, step} to resume at.
  virtual std::pair<std::int64_t, std::int64_t> restore_backup(const std::string& file_prefix) = 0;
  /// @brief Writes a histogram of each weight (its path as the name) at step.
  virtual void write_histograms(summary::SummaryWriter& writer, std::int64_t step) = 0;
  /// @brief Where fit starts: set by BackupAndRestore in on_train_begin (epoch, then the batch in it).
  std::int64_t resume_epoch = 0, resume_step = 0;
  bool resume = false;
};

/// @brief What a pass is (Keras's callback.params): verbose, epochs, and the steps of an epoch
/// (nullopt: unknown until a dataset's first pass ends).
struct Params {
  int verbose = 1;
  std::int64_t epochs = 1;
  std::optional<std::int64_t> steps{};
};

/// @brief keras.callbacks.Callback: every hook does nothing; override the ones you need.
class Callback {
 public:
  virtual ~Callback() = default;
  /// @brief The model being trained (set before on_train_begin).
  ModelHandle* model = nullptr;
  /// @brief The pass's parameters.
  Params params{};
  /// @brief Called before the first hook of a pass.
  virtual void set_params(const Params& p) { params = p; }
  /// @brief Called with the model before the first hook.
  virtual void set_model(ModelHandle& m) { model = &m; }
  /// @brief fit's start and end.
  virtual void on_train_begin(const Logs&) {}
  virtual void on_train_end(const Logs&) {}
  /// @brief An epoch's start and end (at the end, logs hold the epoch's metrics and "val_" ones).
  virtual void on_epoch_begin(std::int64_t, const Logs&) {}
  virtual void on_epoch_end(std::int64_t, const Logs&) {}
  /// @brief A training batch's start and end (at the end, logs hold the running metrics).
  virtual void on_train_batch_begin(std::int64_t, const Logs&) {}
  virtual void on_train_batch_end(std::int64_t, const Logs&) {}
  /// @brief evaluate's (and fit's validation's) start, batches and end.
  virtual void on_test_begin(const Logs&) {}
  virtual void on_test_end(const Logs&) {}
  virtual void on_test_batch_begin(std::int64_t, const Logs&) {}
  virtual void on_test_batch_end(std::int64_t, const Logs&) {}
  /// @brief predict's start, batches and end.
  virtual void on_predict_begin(const Logs&) {}
  virtual void on_predict_end(const Logs&) {}
  virtual void on_predict_batch_begin(std::int64_t, const Logs&) {}
  virtual void on_predict_batch_end(std::int64_t, const Logs&) {}
};

/// @brief A callback given to fit: a callback object taken over (an rvalue) or referred to (an
/// lvalue, which must outlive the call; read it afterwards).
class CallbackRef {
 public:
  template <class C> requires std::is_base_of_v<Callback, std::remove_cvref_t<C>>
  CallbackRef(C&& c) {  // NOLINT: implicit, as Keras's lists of callbacks read
    if constexpr (std::is_lvalue_reference_v<C>) ptr_ = std::shared_ptr<Callback>(std::shared_ptr<Callback>{}, &c);
    else ptr_ = std::make_shared<std::remove_cvref_t<C>>(std::move(c));
  }
  /// @brief A shared callback.
  CallbackRef(std::shared_ptr<Callback> c) : ptr_(std::move(c)) {}  // NOLINT
  /// @brief The callback.
  Callback& operator*() const { return *ptr_; }
  Callback* operator->() const { return ptr_.get(); }

 private:
  std::shared_ptr<Callback> ptr_;
};

/// @brief keras.callbacks.History: each epoch's logs (`history.history["loss"][epoch]`); fit
/// returns it.
class History : public Callback {
 public:
  /// @brief Every logged value by name, one per epoch.
  std::map<std::string, std::vector<double>> history;
  /// @brief The epochs logged (0-based, as Keras's history.epoch).
  std::vector<std::int64_t> epoch;

 protected:
  // Keras's hooks (Callback's), called by fit, evaluate and predict.
  void on_train_begin(const Logs&) override { epoch.clear(); }
  void on_epoch_end(std::int64_t e, const Logs& logs) override {
    epoch.push_back(e);
    for (const auto& [k, v] : logs) history[k].push_back(v);
  }
};

/// @brief keras.callbacks.ProgbarLogger: Keras 3's progress bar (fit adds one when verbose is not
/// 0): "Epoch 1/3", then the bar, redrawn in place on a terminal; one line per epoch otherwise.
class ProgbarLogger : public Callback {
 public:
  /// @brief Where the bar is written (std::cout) and whether it is redrawn (default: a terminal).
  explicit ProgbarLogger(std::ostream* out = nullptr, std::optional<bool> dynamic = std::nullopt) : out_(out), dynamic_(dynamic) {}
  /// @brief The clock of the bars made from now on (tests fix it).
  std::function<double()> clock{};

 protected:
  // Keras's hooks (Callback's), called by fit, evaluate and predict.
  void set_params(const Params& p) override {
    params = p;
    target_ = p.steps;
  }
  void on_train_begin(const Logs&) override { in_fit_ = true; }
  void on_train_end(const Logs&) override { in_fit_ = false; }
  void on_test_begin(const Logs&) override {
    if (!in_fit_) reset();
  }
  void on_predict_begin(const Logs&) override { reset(); }
  void on_epoch_begin(std::int64_t e, const Logs&) override {
    reset();
    if (params.verbose && params.epochs > 1) out() << "Epoch " << e + 1 << "/" << params.epochs << "\n" << std::flush;
  }
  void on_train_batch_end(std::int64_t batch, const Logs& logs) override { update(batch, logs); }
  void on_test_batch_end(std::int64_t batch, const Logs& logs) override {
    if (!in_fit_) update(batch, logs);
  }
  void on_predict_batch_end(std::int64_t batch, const Logs&) override { update(batch, {}); }
  void on_epoch_end(std::int64_t, const Logs& logs) override { finalize(logs); }
  void on_test_end(const Logs& logs) override {
    if (!in_fit_) finalize(logs);
  }
  void on_predict_end(const Logs&) override { finalize({}); }

 private:
  std::ostream& out() const { return out_ ? *out_ : std::cout; }
  void reset() {
    seen_ = 0;
    bar_.reset();
  }
  utils::Progbar& bar() {
    if (!bar_) {
      bar_.emplace(target_, 20, params.verbose, 0.05, "step", &out(), dynamic_);
      if (clock) {
        bar_->clock = clock;
        bar_->restart();
      }
    }
    return *bar_;
  }
  static std::vector<std::pair<std::string, double>> items(const Logs& logs) { return {logs.begin(), logs.end()}; }
  void update(std::int64_t batch, const Logs& logs) {
    seen_ = batch + 1;
    if (params.verbose == 1) bar().update(seen_, items(logs), false);
    else bar();
  }
  void finalize(const Logs& logs) {
    if (!target_) {
      target_ = seen_;
      bar().set_target(seen_);
    }
    bar().update(*target_, items(logs), true);
  }
  std::ostream* out_;
  std::optional<bool> dynamic_;
  std::optional<std::int64_t> target_;
  std::optional<utils::Progbar> bar_;
  std::int64_t seen_ = 0;
  bool in_fit_ = false;
};

namespace detail {

/// The value of logs[monitor], or nothing (with Keras's warning when warn).
inline std::optional<double> monitored(const Logs& logs, const std::string& monitor, const char* who) {
  const auto it = logs.find(monitor);
  if (it != logs.end()) return it->second;
  std::string available;
  for (const auto& [k, v] : logs) available += (available.empty() ? "" : ",") + k;
  std::cerr << who << ": the metric '" << monitor << "' is not available; available metrics are: " << available << "\n";
  return std::nullopt;
}

/// Keras's mode "auto": max for accuracies and AUC-like names, min otherwise.
inline bool maximizes(const std::string& mode, const std::string& monitor, const char* who) {
  if (mode == "min") return false;
  if (mode == "max") return true;
  if (mode != "auto") throw value_error(std::string(who) + ": mode must be \"auto\", \"min\" or \"max\"; got \"" + mode + "\"");
  return monitor.find("acc") != std::string::npos || monitor.find("auc") != std::string::npos || monitor.rfind("fmeasure") != std::string::npos;
}

/// Whether current improves on reference by more than min_delta, in the monitor's direction.
inline bool improves(double current, double reference, double min_delta, bool maximize) {
  return maximize ? current - min_delta > reference : current + min_delta < reference;
}

/// Python's str.format for filepath templates: "{epoch:02d}", "{val_loss:.2f}", "{batch}".
inline std::string format_path(const std::string& pattern, std::int64_t epoch, std::optional<std::int64_t> batch, const Logs& logs) {
  std::string out;
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] != '{') {
      out += pattern[i];
      continue;
    }
    const std::size_t close = pattern.find('}', i);
    if (close == std::string::npos) throw value_error("ctflow::keras::callbacks::ModelCheckpoint: filepath '" + pattern + "' has a '{' without '}'");
    const std::string field = pattern.substr(i + 1, close - i - 1);
    const std::size_t colon = field.find(':');
    const std::string key = field.substr(0, colon), spec = colon == std::string::npos ? "" : field.substr(colon + 1);
    char b[128];
    if (key == "epoch" || key == "batch") {
      if (key == "batch" && !batch) throw value_error("ctflow::keras::callbacks::ModelCheckpoint: filepath '" + pattern + "' names {batch} but saves at epochs");
      const long long v = key == "epoch" ? epoch : *batch;
      std::snprintf(b, sizeof b, ("%" + (spec.empty() ? std::string("lld") : spec.substr(0, spec.size() - 1) + "lld")).c_str(), v);
    } else {
      const auto it = logs.find(key);
      if (it == logs.end()) throw value_error("ctflow::keras::callbacks::ModelCheckpoint: filepath '" + pattern + "' names '" + key + "', which the logs lack");
      std::snprintf(b, sizeof b, ("%" + (spec.empty() ? std::string("g") : spec)).c_str(), it->second);
    }
    out += b;
    i = close;
  }
  return out;
}

/// A path's parent directory made if needed.
inline void make_parent(const std::string& path) {
  const auto parent = std::filesystem::path(path).parent_path();
  if (!parent.empty()) std::filesystem::create_directories(parent);
}

}  // namespace detail

/// @brief keras.callbacks.EarlyStopping: stops training when `monitor` has not improved by
/// min_delta for `patience` epochs; restore_best_weights puts back the best epoch's weights.
class EarlyStopping : public Callback {
 public:
  struct Options {
    std::string monitor = "val_loss";
    double min_delta = 0;
    std::int64_t patience = 0;
    int verbose = 0;
    std::string mode = "auto";
    std::optional<double> baseline{};
    bool restore_best_weights = false;
    std::int64_t start_from_epoch = 0;
  };
  /// @brief Keras's arguments, by name: `EarlyStopping({.monitor = "val_loss", .patience = 2})`.
  EarlyStopping() : EarlyStopping(Options{}) {}
  explicit EarlyStopping(Options o) : options(std::move(o)), maximize_(detail::maximizes(options.mode, options.monitor, "ctflow::keras::callbacks::EarlyStopping")) {}
  Options options;
  /// @brief The epoch training stopped at (0: it ran to the end) and the best epoch.
  std::int64_t stopped_epoch = 0, best_epoch = 0;
  /// @brief The best monitored value.
  std::optional<double> best{};


 protected:
  // Keras's hooks (Callback's), called by fit, evaluate and predict.
  void on_train_begin(const Logs&) override {
    wait_ = 0;
    stopped_epoch = 0;
    best = options.baseline;
    best_epoch = 0;
    best_weights_.reset();
  }
  void on_epoch_end(std::int64_t epoch, const Logs& logs) override {
    const auto current = detail::monitored(logs, options.monitor, "ctflow::keras::callbacks::EarlyStopping");
    if (!current || epoch < options.start_from_epoch) return;
    if (options.restore_best_weights && !best_weights_) best_weights_ = model->get_weights();
    ++wait_;
    if (!best || detail::improves(*current, *best, std::abs(options.min_delta), maximize_)) {
      best = *current;
      best_epoch = epoch;
      if (options.restore_best_weights) best_weights_ = model->get_weights();
      if (!options.baseline || detail::improves(*current, *options.baseline, std::abs(options.min_delta), maximize_)) wait_ = 0;
      return;
    }
    if (wait_ >= options.patience && epoch > 0) {
      stopped_epoch = epoch;
      model->stop_training = true;
    }
  }
  void on_train_end(const Logs&) override {
    if (stopped_epoch > 0 && options.verbose > 0) std::cout << "Epoch " << stopped_epoch + 1 << ": early stopping\n";
    if (options.restore_best_weights && best_weights_) {
      if (options.verbose > 0) std::cout << "Restoring model weights from the end of the best epoch: " << best_epoch + 1 << ".\n";
      model->set_weights(*best_weights_);
    }
  }

 private:
  bool maximize_;
  std::int64_t wait_ = 0;
  std::optional<std::any> best_weights_;
};

/// @brief keras.callbacks.ModelCheckpoint: saves the model at each epoch's end (or every
/// save_freq batches), to a filepath that may name the epoch and logs
/// ("ckpt-{epoch:02d}-{val_loss:.2f}.keras"); save_best_only keeps only improvements of
/// `monitor`. A `.keras` filepath gets the whole model (model.save; not with save_weights_only,
/// as in Keras), a `.weights.h5` or `.safetensors` one its weights; written atomically.
class ModelCheckpoint : public Callback {
 public:
  struct Options {
    std::string filepath{};
    std::string monitor = "val_loss";
    int verbose = 0;
    bool save_best_only = false;
    bool save_weights_only = false;
    std::string mode = "auto";
    /// @brief 0: at each epoch's end; n: every n batches.
    std::int64_t save_freq = 0;
    std::optional<double> initial_value_threshold{};
  };
  /// @brief `ModelCheckpoint({.filepath = "ckpt-{epoch:02d}.weights.h5", .save_best_only = true})`.
  explicit ModelCheckpoint(Options o) : options(std::move(o)), maximize_(detail::maximizes(options.mode, options.monitor, "ctflow::keras::callbacks::ModelCheckpoint")) {
    const auto ends = [&](const std::string& s) { return options.filepath.size() >= s.size() && options.filepath.compare(options.filepath.size() - s.size(), s.size(), s) == 0; };
    if (!ends(".keras") && !ends(".weights.h5") && !ends(".safetensors"))
      throw value_error("ctflow::keras::callbacks::ModelCheckpoint: filepath '" + options.filepath +
                        "' must end in .keras (the whole model), .weights.h5 (Keras 3's weight file) or .safetensors");
    if (ends(".keras") && options.save_weights_only)
      throw value_error("ctflow::keras::callbacks::ModelCheckpoint: with save_weights_only, filepath '" + options.filepath + "' must end in .weights.h5");
    whole_ = ends(".keras");
    if (options.save_freq < 0) throw value_error("ctflow::keras::callbacks::ModelCheckpoint: save_freq must be 0 (epochs) or a number of batches");
    best = options.initial_value_threshold;
  }
  Options options;
  /// @brief The best monitored value so far (save_best_only).
  std::optional<double> best{};
  /// @brief The files written, in order.
  std::vector<std::string> saved{};


 protected:
  // Keras's hooks (Callback's), called by fit, evaluate and predict.
  void on_train_batch_end(std::int64_t batch, const Logs& logs) override {
    if (options.save_freq > 0 && ++batches_ % options.save_freq == 0) save(epoch_, batch, logs);
  }
  void on_epoch_begin(std::int64_t epoch, const Logs&) override { epoch_ = epoch; }
  void on_epoch_end(std::int64_t epoch, const Logs& logs) override {
    if (options.save_freq == 0) save(epoch, std::nullopt, logs);
  }

 private:
  void save(std::int64_t epoch, std::optional<std::int64_t> batch, const Logs& logs) {
    const std::string path = detail::format_path(options.filepath, epoch + 1, batch ? std::optional<std::int64_t>(*batch + 1) : std::nullopt, logs);
    if (options.save_best_only) {
      const auto current = detail::monitored(logs, options.monitor, "ctflow::keras::callbacks::ModelCheckpoint");
      if (!current) return;
      if (best && !detail::improves(*current, *best, 0, maximize_)) {
        if (options.verbose > 0)
          std::printf("\nEpoch %lld: %s did not improve from %.5f\n", static_cast<long long>(epoch + 1), options.monitor.c_str(), *best);
        return;
      }
      if (options.verbose > 0)
        std::printf("\nEpoch %lld: %s improved from %.5f to %.5f, saving model to %s\n", static_cast<long long>(epoch + 1), options.monitor.c_str(),
                    best ? *best : (maximize_ ? -INFINITY : INFINITY), *current, path.c_str());
      best = *current;
    } else if (options.verbose > 0) {
      std::printf("\nEpoch %lld: saving model to %s\n", static_cast<long long>(epoch + 1), path.c_str());
    }
    detail::make_parent(path);
    if (whole_) model->save(path);
    else model->save_weights(path);
    saved.push_back(path);
  }
  bool maximize_, whole_ = false;
  std::int64_t epoch_ = 0, batches_ = 0;
};

/// @brief keras.callbacks.BackupAndRestore: backs up the model, its optimizer and where fit is
/// to backup_dir at each epoch's end (or every save_freq batches); a fit that was killed resumes
/// from the backup at the epoch and batch it had reached, and the backup is deleted when fit
/// ends normally (delete_checkpoint). Backups are written atomically (train::Checkpoint).
class BackupAndRestore : public Callback {
 public:
  struct Options {
    std::string backup_dir{};
    /// @brief 0: at each epoch's end; n: every n batches.
    std::int64_t save_freq = 0;
    bool delete_checkpoint = true;
  };
  /// @brief `BackupAndRestore({.backup_dir = "backup"})`.
  explicit BackupAndRestore(Options o) : options(std::move(o)) {
    if (options.backup_dir.empty()) throw value_error("ctflow::keras::callbacks::BackupAndRestore: give a backup_dir");
    if (options.save_freq < 0) throw value_error("ctflow::keras::callbacks::BackupAndRestore: save_freq must be 0 (epochs) or a number of batches");
  }
  Options options;

  /// @brief The backup's path, without ".safetensors".
  std::string file_prefix() const { return (std::filesystem::path(options.backup_dir) / "latest").string(); }

 protected:
  // Keras's hooks (Callback's), called by fit, evaluate and predict.
  void on_train_begin(const Logs&) override {
    const std::string prefix = file_prefix();
    if (std::filesystem::exists(prefix + ".safetensors")) {
      const auto [epoch, step] = model->restore_backup(prefix);
      model->resume = true;
      model->resume_epoch = epoch;
      model->resume_step = step;
    }
    batches_ = 0;
  }
  void on_epoch_begin(std::int64_t epoch, const Logs&) override { epoch_ = epoch; }
  void on_train_batch_end(std::int64_t batch, const Logs&) override {
    if (options.save_freq > 0 && ++batches_ % options.save_freq == 0) backup(epoch_, batch + 1);
  }
  void on_epoch_end(std::int64_t epoch, const Logs&) override {
    if (options.save_freq == 0) backup(epoch + 1, 0);
  }
  void on_train_end(const Logs&) override {
    if (options.delete_checkpoint) std::filesystem::remove_all(options.backup_dir);
  }

 private:
  void backup(std::int64_t epoch, std::int64_t step) {
    std::filesystem::create_directories(options.backup_dir);
    model->write_backup(file_prefix(), epoch, step);
  }
  std::int64_t epoch_ = 0, batches_ = 0;
};

/// @brief keras.callbacks.TensorBoard: writes log_dir/train and log_dir/validation event files —
/// each epoch's metrics as "epoch_<name>" (and each update_freq batches' as "batch_<name>"),
/// every weight's histogram each histogram_freq epochs — and a profile of the batches
/// profile_batch names (Keras's (start, stop), 1-based) to log_dir/plugins/profile.
class TensorBoard : public Callback {
 public:
  struct Options {
    std::string log_dir = "logs";
    std::int64_t histogram_freq = 0;
    /// @brief 0: at each epoch's end; n: also every n batches.
    std::int64_t update_freq = 0;
    /// @brief The first and last batch to profile (1-based; {0, 0}: none).
    std::pair<std::int64_t, std::int64_t> profile_batch{0, 0};
  };
  /// @brief `TensorBoard({.log_dir = "logs", .histogram_freq = 1})`.
  TensorBoard() : TensorBoard(Options{}) {}
  explicit TensorBoard(Options o) : options(std::move(o)) {}
  Options options;


 protected:
  // Keras's hooks (Callback's), called by fit, evaluate and predict.
  void on_train_begin(const Logs&) override {
    if (!train_) train_ = std::make_unique<summary::SummaryWriter>(options.log_dir + "/train");
    profiled_ = false;
  }
  void on_train_batch_begin(std::int64_t, const Logs&) override {
    ++global_batch_;
    if (options.profile_batch.first > 0 && !profiled_ && global_batch_ == options.profile_batch.first) {
      profiler::start(options.log_dir);
      profiling_ = true;
    }
  }
  void on_train_batch_end(std::int64_t, const Logs& logs) override {
    if (options.update_freq > 0 && global_batch_ % options.update_freq == 0)
      for (const auto& [k, v] : logs) train_->scalar("batch_" + k, v, global_batch_);
    if (profiling_ && global_batch_ == options.profile_batch.second) stop_profile();
  }
  void on_epoch_end(std::int64_t epoch, const Logs& logs) override {
    for (const auto& [k, v] : logs) {
      if (k.rfind("val_", 0) == 0) {
        if (!validation_) validation_ = std::make_unique<summary::SummaryWriter>(options.log_dir + "/validation");
        validation_->scalar("epoch_" + k.substr(4), v, epoch);
      } else {
        train_->scalar("epoch_" + k, v, epoch);
      }
    }
    train_->scalar("epoch_learning_rate", model->learning_rate(), epoch);
    if (options.histogram_freq > 0 && epoch % options.histogram_freq == 0) model->write_histograms(*train_, epoch);
    train_->flush();
    if (validation_) validation_->flush();
  }
  void on_train_end(const Logs&) override {
    if (profiling_) stop_profile();
    train_->flush();
    if (validation_) validation_->flush();
  }

 private:
  void stop_profile() {
    profiler::stop();
    profiling_ = false;
    profiled_ = true;
  }
  std::unique_ptr<summary::SummaryWriter> train_, validation_;
  std::int64_t global_batch_ = 0;
  bool profiling_ = false, profiled_ = false;
};

/// @brief keras.callbacks.ReduceLROnPlateau: multiplies the learning rate by `factor` when
/// `monitor` has not improved for `patience` epochs, then waits `cooldown` epochs; never below
/// min_lr.
class ReduceLROnPlateau : public Callback {
 public:
  struct Options {
    std::string monitor = "val_loss";
    double factor = 0.1;
    std::int64_t patience = 10;
    int verbose = 0;
    std::string mode = "auto";
    double min_delta = 1e-4;
    std::int64_t cooldown = 0;
    double min_lr = 0;
  };
  /// @brief `ReduceLROnPlateau({.factor = 0.5, .patience = 2})`.
  ReduceLROnPlateau() : ReduceLROnPlateau(Options{}) {}
  explicit ReduceLROnPlateau(Options o) : options(std::move(o)), maximize_(detail::maximizes(options.mode, options.monitor, "ctflow::keras::callbacks::ReduceLROnPlateau")) {
    if (options.factor >= 1) throw value_error("ctflow::keras::callbacks::ReduceLROnPlateau: factor must be below 1; got " + std::to_string(options.factor));
  }
  Options options;

 protected:
  // Keras's hooks (Callback's), called by fit, evaluate and predict.
  void on_train_begin(const Logs&) override {
    wait_ = cooldown_ = 0;
    best_.reset();
  }
  void on_epoch_end(std::int64_t epoch, const Logs& logs) override {
    const auto current = detail::monitored(logs, options.monitor, "ctflow::keras::callbacks::ReduceLROnPlateau");
    if (!current) return;
    if (cooldown_ > 0) {
      --cooldown_;
      wait_ = 0;
    }
    if (!best_ || detail::improves(*current, *best_, options.min_delta, maximize_)) {
      best_ = *current;
      wait_ = 0;
    } else if (cooldown_ == 0 && ++wait_ >= options.patience) {
      const double old_lr = model->learning_rate();
      if (old_lr > options.min_lr) {
        const double new_lr = std::max(old_lr * options.factor, options.min_lr);
        model->set_learning_rate(new_lr);
        if (options.verbose > 0) std::printf("\nEpoch %lld: ReduceLROnPlateau reducing learning rate to %g.\n", static_cast<long long>(epoch + 1), new_lr);
        cooldown_ = options.cooldown;
        wait_ = 0;
      }
    }
  }

 private:
  bool maximize_;
  std::int64_t wait_ = 0, cooldown_ = 0;
  std::optional<double> best_;
};

/// @brief keras.callbacks.LearningRateScheduler: at each epoch's start, the learning rate becomes
/// schedule(epoch, current rate).
class LearningRateScheduler : public Callback {
 public:
  /// @brief `LearningRateScheduler([](std::int64_t epoch, double lr) { return epoch < 10 ? lr : lr * 0.9; })`.
  explicit LearningRateScheduler(std::function<double(std::int64_t, double)> schedule, int verbose = 0) : schedule_(std::move(schedule)), verbose_(verbose) {}

 protected:
  // Keras's hooks (Callback's), called by fit, evaluate and predict.
  void on_epoch_begin(std::int64_t epoch, const Logs&) override {
    const double lr = schedule_(epoch, model->learning_rate());
    if (!std::isfinite(lr)) throw value_error("ctflow::keras::callbacks::LearningRateScheduler: the schedule gave " + std::to_string(lr) + " for epoch " + std::to_string(epoch));
    model->set_learning_rate(lr);
    if (verbose_ > 0) std::printf("\nEpoch %lld: LearningRateScheduler setting learning rate to %g.\n", static_cast<long long>(epoch + 1), lr);
  }

 private:
  std::function<double(std::int64_t, double)> schedule_;
  int verbose_;
};

/// @brief keras.callbacks.CSVLogger: one row per epoch ("epoch" and the logs) to filename;
/// append continues a file a previous run wrote.
class CSVLogger : public Callback {
 public:
  /// @brief `CSVLogger("training.log")`.
  explicit CSVLogger(std::string filename, char separator = ',', bool append = false) : filename_(std::move(filename)), sep_(separator), append_(append) {}

 protected:
  // Keras's hooks (Callback's), called by fit, evaluate and predict.
  void on_train_begin(const Logs&) override {
    const bool had = append_ && std::filesystem::exists(filename_) && std::filesystem::file_size(filename_) > 0;
    detail::make_parent(filename_);
    file_.open(filename_, append_ ? std::ios::app : std::ios::trunc);
    if (!file_) throw io_error("ctflow::keras::callbacks::CSVLogger: cannot open '" + filename_ + "' for writing");
    header_written_ = had;
  }
  void on_epoch_end(std::int64_t epoch, const Logs& logs) override {
    if (!header_written_) {
      file_ << "epoch";
      for (const auto& [k, v] : logs) file_ << sep_ << k;
      file_ << "\n";
      header_written_ = true;
    }
    file_ << epoch;
    for (const auto& [k, v] : logs) {
      char b[64];
      std::snprintf(b, sizeof b, "%.17g", v);
      file_ << sep_ << b;
    }
    file_ << "\n" << std::flush;
    if (!file_) throw io_error("ctflow::keras::callbacks::CSVLogger: cannot write to '" + filename_ + "'");
  }
  void on_train_end(const Logs&) override { file_.close(); }

 private:
  std::string filename_;
  char sep_;
  bool append_, header_written_ = false;
  std::ofstream file_;
};

/// @brief keras.callbacks.TerminateOnNaN: stops training at the first batch whose loss is NaN or
/// infinite, naming the batch.
class TerminateOnNaN : public Callback {
 public:
  /// @brief The batch that stopped training, when one did.
  std::optional<std::int64_t> terminated_at{};

 protected:
  // Keras's hooks (Callback's), called by fit, evaluate and predict.
  void on_train_batch_end(std::int64_t batch, const Logs& logs) override {
    const auto it = logs.find("loss");
    if (it != logs.end() && !std::isfinite(it->second)) {
      std::cout << "Batch " << batch << ": Invalid loss, terminating training\n";
      terminated_at = batch;
      model->stop_training = true;
    }
  }
};

/// @brief keras.callbacks.LambdaCallback: functions for some hooks.
class LambdaCallback : public Callback {
 public:
  struct Options {
    std::function<void(std::int64_t, const Logs&)> on_epoch_begin{}, on_epoch_end{}, on_train_batch_begin{}, on_train_batch_end{};
    std::function<void(const Logs&)> on_train_begin{}, on_train_end{};
  };
  /// @brief `LambdaCallback({.on_epoch_end = [](std::int64_t epoch, const Logs& logs) { ... }})`.
  explicit LambdaCallback(Options o) : fns(std::move(o)) {}
  Options fns;

 protected:
  // Keras's hooks (Callback's), called by fit, evaluate and predict.
  void on_epoch_begin(std::int64_t e, const Logs& l) override { if (fns.on_epoch_begin) fns.on_epoch_begin(e, l); }
  void on_epoch_end(std::int64_t e, const Logs& l) override { if (fns.on_epoch_end) fns.on_epoch_end(e, l); }
  void on_train_batch_begin(std::int64_t b, const Logs& l) override { if (fns.on_train_batch_begin) fns.on_train_batch_begin(b, l); }
  void on_train_batch_end(std::int64_t b, const Logs& l) override { if (fns.on_train_batch_end) fns.on_train_batch_end(b, l); }
  void on_train_begin(const Logs& l) override { if (fns.on_train_begin) fns.on_train_begin(l); }
  void on_train_end(const Logs& l) override { if (fns.on_train_end) fns.on_train_end(l); }
};

}  // namespace ctflow::keras::callbacks
