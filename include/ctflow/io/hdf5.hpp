#pragma once
/// @file
/// @brief A reader of HDF5 files (h5py's `File` for reading): groups, datasets and attributes of
/// the files h5py and libhdf5 write (superblock versions 0 to 3, object headers of both versions,
/// symbol-table, compact and dense groups, compact, contiguous and chunked datasets with the
/// deflate, shuffle and Fletcher-32 filters, numbers and strings, variable-length strings in the
/// global heap). Keras's weight files are read through it.
///
/// It trusts nothing in the file: every address, size and count is checked against the file's
/// length and against what the structure can hold, every walk of a tree or a chain of blocks is
/// bounded and cannot loop, checksums are verified where the format has them, and a damaged file
/// is an io_error naming the file, the offset and the reason, never a crash, a hang or an
/// allocation the file's own size does not justify. It needs no libhdf5.
///
///     io::hdf5::File f("model.weights.h5");
///     for (const auto& k : f.keys("layers")) ...            // group members
///     auto name = f.attribute_strings("layers/dense/vars", "name");
///     auto info = f.dataset("layers/dense/vars/0");         // shape and element type
///     std::vector<float> kernel(info.count());
///     f.read("layers/dense/vars/0", kernel.data());         // converted to float

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <ctflow/core/errors.hpp>
#include <ctflow/detail/file.hpp>
#include <ctflow/detail/linkage.hpp>

namespace ctflow::io::hdf5 {

/// @brief The type of a dataset's or an attribute's elements.
struct ElementType {
  enum class Kind { integer, floating, string, other };
  Kind kind = Kind::other;
  std::size_t size = 0;          ///< bytes of one element as stored
  bool is_signed = false;        ///< integers
  bool big_endian = false;       ///< numbers
  bool variable_length = false;  ///< strings held in the global heap
  int string_padding = 0;        ///< fixed-length strings: 0 null-terminated, 1 null-padded, 2 space-padded
  /// @brief NumPy's name of it ("float32", "int64", "string", "other").
  std::string name() const;
};

/// @brief A dataset's or an attribute's shape (empty: a scalar) and element type.
struct ValueInfo {
  std::vector<std::uint64_t> shape;
  ElementType type;
  bool null = false;  ///< a null dataspace: no value at all
  /// @brief The number of elements.
  std::uint64_t count() const {
    if (null) return 0;
    std::uint64_t n = 1;
    for (auto e : shape) n *= e;
    return n;
  }
};

namespace detail {
struct file_state;
}  // namespace detail

/// @brief An HDF5 file opened for reading. Paths are '/'-separated from the root group ("" or
/// "/" is the root itself).
class File {
 public:
  /// @brief Maps and reads the file at path (its superblock and root group).
  CTFLOW_DECL explicit File(const std::string& path);
  /// @brief Reads a file held in memory (which must outlive the File); name names it in errors.
  CTFLOW_DECL File(std::span<const std::uint8_t> bytes, std::string name);
  CTFLOW_DECL ~File();
  File(File&&) noexcept;
  File& operator=(File&&) noexcept;

  /// @brief The name errors give the file.
  CTFLOW_DECL const std::string& name() const;
  /// @brief Whether path names an object (a group or a dataset).
  CTFLOW_DECL bool contains(std::string_view path) const;
  /// @brief Whether path names a group / a dataset.
  CTFLOW_DECL bool is_group(std::string_view path) const;
  CTFLOW_DECL bool is_dataset(std::string_view path) const;
  /// @brief The names of a group's members, sorted.
  CTFLOW_DECL std::vector<std::string> keys(std::string_view group) const;
  /// @brief The names of an object's attributes, in the order the file holds them.
  CTFLOW_DECL std::vector<std::string> attribute_names(std::string_view path) const;
  /// @brief Whether the object at path has attribute `name`.
  CTFLOW_DECL bool has_attribute(std::string_view path, std::string_view name) const;
  /// @brief An attribute's shape and element type.
  CTFLOW_DECL ValueInfo attribute(std::string_view path, std::string_view name) const;
  /// @brief The strings of a string attribute (a scalar gives one); an attribute of another
  /// type, or a null one, gives none.
  CTFLOW_DECL std::vector<std::string> attribute_strings(std::string_view path, std::string_view name) const;
  /// @brief A dataset's shape and element type.
  CTFLOW_DECL ValueInfo dataset(std::string_view path) const;
  /// @brief Reads a numeric dataset into dst (dataset(path).count() elements), converted.
  CTFLOW_DECL void read(std::string_view path, float* dst) const;
  CTFLOW_DECL void read(std::string_view path, double* dst) const;
  CTFLOW_DECL void read(std::string_view path, std::int64_t* dst) const;

 private:
  std::unique_ptr<detail::file_state> s_;
};

}  // namespace ctflow::io::hdf5

#if !defined(CTFLOW_SEPARATE_COMPILATION)
#include <ctflow/io/impl/hdf5.ipp>
#endif
