// Runs networks that keras::export_header or ctflow-import wrote, each header in a namespace of
// its own with its test case, on the target the program is built for. The unit that includes this
// file first includes the headers and lists their namespaces: `#define NETS X(mlp) X(cnn)`. For
// each network: each test input's outputs against the source model's (within 1e-4 of them,
// relative to the largest), each class (the largest output) against the source model's, and no
// heap allocation. Prints the classes, the arena and the stack used; exits 0 when everything
// agrees. Built with NET_ARGUMENTS (a hosted target), `program NAME` runs the network NAME alone.
#include <cstddef>
#include <cstring>
#include <type_traits>

#include "target.hpp"

// Built with NET_DEVICE (ctflow::cpu), the networks run on that device, on NET_THREADS threads.
#ifdef NET_DEVICE
#include <ctflow/backend/cpu/cpu.hpp>
#include <ctflow/config.hpp>
#define NET_DEVICE_OF(ns) NET_DEVICE
#else
#define NET_DEVICE_OF(ns) ns::device
#endif

namespace {

template <class T> T absolute(T v) { return v < 0 ? -v : v; }

template <class Model, class Device, class T = typename Model::value_type>
bool run(const char* name, const std::type_identity_t<T>* test_inputs, const std::type_identity_t<T>* test_outputs, std::size_t test_count) {
  constexpr std::size_t inputs = Model::input_shape::static_size;
  constexpr std::size_t outputs = Model::output_shape::static_size;
  constexpr std::size_t classes = Model::output_shape::extents[std::size_t(Model::output_shape::rank - 1)];
  static T y[outputs];  // not on the stack, whose peak is the network's
  const auto class_of = [](const T* v) {
    std::size_t best = 0;
    for (std::size_t i = 1; i < classes; ++i)
      if (v[i] > v[best]) best = i;
    return best;
  };
  target::write(name);
  target::write("\n");
  // A warm call first where the device keeps memory between calls (the cpu device's caches and
  // its threads).
  if constexpr (!std::is_same_v<Device, ctflow::reference>) Model::template predict<Device>(test_inputs, y);
  const unsigned long heap = target::heap_allocations();
  bool ok = true;
  unsigned long wrong = 0;
  // NET_TESTS: the test inputs to run, where running all takes too long (the CNN on a Cortex-M4,
  // whose double-precision sums are software's).
#ifdef NET_TESTS
  const std::size_t count = NET_TESTS < test_count ? NET_TESTS : test_count;
#else
  const std::size_t count = test_count;
#endif
  unsigned long long ticks = 0;
  target::write("classes:");
  for (std::size_t t = 0; t < count; ++t) {
    const unsigned long long begin = target::ticks();
    Model::template predict<Device>(test_inputs + t * inputs, y);
    ticks += target::ticks() - begin;
    const T* expected = test_outputs + t * outputs;
    T scale = 0;
    for (std::size_t i = 0; i < outputs; ++i) scale = absolute(expected[i]) > scale ? absolute(expected[i]) : scale;
    for (std::size_t i = 0; i < outputs; ++i)
      if (!(absolute(y[i] - expected[i]) <= T(1e-4) * (scale > 1 ? scale : T(1)))) ++wrong;
    for (std::size_t r = 0; r < outputs / classes; ++r) {
      const std::size_t c = class_of(y + r * classes);
      target::write(" ");
      target::write_number(c);
      if (c != class_of(expected + r * classes)) {
        target::write("(expected ");
        target::write_number(class_of(expected + r * classes));
        target::write(")");
        ok = false;
      }
    }
  }
  const unsigned long allocated = target::heap_allocations() - heap;
  target::write("\noutputs off by more than 1e-4: ");
  target::write_number(wrong);
  target::write("\nheap allocations: ");
  target::write_number(allocated);
  target::write("\narena: ");
  target::write_number(Model::arena_bytes);
  target::write(" bytes\nstack: ");
  target::write_number(target::peak_stack());
  target::write(" bytes\n");
  if (const std::size_t flash = target::flash_bytes()) {
    target::write("flash: ");
    target::write_number(flash);
    target::write(" bytes\nram: ");
    target::write_number(target::static_ram_bytes() + target::peak_stack());
    target::write(" bytes (static ");
    target::write_number(target::static_ram_bytes());
    target::write(", stack ");
    target::write_number(target::peak_stack());
    target::write(")\n");
  }
  if (const unsigned long long hz = target::tick_hz()) {
    // Under QEMU's -icount shift=0 a nanosecond of the target's time is one instruction.
    target::write("time per inference: ");
    target::write_number(ticks * 1000000000ull / hz / count);
    target::write(" ns of the target's clock\n");
  }
  return ok && wrong == 0 && allocated == 0;
}

}  // namespace

#ifdef NET_ARGUMENTS
int main(int argc, char** argv) {
  const char* only = argc > 1 ? argv[1] : nullptr;
#else
int main() {
  const char* only = nullptr;
#endif
#ifdef NET_THREADS
  ctflow::config::set_num_threads(NET_THREADS);
#endif
  bool ok = true;
  bool ran = false;
#define X(ns)                                                                                             \
  if (!only || std::strcmp(only, #ns) == 0) {                                                             \
    ran = true;                                                                                           \
    ok = run<ns::model, NET_DEVICE_OF(ns)>(#ns, ns::test_inputs, ns::test_outputs, ns::test_count) && ok; \
  }
  NETS
#undef X
  if (!ran) target::write("no network of that name\n");
  ok = ok && ran;
  target::write(ok ? "ok\n" : "FAILED\n");
  return ok ? 0 : 1;
}
