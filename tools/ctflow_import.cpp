// ctflow-import: a model Keras saved (a .keras archive, or a legacy .h5 with its config) or an ONNX
// model written as a C++ header that compiles it into a program for inference
// (keras::import_header; the header is the one keras::export_header writes of a model built in
// C++, see docs/embedded.md).
//
//   ctflow-import MODEL HEADER [--namespace NAME] [--batch N] [--device reference|cpu] [--test-case FILE] [--weights FILE]
//
// --test-case: a safetensors file of x (inputs, [n, ...]) and y (the source model's outputs for
// them), which the header holds for a program to check itself against. --weights: a C++ source
// file for the weights' definitions, which the program compiles once (the header declares them). Errors name the file, the
// layer and what it has; the exit status is 1 (2 for a wrong command line).
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

#include <ctflow/keras/import.hpp>

namespace {

int usage(const char* why) {
  std::fprintf(stderr,
               "ctflow-import: %s\nusage: ctflow-import MODEL HEADER [--namespace NAME] [--batch N] [--device reference|cpu] [--test-case FILE] "
               "[--weights FILE]\n",
               why);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string model, header, test_case;
  ctflow::keras::export_options options;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--namespace" || a == "--batch" || a == "--device" || a == "--test-case" || a == "--weights") {
      if (i + 1 == argc) return usage((a + " needs a value").c_str());
      const std::string v = argv[++i];
      if (a == "--namespace") options.name_space = v;
      else if (a == "--device") options.device = v;
      else if (a == "--test-case") test_case = v;
      else if (a == "--weights") options.weights_file = v;
      else {
        char* end = nullptr;
        const unsigned long long n = std::strtoull(v.c_str(), &end, 10);
        if (v.empty() || *end || n == 0) return usage(("--batch " + v + ": give a positive number").c_str());
        options.batch = std::size_t(n);
      }
    } else if (!a.empty() && a[0] == '-') {
      return usage(("unknown option " + a).c_str());
    } else if (model.empty()) {
      model = a;
    } else if (header.empty()) {
      header = a;
    } else {
      return usage(("one model and one header: " + a + " is a third file").c_str());
    }
  }
  if (header.empty()) return usage("give the model file and the header to write");
  try {
    ctflow::keras::import_header(model, header, options, test_case);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ctflow-import: %s\n", e.what());
    return 1;
  }
  return 0;
}
