#pragma once
/// @brief tf.data.experimental.CsvDataset: records of CSV files as tuples of typed columns.
///
///     // columns: float (required), int64 (default 0), string (default "")
///     auto ds = data::CsvDataset<float, std::int64_t, std::string>(
///         "train.csv", {std::nullopt, 0, ""}, {.header = true});
///     for (auto& [x, n, name] : ds) ...   // Tensor<float, Shape<>>, Tensor<int64, Shape<>>, std::string
///
/// Fields may be quoted ("a,b", "say ""hi""", line breaks inside quotes); an empty field or one
/// equal to na_value takes the column's default, and is an error for a column without one.
/// Errors name the file, the line and the column.

#include <charconv>
#include <concepts>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include <ctflow/detail/file.hpp>
#include <ctflow/data/dataset.hpp>

namespace ctflow::data {

/// @brief CsvDataset's options, with TensorFlow's names and defaults.
struct csv_options {
  bool header = false;               ///< skip each file's first record
  char field_delim = ',';
  bool use_quote_delim = true;       ///< double quotes group a field
  std::string na_value = "";         ///< a field equal to this is missing
  std::vector<int> select_cols = {}; ///< the file columns to read, ascending (default: all)
  std::string compression_type = ""; ///< "" or "GZIP"
};

namespace detail {

template <class T> struct csv_cell { using type = Tensor<T, Shape<>>; };
template <> struct csv_cell<std::string> { using type = std::string; };

template <class... T> struct csv_source {
  using element_type = std::tuple<typename csv_cell<T>::type...>;
  static constexpr const char* what = "ctflow::data::CsvDataset";
  std::vector<std::string> files;
  std::tuple<std::optional<T>...> defaults;
  csv_options opt;

  std::int64_t cardinality() const { return unknown_cardinality; }

  struct iterator {
    std::shared_ptr<const csv_source> self;
    std::size_t file = 0;
    std::unique_ptr<ctflow::detail::input_file> in{};
    std::vector<char> buf = std::vector<char>(1 << 16);
    std::size_t at = 0, end = 0;
    std::uint64_t line = 1, record_line = 1;
    std::vector<std::string> fields{};
    std::size_t nfields = 0;

    int get() {
      const int c = peek();
      if (c != -1) ++at;
      return c;
    }
    int peek() {
      if (at == end) {
        end = in->read(buf.data(), buf.size());
        at = 0;
        if (end == 0) return -1;
      }
      return static_cast<unsigned char>(buf[at]);
    }
    [[noreturn]] void fail(const std::string& why, int column = -1) const {
      throw io_error(std::string(what) + ": " + self->files[file - 1] + ":" + std::to_string(record_line) + ": " +
                     (column >= 0 ? "column " + std::to_string(column) + ": " : "") + why);
    }

    /// Splits the next record into fields; false at the end of the file. Blank lines are skipped.
    bool read_record() {
      const auto& o = self->opt;
      for (;;) {
        nfields = 0;
        record_line = line;
        int c = get();
        if (c == -1) return false;
        if (c == '\n' || (c == '\r' && peek() == '\n')) {
          if (c == '\r') get();
          ++line;
          continue;
        }
        for (;;) {  // one field per turn
          if (nfields == fields.size()) fields.emplace_back();
          std::string& f = fields[nfields++];
          f.clear();
          if (o.use_quote_delim && c == '"') {
            for (;;) {
              c = get();
              if (c == -1) fail("unterminated quoted field", int(nfields) - 1);
              if (c == '\n') ++line;
              if (c == '"') {
                if (peek() == '"') { get(); f.push_back('"'); continue; }
                c = get();
                break;
              }
              f.push_back(char(c));
            }
          } else {
            while (c != -1 && c != o.field_delim && c != '\n' && !(c == '\r' && peek() == '\n')) {
              if (o.use_quote_delim && c == '"') fail("quote inside an unquoted field", int(nfields) - 1);
              f.push_back(char(c));
              c = get();
            }
          }
          if (c == o.field_delim) { c = get(); continue; }
          if (c == '\r') c = get();
          if (c == '\n') ++line;
          if (c == '\n' || c == -1) return true;
          fail("a quoted field must be followed by a delimiter or the end of the line", int(nfields) - 1);
        }
      }
    }

    template <class V> void convert(const std::string& s, int column, const std::optional<V>& dflt, typename csv_cell<V>::type& out) {
      if constexpr (!std::is_same_v<V, std::string>)
        if (out.size() != 1) out = Tensor<V, Shape<>>();  // new, or moved from by a map
      const bool missing = s.empty() || (!self->opt.na_value.empty() && s == self->opt.na_value);
      if (missing) {
        if (!dflt) fail("field is empty and the column has no default (record_defaults)", column);
        if constexpr (std::is_same_v<V, std::string>) out = *dflt;
        else out.data()[0] = *dflt;
        return;
      }
      if constexpr (std::is_same_v<V, std::string>) out = s;
      else {
        V v{};
        const char* b = s.data();
        const char* e = b + s.size();
        if (b != e && *b == '+') ++b;
        const auto r = std::from_chars(b, e, v);
        if (r.ec != std::errc() || r.ptr != e)
          fail("cannot parse \"" + s + "\" as " + dtype_name<V>() + (r.ec == std::errc::result_out_of_range ? " (out of range)" : ""), column);
        out.data()[0] = v;
      }
    }

    bool next(element_type& out) {
      const auto& o = self->opt;
      for (;;) {
        if (!in) {
          if (file == self->files.size()) return false;
          in = std::make_unique<ctflow::detail::input_file>(self->files[file++], ctflow::detail::parse_compression(what, o.compression_type), what);
          at = end = 0;
          line = 1;
          if (o.header && !read_record()) { in.reset(); continue; }
        }
        if (read_record()) break;
        in.reset();
      }
      constexpr std::size_t n = sizeof...(T);
      if (o.select_cols.empty()) {
        if (nfields != n) fail("expected " + std::to_string(n) + " fields, got " + std::to_string(nfields));
      } else if (std::size_t(o.select_cols.back()) >= nfields) {
        fail("expected at least " + std::to_string(o.select_cols.back() + 1) + " fields (select_cols), got " + std::to_string(nfields));
      }
      [&]<std::size_t... I>(std::index_sequence<I...>) {
        (convert(fields[o.select_cols.empty() ? I : std::size_t(o.select_cols[I])], o.select_cols.empty() ? int(I) : o.select_cols[I],
                 std::get<I>(self->defaults), std::get<I>(out)), ...);
      }(std::index_sequence_for<T...>{});
      return true;
    }
  };
  iterator iter() const {
    return iterator{std::make_shared<const csv_source>(*this)};
  }
};

}  // namespace detail

/// @brief tf.data.experimental.CsvDataset over one or more files. T... are the column dtypes
/// (float, double, int32, int64, std::string); record_defaults gives each column's default, or
/// std::nullopt for a required column.
template <class... T>
auto CsvDataset(std::vector<std::string> filenames, std::tuple<std::optional<T>...> record_defaults, csv_options options = {}) {
  static_assert(sizeof...(T) > 0, "ctflow::data::CsvDataset: give at least one column");
  static_assert(((std::is_same_v<T, float> || std::is_same_v<T, double> || std::is_same_v<T, std::int32_t> ||
                  std::is_same_v<T, std::int64_t> || std::is_same_v<T, std::string>) && ...),
                "ctflow::data::CsvDataset: column dtypes are float, double, int32, int64 and std::string");
  if (!options.select_cols.empty()) {
    if (options.select_cols.size() != sizeof...(T))
      throw value_error("ctflow::data::CsvDataset: select_cols names " + std::to_string(options.select_cols.size()) +
                        " columns but record_defaults has " + std::to_string(sizeof...(T)));
    for (std::size_t i = 0; i < options.select_cols.size(); ++i)
      if (options.select_cols[i] < 0 || (i > 0 && options.select_cols[i] <= options.select_cols[i - 1]))
        throw value_error("ctflow::data::CsvDataset: select_cols must be non-negative and strictly ascending");
  }
  (void)ctflow::detail::parse_compression("ctflow::data::CsvDataset", options.compression_type);
  return Dataset(detail::csv_source<T...>{std::move(filenames), std::move(record_defaults), std::move(options)});
}
/// @brief CsvDataset over one file. A braced list of names, `CsvDataset<T...>({"a.csv"}, ...)`,
/// takes the overload above: this one deduces the name's type, which a braced list cannot give.
template <class... T, class File> requires std::constructible_from<std::string, const File&>
auto CsvDataset(const File& filename, std::tuple<std::optional<T>...> record_defaults, csv_options options = {}) {
  return CsvDataset<T...>(std::vector<std::string>{std::string(filename)}, std::move(record_defaults), std::move(options));
}

}  // namespace ctflow::data
