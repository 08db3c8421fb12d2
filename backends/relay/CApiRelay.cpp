// The Relay back end's side of grove_relay_* (include/grove/grove.h): the C API in libgrove_runtime
// finds this entry with dlsym (backends/runtime/RelayHook.h) when the program links
// grove_relay_backend. It adapts a RelayProgram (RelayProgram.h) to the C descriptors: grove_tensor
// in and out, grove_relay_param with strings and shapes that live as long as the program.

#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "backends/relay/RelayProgram.h"
#include "backends/runtime/RelayHook.h"
#include "support/Error.h"

namespace grove::relay {
namespace {

// grove_dtype's values in order; GROVE_DTYPE_BOOL .. GROVE_DTYPE_FLOAT64.
constexpr DType kDTypes[] = {DType::Bool,   DType::Int8,    DType::Int16,   DType::Int32,
                             DType::Int64,  DType::UInt8,   DType::UInt16,  DType::UInt32,
                             DType::UInt64, DType::Float16, DType::Float32, DType::Float64};

grove_dtype to_c(DType t) {
  for (size_t i = 0; i < std::size(kDTypes); ++i)
    if (kDTypes[i] == t) return static_cast<grove_dtype>(i);
  GROVE_CHECK(false, "a dtype without a grove_dtype: {}", to_string(t));
  return GROVE_DTYPE_FLOAT32;
}

grove_relay_param_kind to_c(RelayParam::Kind kind) {
  switch (kind) {
    case RelayParam::Kind::Tensor:
      return GROVE_RELAY_PARAM_TENSOR;
    case RelayParam::Kind::Trees:
      return GROVE_RELAY_PARAM_TREES;
    case RelayParam::Kind::TensorList:
      return GROVE_RELAY_PARAM_TENSOR_LIST;
    case RelayParam::Kind::Other:
      return GROVE_RELAY_PARAM_OTHER;
  }
  return GROVE_RELAY_PARAM_OTHER;
}

// A tensor the runtime checked, copied into an NDArray.
NDArray from_c(const grove_tensor &t) {
  Shape shape(t.shape, t.shape + t.rank);
  NDArray a(kDTypes[static_cast<int>(t.dtype)], std::move(shape));
  if (a.nbytes() > 0) std::memcpy(a.raw(), t.data, a.nbytes());
  return a;
}

class Program : public RelayForCApi {
 public:
  explicit Program(std::shared_ptr<RelayProgram> program) : program_(std::move(program)) {
    for (const RelayParam &p : program_->params()) {
      grove_relay_param c{};
      c.name = p.name.c_str();
      c.type = p.type_text.c_str();
      c.kind = to_c(p.kind);
      c.dtype = to_c(p.dtype);
      c.shape = p.shape.data();
      c.rank = static_cast<int32_t>(p.shape.size());
      params_.push_back(c);
    }
  }

  const std::vector<grove_relay_param> &params() const override { return params_; }
  const std::string &result_type() const override { return program_->result_type(); }

  RelayResultForCApi run(const grove_tensor *inputs, size_t count, const char *trees) const override {
    std::vector<NDArray> tensors;
    tensors.reserve(count);
    for (size_t i = 0; i < count; ++i) tensors.push_back(from_c(inputs[i]));
    std::optional<std::vector<Tree>> tree_values;
    if (trees) tree_values = program_->read_trees(trees);
    auto outputs = std::make_shared<std::vector<NDArray>>(program_->run(tensors, tree_values));
    RelayResultForCApi result;
    for (const NDArray &a : *outputs)
      result.tensors.push_back({to_c(a.dtype()), a.nbytes() > 0 ? a.raw() : nullptr, a.shape().data(),
                                static_cast<int32_t>(a.ndim())});
    result.owner = std::move(outputs);
    return result;
  }

 private:
  std::shared_ptr<RelayProgram> program_;
  std::vector<grove_relay_param> params_;
};

RelayProgramOptions to_options(const grove_relay_options *c) {
  RelayProgramOptions options;
  if (!c) return options;
  options.threads = c->threads;
  options.executor = static_cast<int>(c->executor) == GROVE_RELAY_INTERPRETER ? RelayExecutor::Interpreter
                                                                              : RelayExecutor::VM;
  for (int32_t i = 0; i < c->num_targets; ++i) options.targets.emplace_back(c->targets[i]);
  if (c->vocab) options.vocab = c->vocab;
  return options;
}

}  // namespace
}  // namespace grove::relay

extern "C" void grove_compiler_relay_open_v1(const char *path, const char *text,
                                             const grove_relay_options *options,
                                             std::unique_ptr<grove::RelayForCApi> *out) {
  using namespace grove::relay;
  GROVE_CHECK(out && (path || text), "grove_compiler_relay_open_v1 called without a program or result");
  std::shared_ptr<RelayProgram> program =
      path ? RelayProgram::open(path, to_options(options))
           : RelayProgram::parse(text, "grove_relay_open_text", to_options(options));
  *out = std::make_unique<Program>(std::move(program));
}
