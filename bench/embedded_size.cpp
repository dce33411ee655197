// A program that runs an exported network and does nothing else, for the size of a deployed
// model (scripts/bench.sh builds it static for each exported header and prints its size beside
// LiteRT's interpreter library's): the input read from the file argv[1] (784 floats) if given,
// the class printed. NET_CPU: the cpu device (one thread) instead of the header's own (reference).
// Without NET_HEADER it is the same program without a network (its output is the largest input's
// index): the size of the C library and of the reading and printing.
#include <cstdio>

#ifdef NET_HEADER
#include NET_HEADER
#ifdef NET_CPU
#include <ctflow/backend/cpu/cpu.hpp>
using device = ctflow::cpu;
#else
using device = net::device;
#endif
constexpr int inputs = int(net::model::input_shape::static_size), outputs = int(net::model::output_shape::static_size);
#else
constexpr int inputs = 784, outputs = 784;
#endif

int main(int argc, char** argv) {
  static float x[inputs], y[outputs];
  if (argc > 1) {
    if (std::FILE* f = std::fopen(argv[1], "rb")) {
      if (std::fread(x, sizeof x, 1, f) != 1) std::fputs("short input: zeros after it\n", stderr);
      std::fclose(f);
    }
  }
#ifdef NET_HEADER
  net::model::predict<device>(x, y);
#else
  for (int i = 0; i < outputs; ++i) y[i] = x[i];
#endif
  int best = 0;
  for (int i = 1; i < outputs; ++i)
    if (y[i] > y[best]) best = i;
  std::printf("%d\n", best);
}
