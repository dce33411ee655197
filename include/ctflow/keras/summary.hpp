#pragma once
/// @file
/// @brief Keras 3's model.summary() text: the same table (its box characters, its column widths
/// for the terminal's width, its word wrapping, the "Connected to" column of functional models)
/// and the same totals with their byte sizes, so that ctflow's summary of a network reads as
/// Keras's does. Models list their rows; the text is made by code compiled once.

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include <ctflow/detail/linkage.hpp>

namespace ctflow::keras {

/// @brief How model.summary prints: its line_length (0: the terminal's width, as Keras), where
/// the text goes (print_fn; standard output when empty), and whether a nested model's layers are
/// listed under it (expand_nested).
struct summary_options {
  int line_length = 0;
  std::function<void(const std::string&)> print_fn{};
  bool expand_nested = false;
};

namespace detail {

/// One row of a summary: "name (Class)", the output shape, the parameters, and for a functional
/// model the layers it is connected to ("dense[0][0], ...").
struct summary_row {
  std::string layer, shape, params, connected;
};

/// The terminal's width as Python's shutil.get_terminal_size sees it: $COLUMNS, else the width of
/// standard output's terminal, else 80.
CTFLOW_DECL int terminal_columns();
/// "1,234,567".
CTFLOW_DECL std::string thousands(std::size_t n);
/// An output shape as Keras prints it: "(None, 26, 26, 32)" (dyn extents are None).
CTFLOW_DECL std::string shape_text(const std::vector<std::size_t>& extents);
/// The whole text of model.summary(): `Model: "<name>"`, the table (three columns, or four with
/// "Connected to" when `connected`), and the totals of trainable and other parameters of
/// element_size bytes; printed as options say.
CTFLOW_DECL void print_summary(const std::string& model_name, const std::vector<summary_row>& rows, bool connected, std::size_t trainable,
                               std::size_t non_trainable, std::size_t element_size, const summary_options& options);

}  // namespace detail
}  // namespace ctflow::keras

#if !defined(CTFLOW_SEPARATE_COMPILATION)
#include <ctflow/keras/impl/summary.ipp>
#endif
