#pragma once
// Definitions of keras/summary.hpp (ctflow::keras's compiled part; see detail/linkage.hpp).

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string_view>

#include <ctflow/core/shape.hpp>
#include <ctflow/keras/summary.hpp>

namespace ctflow::keras::detail {

CTFLOW_DECL int terminal_columns() {
  if (const char* c = std::getenv("COLUMNS")) {
    const int n = std::atoi(c);
    if (n > 0) return n;
  }
  winsize ws{};
  if (::ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return ws.ws_col;
  return 80;
}

/// Python's round (half to even) of a non-negative x.
inline long round_half_even(double x) {
  const double f = std::floor(x), r = x - f;
  if (r > 0.5) return long(f) + 1;
  if (r < 0.5) return long(f);
  return long(f) % 2 == 0 ? long(f) : long(f) + 1;
}

/// Code points of UTF-8 text (the box characters and the ellipsis are one column each).
inline std::size_t columns(std::string_view s) {
  std::size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

/// Rich's word wrap of a cell's text into lines of at most `width` columns: words move to the next
/// line whole; a word longer than a line is cut, its end replaced by an ellipsis.
inline std::vector<std::string> wrap(const std::string& text, std::size_t width) {
  std::vector<std::string> lines;
  std::string line;
  std::size_t at = 0;
  while (at <= text.size()) {
    std::size_t end = text.find(' ', at);
    if (end == std::string::npos) end = text.size();
    std::string word = text.substr(at, end - at);
    at = end + 1;
    if (word.size() > width) word = word.substr(0, width > 0 ? width - 1 : 0) + "\u2026";
    if (line.empty()) line = word;
    else if (columns(line) + 1 + columns(word) <= width) line += " " + word;
    else {
      lines.push_back(line);
      line = word;
    }
    if (end == text.size()) break;
  }
  lines.push_back(line);
  return lines;
}

inline std::string repeat(std::string_view s, std::size_t n) {
  std::string r;
  for (std::size_t i = 0; i < n; ++i) r += s;
  return r;
}

/// Keras's table drawn as rich draws it in `width` columns: header cells, rows of cells, which
/// columns align right, Keras's column boundaries as fractions of the width.
inline std::string render_table(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows, const std::vector<bool>& right,
                                const std::vector<double>& positions, int width) {
  const std::size_t n = header.size();
  std::vector<long> w(n);
  long before = 0;
  for (std::size_t i = 0; i < n; ++i) {
    w[i] = long(positions[i] * width) - before;
    before += w[i];
  }
  // Rich pads each cell by one column on both sides, then gives the excess back evenly.
  long total = 0;
  for (auto& x : w) total += (x += 2);
  long excess = total - (width - long(n) - 1);
  if (excess > 0) {
    long ratio = long(n);
    for (std::size_t i = 0; i < n; ++i) {
      const long d = std::min(w[i], round_half_even(double(excess) / double(ratio)));
      w[i] -= d;
      excess -= d;
      --ratio;
    }
  }
  const auto rule = [&](const char* left, const char* fill, const char* mid, const char* end) {
    std::string s = left;
    for (std::size_t i = 0; i < n; ++i) s += repeat(fill, std::size_t(w[i])) + (i + 1 < n ? mid : end);
    return s + "\n";
  };
  const auto row = [&](const std::vector<std::string>& cells, const char* bar) {
    std::vector<std::vector<std::string>> lines(n);
    std::size_t height = 1;
    for (std::size_t i = 0; i < n; ++i) {
      lines[i] = wrap(cells[i], std::size_t(std::max(0L, w[i] - 2)));
      height = std::max(height, lines[i].size());
    }
    std::string s;
    for (std::size_t k = 0; k < height; ++k) {
      s += bar;
      for (std::size_t i = 0; i < n; ++i) {
        const std::string text = k < lines[i].size() ? lines[i][k] : "";
        const std::size_t room = std::size_t(std::max(0L, w[i] - 2)), pad = room - std::min(room, columns(text));
        s += ' ';
        if (right[i]) s.append(pad, ' ').append(text);
        else s.append(text).append(pad, ' ');
        s.append(" ").append(bar);
      }
      s += "\n";
    }
    return s;
  };
  std::string out = rule("\u250f", "\u2501", "\u2533", "\u2513");
  out += row(header, "\u2503");
  out += rule("\u2521", "\u2501", "\u2547", "\u2529");
  for (std::size_t r = 0; r < rows.size(); ++r) {
    out += row(rows[r], "\u2502");
    out += r + 1 < rows.size() ? rule("\u251c", "\u2500", "\u253c", "\u2524") : rule("\u2514", "\u2500", "\u2534", "\u2518");
  }
  return out;
}

CTFLOW_DECL std::string thousands(std::size_t n) {
  const std::string digits = std::to_string(n);
  std::string s;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) s += ',';
    s += digits[i];
  }
  return s;
}
/// Keras's readable_memory_size: "879.04 KB".
inline std::string readable_size(double bytes) {
  static constexpr const char* units[] = {"B", "KB", "MB", "GB", "TB", "PB"};
  std::size_t u = 0;
  while (u + 1 < std::size(units) && bytes / 1024 >= 1) {
    bytes /= 1024;
    ++u;
  }
  char b[64];
  std::snprintf(b, sizeof b, "%.2f %s", bytes, units[u]);
  return b;
}
CTFLOW_DECL std::string shape_text(const std::vector<std::size_t>& e) {
  std::string s = "(";
  for (std::size_t i = 0; i < e.size(); ++i) s += (i ? ", " : "") + (e[i] == dyn ? std::string("None") : std::to_string(e[i]));
  return s + (e.size() == 1 ? ",)" : ")");
}

/// The lines under the table: total, trainable and non-trainable parameters and their sizes.
inline std::string summary_totals(std::size_t trainable, std::size_t non_trainable, std::size_t element_size) {
  const auto line = [&](const char* what, std::size_t n) {
    std::string s(" ");
    s.append(what).append(": ").append(thousands(n)).append(" (").append(readable_size(double(n * element_size))).append(")\n");
    return s;
  };
  return line("Total params", trainable + non_trainable) + line("Trainable params", trainable) + line("Non-trainable params", non_trainable);
}

CTFLOW_DECL void print_summary(const std::string& model_name, const std::vector<summary_row>& rows, bool connected, std::size_t trainable,
                               std::size_t non_trainable, std::size_t element_size, const summary_options& options) {
  const int width = options.line_length > 0 ? options.line_length : std::min(connected ? 108 : 88, terminal_columns() - 4);
  std::vector<std::string> header{"Layer (type)", "Output Shape", "Param #"};
  std::vector<bool> right{false, false, true};
  std::vector<double> positions{0.45, 0.80, 1.0};
  if (connected) {
    header.push_back("Connected to");
    right.push_back(false);
    positions = {0.3, 0.56, 0.74, 1.0};
  }
  std::vector<std::vector<std::string>> cells;
  for (const auto& r : rows) {
    cells.push_back({r.layer, r.shape, r.params});
    if (connected) cells.back().push_back(r.connected);
  }
  const std::string text = "Model: \"" + model_name + "\"\n" + render_table(header, cells, right, positions, width) +
                           summary_totals(trainable, non_trainable, element_size);
  if (options.print_fn) options.print_fn(text);
  else std::cout << text << std::flush;
}

}  // namespace ctflow::keras::detail
