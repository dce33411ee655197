#pragma once
// Definitions of data/idx.hpp (ctflow::data's compiled part; see detail/linkage.hpp).

#include <ctflow/data/idx.hpp>

namespace ctflow::datasets::detail {

CTFLOW_DECL std::pair<mnist_split, mnist_split> load_mnist_format(const std::string& dir, const char* what) {
  const auto path = [&](const std::string& stem) {
    const std::string base = dir + "/" + stem;
    if (file_exists(base + ".gz")) return base + ".gz";
    if (file_exists(base)) return base;
    throw io_error(std::string(what) + ": neither " + base + ".gz nor " + base + " can be read");
  };
  const auto split = [&](const char* images, const char* labels) {
    auto x = data::read_idx<std::uint8_t, mnist_images::shape_type>(path(images));  // [n,28,28] checked there
    auto y = data::read_idx<std::uint8_t, mnist_labels::shape_type>(path(labels));
    if (x.dims()[0] != y.dims()[0])
      throw io_error(std::string(what) + ": " + std::to_string(x.dims()[0]) + " images but " + std::to_string(y.dims()[0]) + " labels in " + dir);
    return mnist_split{std::move(x), std::move(y)};
  };
  return {split("train-images-idx3-ubyte", "train-labels-idx1-ubyte"), split("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")};
}

}  // namespace ctflow::datasets::detail
