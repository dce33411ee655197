// train::Checkpoint::restore of a damaged checkpoint file: names, dtypes and shapes checked, a
// tensor with a dyn extent resized; a refused restore must leave every object as it was.
#include <cstdio>
#include <string>

#include <ctflow/io/checkpoint.hpp>

#include "../unit/test_files.hpp"
#include "fuzz_common.hpp"

using namespace ctflow;

CTFLOW_FUZZ({
  static const std::string path = test_files::temp_dir("ctflow_restore_fuzz") + "/input";
  if (FILE* f = std::fopen((path + ".safetensors").c_str(), "wb")) {
    std::fwrite(data, 1, size, f);
    std::fclose(f);
  }
  Tensor<float, Shape<2, 3>> w;
  Tensor<float, Shape<dyn>> b({4});
  std::int64_t step = 7;
  for (std::size_t i = 0; i < w.size(); ++i) w.data()[i] = float(i);
  train::Checkpoint ckpt{{"w", w}, {"b", b}, {"step", step}};
  const auto unchanged = [&] { return step == 7 && b.size() == 4 && w.data()[5] == 5.f; };
  try {
    ckpt.restore(path, {.expect_partial = true});
  } catch (const shape_error&) {
    if (!unchanged()) __builtin_trap();  // a refused restore changed an object
  } catch (const value_error&) {
    if (!unchanged()) __builtin_trap();
  } catch (const io_error&) {
    if (!unchanged()) __builtin_trap();
    throw;
  }
})
