// A program built without exceptions (-fno-exceptions -fno-rtti): ctflow's errors reach the
// handler it sets, with the error's name and its message, where a program with exceptions would
// throw them.
//
//   no_exceptions shape|divide
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <ctflow/backend/reference/reference.hpp>
#include <ctflow/ops/math.hpp>
#include <ctflow/ops/random.hpp>

using namespace ctflow;

int main(int argc, char** argv) {
  const error_handler before = set_error_handler([](const char* kind, const char* message) {
    std::printf("handled %s: %s\n", kind, message);
    std::fflush(stdout);
    std::_Exit(0);
  });
  if (before == nullptr) return 3;  // the default handler was there
  const char* what = argc > 1 ? argv[1] : "";
  if (std::strcmp(what, "shape") == 0) {
    Tensor<float, Shape<dyn, 3>, reference> t({2, 3});
    TensorView<float, Shape<4, 3>, reference> v(t.data(), t.dims());
    v = v + 1.f;
  } else if (std::strcmp(what, "divide") == 0) {
    const Tensor<std::int32_t, Shape<3>, reference> a = ones<std::int32_t, Shape<3>, reference>();
    const Tensor<std::int32_t, Shape<3>, reference> b = zeros<std::int32_t, Shape<3>, reference>();
    const Tensor<std::int32_t, Shape<3>, reference> c = a / b;
    std::printf("%d\n", int(c(0)));
  }
  std::printf("no error\n");
  return 1;
}
