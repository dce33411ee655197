// Keras's weight files as load_weights reads them: Keras 3's .weights.h5, tf.keras's legacy .h5
// and .keras archives (zip, config.json, the HDF5 member), told apart by their bytes, loaded into
// a model of Keras's BatchNormalization test network (Dense 8->16, BatchNormalization, Dense
// 16->2) so that good files load whole. A failed load must leave every weight as it was; an HDF5
// file is also walked whole through io::hdf5 (every group, attribute and dataset). Built with
// only the compiled parts it needs (no layer templates, no libhdf5). The same bytes are imported
// as a model (keras::import_header's reading of the config and the weights, or of an ONNX graph)
// and its header's text written.
#define CTFLOW_SEPARATE_COMPILATION
#include <cstring>
#include <vector>

#include <ctflow/detail/impl/file.ipp>
#include <ctflow/detail/impl/zip.ipp>
#include <ctflow/io/impl/hdf5.ipp>
#include <ctflow/io/impl/safetensors.ipp>
#include <ctflow/keras/impl/embedded_header.ipp>
#include <ctflow/keras/impl/import.ipp>
#include <ctflow/keras/impl/onnx.ipp>
#include <ctflow/keras/impl/saving.ipp>

#include "fuzz_common.hpp"

namespace {

namespace k = ctflow::keras::detail;
namespace h5 = ctflow::io::hdf5;

struct network {
  std::vector<float> w[8];
  std::vector<k::saved_layer> layers;
  network() {
    const std::vector<std::vector<std::size_t>> shapes = {{8, 16}, {16}, {16}, {16}, {16}, {16}, {16, 2}, {2}};
    for (int i = 0; i < 8; ++i) {
      std::size_t n = 1;
      for (auto e : shapes[std::size_t(i)]) n *= e;
      w[i].assign(n, 0.25f * float(i + 1));
    }
    const auto weight = [&](const char* name, int i) { return k::saved_layer::weight{name, shapes[std::size_t(i)], w[i].data(), 'f'}; };
    k::saved_layer dense{"Dense", "dense", "", {std::size_t(-1), 8}, {weight("kernel", 0), weight("bias", 1)}, {}, false};
    k::saved_layer norm{"BatchNormalization", "batch_normalization", "", {std::size_t(-1), 16},
                        {weight("gamma", 2), weight("beta", 3), weight("moving_mean", 4), weight("moving_variance", 5)}, {}, false};
    k::saved_layer dense1{"Dense", "dense_1", "", {std::size_t(-1), 16}, {weight("kernel", 6), weight("bias", 7)}, {}, false};
    layers = {dense, norm, dense1};
  }
};

std::size_t walk(const h5::File& f, const std::string& path, int depth) {
  std::size_t n = 0;
  for (const auto& a : f.attribute_names(path)) n += f.attribute(path, a).count() + f.attribute_strings(path, a).size();
  if (depth > 6) return n;
  for (const auto& key : f.keys(path)) {
    const std::string p = path.empty() ? key : path + "/" + key;
    if (!f.contains(p)) continue;
    if (f.is_dataset(p)) {
      const auto info = f.dataset(p);
      if (info.count() < (1u << 16) && (info.type.kind == h5::ElementType::Kind::floating || info.type.kind == h5::ElementType::Kind::integer)) {
        std::vector<double> v(info.count());
        f.read(p, v.data());
        n += v.size();
      }
    } else if (f.is_group(p)) {
      n += walk(f, p, depth + 1);
    }
  }
  return n;
}

}  // namespace

CTFLOW_FUZZ({
  const std::span<const std::uint8_t> file(data, size);
  network net;
  network before;
  try {
    k::load_weights_bytes(file, "fuzz", net.layers, {});
  } catch (const ctflow::io_error&) {
    for (int i = 0; i < 8; ++i)
      if (net.w[i] != before.w[i]) __builtin_trap();  // a failed load changed a weight
  } catch (const ctflow::shape_error&) {
    for (int i = 0; i < 8; ++i)
      if (net.w[i] != before.w[i]) __builtin_trap();
  }
  try {
    (void)k::embedded_header_text(k::imported_model(file, "fuzz"), {});
  } catch (const ctflow::io_error&) {
  }
  if (size < 4 || data[0] != 'P') (void)walk(h5::File(file, "fuzz.h5"), "", 0);
})
