// Runs a network that keras::export_header wrote (the header NET_HEADER, in namespace net, with
// its test case) on the target it is built for: each test input's outputs against the Keras
// model's (within 1e-4 of them, relative to the largest), each class (the largest output) against
// the Keras model's, and no heap allocation. Prints the classes, the arena and the stack used;
// exits 0 when everything agrees.
#include <cstddef>

#include NET_HEADER

#include "target.hpp"

// Built with NET_DEVICE (ctflow::cpu), the network runs on that device, on NET_THREADS threads.
#ifdef NET_DEVICE
#include <ctflow/backend/cpu/cpu.hpp>
#include <ctflow/config.hpp>
using device = NET_DEVICE;
#else
using device = net::device;
#endif

namespace {

void predict(const net::model::value_type* x, net::model::value_type* y) { net::model::predict<device>(x, y); }

using T = net::model::value_type;
constexpr std::size_t inputs = net::model::input_shape::static_size;
constexpr std::size_t outputs = net::model::output_shape::static_size;
constexpr std::size_t classes = net::model::output_shape::extents[std::size_t(net::model::output_shape::rank - 1)];

T absolute(T v) { return v < 0 ? -v : v; }
std::size_t class_of(const T* y) {
  std::size_t best = 0;
  for (std::size_t i = 1; i < classes; ++i)
    if (y[i] > y[best]) best = i;
  return best;
}

T y[outputs];

}  // namespace

int main() {
#ifdef NET_THREADS
  ctflow::config::set_num_threads(NET_THREADS);
#endif
  // A warm call first where the device keeps memory between calls (the cpu device's caches and
  // its threads).
  if constexpr (!std::is_same_v<device, ctflow::reference>) predict(net::test_inputs, y);
  const unsigned long heap = target::heap_allocations();
  bool ok = true;
  unsigned long wrong = 0;
  // NET_TESTS: the test inputs to run, where running all takes too long (the CNN on a Cortex-M4,
  // whose double-precision sums are software's).
#ifdef NET_TESTS
  constexpr std::size_t count = NET_TESTS < net::test_count ? NET_TESTS : net::test_count;
#else
  constexpr std::size_t count = net::test_count;
#endif
  unsigned long long ticks = 0;
  target::write("classes:");
  for (std::size_t t = 0; t < count; ++t) {
    const unsigned long long begin = target::ticks();
    predict(net::test_inputs + t * inputs, y);
    ticks += target::ticks() - begin;
    const T* expected = net::test_outputs + t * outputs;
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
  target::write_number(net::model::arena_bytes);
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
  ok = ok && wrong == 0 && allocated == 0;
  target::write(ok ? "ok\n" : "FAILED\n");
  return ok ? 0 : 1;
}
