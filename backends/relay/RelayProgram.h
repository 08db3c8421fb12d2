#pragma once
// A Relay program as a library opens and runs it: the C API's grove_relay_* (include/grove/grove.h,
// through backends/relay/CApiRelay.cpp) and Python's grove.relay. It loads a file exactly as
// `grove relay run` does (load_typed, load_program, partition_for_targets) and runs @main on the VM
// (make_vm, the command line's kernels and threads) or the reference interpreter.
//
// Arguments are positional: one tensor per parameter of @main in order, skipping the one parameter
// of type List[Tree[int32]] or List[Rose[int32]] (if @main has exactly one), which takes PTB trees
// instead (trees_to_value, as `grove relay run --trees`). A parameter of type List[Tensor[S]] takes
// one tensor of shape (N, S...): its N slices along the first axis are the list's elements. The result, a
// tensor or a (nested) tuple or List of tensors, comes back flattened in order. A wrong count, dtype or shape
// is a UserError naming the parameter and what it expects.
//
// Thread safety: run() may be called from several threads at once; runs on the VM take turns (the
// VM caches kernels and recursive functions per program), the interpreter's run side by side.

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "backends/relay/byoc/SavedProgram.h"
#include "datasets/Tree.h"
#include "datasets/Vocab.h"
#include "frontend/relay/IR.h"

namespace grove::relay {

class VirtualMachine;

// A program file as grove's commands read it (an ONNX model, or Relay text with its constants
// sidecar or #[metadata] section), with its types inferred.
Module load_typed(const std::string &file);

enum class RelayExecutor { VM, Interpreter };

struct RelayProgramOptions {
  // The threads of the VM's kernel pool and of grove's recursive functions (`grove relay run
  // --threads`); 0: all cores. The interpreter runs on the calling thread.
  int threads = 0;
  RelayExecutor executor = RelayExecutor::VM;
  // BYOC targets to partition for (`grove relay run --target`); none for a saved program.
  std::vector<std::string> targets;
  // A vocabulary file for the words of PTB trees; empty: tokens are integer ids.
  std::string vocab;
};

// One parameter of @main.
struct RelayParam {
  enum class Kind { Tensor, Trees, TensorList, Other };
  std::string name;  // without `%`
  Type type;
  std::string type_text;  // "Tensor[(?, 16), float32]", "List[Tree[int32]]"
  Kind kind = Kind::Other;
  DType dtype = DType::Float32;  // a tensor's, or a list's elements'
  Shape shape;                   // a tensor's, or (?, element's shape) for a list; kAnyDim for `?`
};

class RelayProgram {
 public:
  // Opens `path`: a directory written by `grove relay build`, an ONNX model, or Relay text.
  static std::shared_ptr<RelayProgram> open(const std::string &path, RelayProgramOptions options = {});
  // Parses `text` as a Relay program (constants in a #[metadata] section); `name` names it in messages.
  static std::shared_ptr<RelayProgram> parse(std::string_view text, const std::string &name,
                                             RelayProgramOptions options = {});
  ~RelayProgram();

  const std::string &name() const { return name_; }
  const Module &module() const { return module_; }
  const std::vector<RelayParam> &params() const { return params_; }
  // The index in params() of the parameter trees bind to, or -1.
  int tree_param() const { return tree_param_; }
  // The parameters run() takes tensors for, in order: every one but tree_param().
  size_t num_tensor_params() const { return params_.size() - (tree_param_ >= 0 ? 1 : 0); }
  const std::string &result_type() const { return result_type_; }
  const RelayProgramOptions &options() const { return options_; }

  // Trees in PTB form, one per line (read_ptb_tree_text), their words looked up in the vocabulary.
  std::vector<Tree> read_trees(std::string_view text, const std::string &source = "trees") const;
  // One tree; `number` (from 1) places messages.
  Tree read_tree(std::string_view line, int64_t number, const std::string &source = "trees") const;

  // Runs @main on `tensors` (one per parameter but tree_param(), in order) and, when `trees` is
  // given, the trees for tree_param(). Returns the result's tensors in order.
  std::vector<NDArray> run(const std::vector<NDArray> &tensors,
                           const std::optional<std::vector<Tree>> &trees = std::nullopt) const;

 private:
  RelayProgram(SavedProgram program, std::string name, RelayProgramOptions options);

  std::string name_;
  Module module_;
  RelayProgramOptions options_;
  std::vector<RelayParam> params_;
  int tree_param_ = -1;
  std::string result_type_;
  std::optional<Vocab> vocab_;
  std::unique_ptr<VirtualMachine> vm_;  // null for the interpreter
  mutable std::mutex vm_mutex_;
};

}  // namespace grove::relay
