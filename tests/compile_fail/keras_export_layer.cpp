// expect: ctflow::keras::export_header: UpSampling2D has no embedded form
// Compile-fail test: built once as is (must compile) and once with CTFLOW_SHOULD_FAIL_TO_BUILD
// (must fail with the message above): a model exported as a header with a layer the embedded
// networks do not have.
#include <ctflow/keras.hpp>
#include <ctflow/keras/export.hpp>

using namespace ctflow;
namespace layers = keras::layers;

int main() {
#ifdef CTFLOW_SHOULD_FAIL_TO_BUILD
  keras::Sequential<keras::Input<float, Shape<4, 4, 2>>, layers::UpSampling2D<>, layers::Flatten, layers::Dense<2>> model;
#else
  keras::Sequential<keras::Input<float, Shape<5, 3>>, layers::Flatten, layers::Dense<2>> model;
#endif
  keras::export_header(model, "net.hpp");
}
