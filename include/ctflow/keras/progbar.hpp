#pragma once
/// @file
/// @brief keras.utils.Progbar: Keras 3's progress bar, as `fit`, `evaluate` and `predict` draw it.
///
///     Epoch 1/3
///     844/844 ━━━━━━━━━━━━━━━━━━━━ 14s 16ms/step - accuracy: 0.8515 - loss: 0.4134
///
/// On a terminal (verbose 1) the line is redrawn in place, with the ETA while the epoch runs;
/// when the output is not a terminal only the finished line is written (one line per epoch, no
/// escape codes). Verbose 2 writes `844/844 - 14s - 16ms/step - accuracy: ...` at the end.

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <iostream>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <unistd.h>

namespace ctflow::keras::utils {

/// @brief The progress bar of Keras 3 (keras.utils.Progbar with every metric stateful: values are
/// shown as given).
class Progbar {
 public:
  /// @brief target: the steps of the pass (nullopt: unknown); verbose 1 (the bar) or 2 (a line at
  /// the end); out: where it writes (std::cout); dynamic: redraw in place (default: whether out is
  /// std::cout and standard output is a terminal).
  explicit Progbar(std::optional<std::int64_t> target, int width = 20, int verbose = 1, double interval = 0.05, std::string unit_name = "step",
                   std::ostream* out = nullptr, std::optional<bool> dynamic = std::nullopt)
      : target_(target), width_(width), verbose_(verbose), interval_(interval), unit_(std::move(unit_name)), out_(out ? out : &std::cout),
        dynamic_(dynamic ? *dynamic : (out_ == &std::cout && ::isatty(STDOUT_FILENO) == 1)) {
    start_ = clock();
  }

  /// @brief The clock in seconds (tests set a fixed one); read at construction and each update.
  std::function<double()> clock = [] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  };
  /// @brief Restarts the clock of the pass (after `clock` is replaced).
  void restart() {
    start_ = clock();
    after_first_.reset();
    last_update_ = 0;
  }

  /// @brief The steps of the pass, once known (a dataset of unknown length, after its first pass).
  void set_target(std::int64_t target) { target_ = target; }

  /// @brief Keras's Progbar.update(current, values, finalize): step `current` is done; values are
  /// the logs to show (name, value), in order. finalize (default: current reached the target)
  /// writes the finished line.
  void update(std::int64_t current, const std::vector<std::pair<std::string, double>>& values = {}, std::optional<bool> finalize = std::nullopt) {
    const bool done = finalize ? *finalize : (target_ && current >= *target_);
    for (const auto& [k, v] : values) {
      if (!values_.count(k)) order_.push_back(k);
      values_[k] = v;
    }
    const double now = clock();
    const double per_unit = step_duration(current, now);
    if (verbose_ == 1) {
      if (!done && (now - last_update_ < interval_ || !dynamic_)) return;
      std::string message;
      if (dynamic_) message = std::string(std::size_t(prev_width_), '\b') + "\r";
      std::string bar, info;
      std::size_t special = 0;
      if (target_ && *target_ > 0) {
        const int digits = int(std::log10(double(*target_))) + 1;
        char count[64];
        std::snprintf(count, sizeof count, "%*lld/%lld", digits, static_cast<long long>(current), static_cast<long long>(*target_));
        const int filled = int(double(width_) * double(current) / double(*target_));
        bar = bold(count) + " ";
        special += dynamic_ ? 8 : 0;
        if (filled > 0) {
          bar += color("\33[32m", repeat(filled));
          special += dynamic_ ? 9 : 0;
        }
        bar += color("\33[37m", repeat(width_ - filled));
        special += dynamic_ ? 9 : 0;
      } else {
        char count[64];
        std::snprintf(count, sizeof count, "%7lld/Unknown", static_cast<long long>(current));
        bar = count;
      }
      if (target_ && *target_ > 0 && !done) {
        const double eta = per_unit * double(*target_ - current);
        char e[64];
        if (eta > 3600)
          std::snprintf(e, sizeof e, "%d:%02d:%02d", int(eta / 3600), int(std::fmod(eta, 3600) / 60), int(std::fmod(eta, 60)));
        else if (eta > 60)
          std::snprintf(e, sizeof e, "%d:%02d", int(eta / 60), int(std::fmod(eta, 60)));
        else
          std::snprintf(e, sizeof e, "%ds", int(eta));
        info = " " + bold(e);
      } else {
        info = " " + bold(seconds(now - start_));
      }
      special += dynamic_ ? 8 : 0;
      info += format_time(per_unit) + format_values(true);
      const std::int64_t total_width = std::int64_t(utf8_length(bar) + utf8_length(info) - special);
      message += bar + info;
      if (prev_width_ > total_width) message += std::string(std::size_t(prev_width_ - total_width), ' ');
      if (done) message += "\n";
      *out_ << message << std::flush;
      prev_width_ = total_width;
    } else if (verbose_ == 2 && done && target_ && *target_ > 0) {
      const int digits = int(std::log10(double(*target_))) + 1;
      char count[64];
      std::snprintf(count, sizeof count, "%*lld/%lld", digits, static_cast<long long>(current), static_cast<long long>(*target_));
      *out_ << count << " - " << seconds(now - start_) << " -" << format_time(per_unit) << format_values(false) << "\n" << std::flush;
    }
    last_update_ = now;
  }

 private:
  static std::string repeat(int n) {
    std::string s;
    for (int i = 0; i < n; ++i) s += "\u2501";  // ━
    return s;
  }
  static std::size_t utf8_length(const std::string& s) {
    std::size_t n = 0;
    for (unsigned char c : s) n += (c & 0xC0) != 0x80;
    return n;
  }
  std::string bold(const std::string& s) const { return dynamic_ ? "\x1b[1m" + s + "\x1b[0m" : s; }
  std::string color(const char* code, const std::string& s) const { return dynamic_ ? code + s + "\x1b[0m" : s; }
  static std::string seconds(double s) {
    char b[64];
    std::snprintf(b, sizeof b, "%.0fs", s);
    return b;
  }
  std::string format_time(double per_unit) const {
    char b[96];
    if (per_unit >= 1 || per_unit == 0) std::snprintf(b, sizeof b, " %.0fs/%s", per_unit, unit_.c_str());
    else if (per_unit >= 1e-3) std::snprintf(b, sizeof b, " %.0fms/%s", per_unit * 1e3, unit_.c_str());
    else std::snprintf(b, sizeof b, " %.0fus/%s", per_unit * 1e6, unit_.c_str());
    return b;
  }
  std::string format_values(bool absolute) const {
    std::string s;
    for (const auto& k : order_) {
      const double v = values_.at(k);
      char b[64];
      std::snprintf(b, sizeof b, (absolute ? std::abs(v) : v) > 1e-3 ? " %.4f" : " %.4e", v);
      s += " - " + k + ":" + b;
    }
    return s;
  }
  /// Keras's estimate: the time since the first step over the steps after it.
  double step_duration(std::int64_t current, double now) {
    if (current == 0) return 0;
    const double t = after_first_ && current > 1 ? (now - *after_first_) / double(current - 1) : (now - start_) / double(current);
    if (current == 1) after_first_ = now;
    return t;
  }

  std::optional<std::int64_t> target_;
  int width_, verbose_;
  double interval_;
  std::string unit_;
  std::ostream* out_;
  bool dynamic_;
  double start_ = 0, last_update_ = 0;
  std::optional<double> after_first_;
  std::int64_t prev_width_ = 0;
  std::vector<std::string> order_;
  std::map<std::string, double> values_;
};

}  // namespace ctflow::keras::utils
