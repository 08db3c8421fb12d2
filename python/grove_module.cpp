// _grove: the Python extension behind `import grove` (python/grove/__init__.py). It JIT-compiles a
// model file (cpu::CompiledModel) and runs it on trees, sequences and DAGs given as Python objects.
// Results come back without a copy: the output grove::Tensor moves into a capsule that a NumPy array
// (or, for PyTorch, a DLPack tensor) keeps alive. The GIL is released while grove compiles and runs,
// so several Python threads can run one model at once (the Executor is thread-safe).
//
// grove.relay (python/grove/relay.py) opens Relay programs through the back end's library entry
// (backends/relay/RelayProgram.h): tensors in as NumPy arrays of any dtype grove knows, copied in,
// and the result's tensors copied out into NumPy arrays of their dtypes.

#include <fmt/format.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "backends/cpu/CompiledModel.h"
#include "backends/cuda/Driver.h"
#include "backends/relay/RelayProgram.h"
#include "backends/runtime/BindWeights.h"
#include "backends/runtime/RandomWeights.h"
#include "frontend/dsl/Frontend.h"
#include "python/DLPack.h"
#include "python/Inputs.h"
#include "python/Messages.h"
#include "python/TrainingBindings.h"
#include "support/Error.h"
#include "support/Safetensors.h"

namespace grove::python {

namespace py = pybind11;
namespace msg = python_messages;

namespace {

// ---- Results without copies --------------------------------------------------------------------

// A NumPy array over the tensor's own buffer; the array's base capsule owns the tensor.
py::array to_numpy(Tensor &&tensor) {
  auto owned = std::make_unique<Tensor>(std::move(tensor));
  std::vector<py::ssize_t> shape(owned->shape.begin(), owned->shape.end());
  float *data = owned->data.data();
  py::capsule base(owned.get(), [](void *p) { delete static_cast<Tensor *>(p); });
  owned.release();  // the capsule owns it now
  return py::array(py::dtype::of<float>(), shape, data, base);
}

// What a DLPack consumer holds: the tensor, its strides, and the DLManagedTensor pointing into both.
struct DLPackOwner {
  Tensor tensor;
  std::vector<int64_t> strides;
  dlpack::DLManagedTensor managed{};
};

void delete_owner(dlpack::DLManagedTensor *self) { delete static_cast<DLPackOwner *>(self->manager_ctx); }

// A capsule no consumer took (still named "dltensor") frees the tensor itself; a consumed one was
// renamed "used_dltensor" and the consumer calls the deleter.
void capsule_destructor(PyObject *capsule) {
  if (PyCapsule_IsValid(capsule, dlpack::kCapsuleName)) {
    auto *managed =
        static_cast<dlpack::DLManagedTensor *>(PyCapsule_GetPointer(capsule, dlpack::kCapsuleName));
    managed->deleter(managed);
  }
}

// An output tensor that implements the DLPack Python protocol (__dlpack__, __dlpack_device__), for
// torch.utils.dlpack.from_dlpack and numpy.from_dlpack. It can be exported once.
class DLPackTensor {
 public:
  explicit DLPackTensor(Tensor tensor) : owner_(std::make_unique<DLPackOwner>()) {
    owner_->tensor = std::move(tensor);
    data_ptr_ = reinterpret_cast<uintptr_t>(owner_->tensor.data.data());
    shape_ = owner_->tensor.shape;
  }

  py::object dlpack(const py::object &stream) {
    if (!stream.is_none())
      throw py::value_error(fmt::format(msg::kDLPackStream, py::repr(stream).cast<std::string>()));
    if (!owner_) throw py::buffer_error(msg::kDLPackExported);
    DLPackOwner &o = *owner_;
    const int ndim = static_cast<int>(o.tensor.shape.size());
    o.strides.assign(ndim, 1);
    for (int d = ndim - 2; d >= 0; --d) o.strides[d] = o.strides[d + 1] * o.tensor.shape[d + 1];
    dlpack::DLTensor &t = o.managed.dl_tensor;
    t.data = o.tensor.data.data();
    t.device = {dlpack::kDLCPU, 0};
    t.ndim = ndim;
    t.dtype = {dlpack::kDLFloat, 32, 1};
    t.shape = o.tensor.shape.data();
    t.strides = o.strides.data();
    t.byte_offset = 0;
    o.managed.manager_ctx = &o;
    o.managed.deleter = delete_owner;
    PyObject *capsule = PyCapsule_New(&o.managed, dlpack::kCapsuleName, capsule_destructor);
    if (!capsule) throw py::error_already_set();
    owner_.release();  // the capsule (then its consumer) owns it now
    return py::reinterpret_steal<py::object>(capsule);
  }

  py::tuple device() const { return py::make_tuple(static_cast<int>(dlpack::kDLCPU), 0); }
  uintptr_t data_ptr() const { return data_ptr_; }
  py::tuple shape() const { return py::cast(shape_); }

 private:
  std::unique_ptr<DLPackOwner> owner_;
  uintptr_t data_ptr_ = 0;
  std::vector<int64_t> shape_;
};

py::object result(Tensor &&tensor, bool dlpack) {
  if (dlpack) return py::cast(DLPackTensor(std::move(tensor)));
  return to_numpy(std::move(tensor));
}

// ---- Compiling ---------------------------------------------------------------------------------

struct LoadedWeights {
  Weights weights;
  std::string file;  // names them in messages
};

// A safetensors path or a dict of arrays.
LoadedWeights load_weights(py::handle weights) {
  if (py::isinstance<py::str>(weights) || py::hasattr(weights, "__fspath__")) {
    std::string path = py::str(py::module_::import("os").attr("fspath")(weights)).cast<std::string>();
    return {read_safetensors(path), path};
  }
  if (py::isinstance<py::dict>(weights)) return {to_weights(weights), "weights"};
  throw py::type_error(fmt::format(msg::kWeightsType, type_name(weights)));
}

void check_batch(int64_t batch) {
  if (batch < 0) user_error(msg::kNegativeBatch, batch);
}

// A compiled model: the CPU's JIT (cpu::CompiledModel, through its Executor) or, with
// target="cuda", the CUDA kernels compiled by NVRTC and run by the device runner
// (backends/cuda/Driver.h's DeviceModel over backends/runtime/CudaRunner.h).
class Model {
 public:
  Model(cpu::CompiledModel compiled, std::shared_ptr<const InputVocab> vocab)
      : compiled_(std::move(compiled)), vocab_(std::move(vocab)) {}
  Model(std::unique_ptr<cuda::DeviceModel> device, std::vector<std::string> notes,
        std::shared_ptr<const InputVocab> vocab)
      : device_(std::move(device)), device_notes_(std::move(notes)), vocab_(std::move(vocab)) {}

  py::object run_trees(py::handle trees, int64_t batch, py::handle vocab, bool dlpack) const {
    check_batch(batch);
    std::shared_ptr<const InputVocab> v = vocab.is_none() ? vocab_ : to_vocab(vocab);
    std::vector<Tree> inputs = to_trees(trees, v.get());
    return run([&] { return runner().run(inputs, {.batch = batch}); }, dlpack);
  }

  py::object run_tree_arrays(py::handle parent, py::handle tokens, py::handle node_begin, int64_t batch,
                             bool dlpack) const {
    check_batch(batch);
    std::vector<Tree> inputs = to_trees(parent, tokens, node_begin);
    return run([&] { return runner().run(inputs, {.batch = batch}); }, dlpack);
  }

  py::object run_sequences(py::handle sequences, int64_t batch, bool dlpack) const {
    check_batch(batch);
    std::vector<std::vector<int32_t>> inputs = to_sequences(sequences);
    return run([&] { return runner().run_sequences(inputs, {.batch = batch}); }, dlpack);
  }

  py::object run_dags(py::handle dags, int64_t batch, const std::string &outputs, bool dlpack) const {
    check_batch(batch);
    RunOptions options{.batch = batch};
    if (outputs == "all_nodes")
      options.outputs = DagOutputs::AllNodes;
    else if (outputs != "sinks")
      user_error(msg::kOutputs, outputs);
    std::vector<Dag> inputs = to_dags(dags);
    return run([&] { return runner().run_dags(inputs, options); }, dlpack);
  }

  void bind_weights(py::handle weights) {
    LoadedWeights w = load_weights(weights);
    py::gil_scoped_release release;
    if (device_)
      device_->runner().bind(std::move(w.weights), w.file);
    else
      compiled_->executor().bind(std::move(w.weights), w.file);
  }

  const ModelAbi &abi() const { return runner().abi(); }
  std::string schedule() const { return device_ ? device_->abi().schedule : compiled_->schedule(); }
  std::vector<std::string> notes() const { return device_ ? device_notes_ : compiled_->notes(); }
  double compile_ms() const { return device_ ? device_->compile_ms() : compiled_->compile_ms(); }
  std::string target() const { return device_ ? std::string("cuda") : compiled_->abi().target; }

  py::dict params() const {
    py::dict d;
    for (const ModelAbi::Param &p : abi().params) d[py::str(p.name)] = py::tuple(py::cast(p.shape));
    return d;
  }

 private:
  const ModelRunner &runner() const {
    if (device_) return device_->runner();
    return compiled_->executor();
  }

  template <typename Run>
  py::object run(Run &&body, bool dlpack) const {
    Tensor out;
    {
      py::gil_scoped_release release;
      out = body();
    }
    return result(std::move(out), dlpack);
  }

  std::optional<cpu::CompiledModel> compiled_;
  std::unique_ptr<cuda::DeviceModel> device_;
  std::vector<std::string> device_notes_;
  std::shared_ptr<const InputVocab> vocab_;
};

// compile(): parse the model, get weights (given, or seeded random ones for `sizes`), check that
// given sizes agree with the weights, then JIT-compile with the GIL released: for the CPU with
// Halide, for target="cuda" with NVRTC for device 0 (`cuda`: the kernels' options as `grove run
// --cuda` takes them), the weights copied to the device once.
std::unique_ptr<Model> compile(const std::string &model_path, py::handle weights, py::handle sizes,
                               std::optional<std::string> schedule, std::optional<int64_t> threads,
                               std::optional<std::string> target, py::handle vocab, uint64_t seed,
                               std::optional<std::string> cuda_options) {
  ilir::Program program = dsl::parse_model_file(model_path);
  std::map<std::string, int64_t> size_values = to_sizes(sizes);
  LoadedWeights w;
  if (weights.is_none()) {
    if (size_values.empty()) user_error(msg::kNeedWeightsOrSizes, model_path);
    w = {grove::random_weights(program, size_values, seed), "the random weights"};
  } else {
    w = load_weights(weights);
    if (!size_values.empty()) {
      grove::check_sizes(program, size_values, false);
      std::map<std::string, int64_t> bound = bind_weights(program, w.weights, w.file);
      for (const auto &[name, value] : size_values)
        if (bound.at(name) != value) user_error(msg::kSizeDisagrees, name, value, name, bound.at(name));
    }
  }
  std::shared_ptr<const InputVocab> input_vocab = to_vocab(vocab);
  if (threads && *threads < 1) user_error(msg::kThreads, *threads);
  if (target && *target == "cuda") {
    const cuda::CudaOptions options = cuda::parse_cuda_options(cuda_options.value_or(""), "cuda");
    std::unique_ptr<cuda::DeviceModel> device;
    std::vector<std::string> notes;
    {
      py::gil_scoped_release release;
      std::map<std::string, int64_t> bound = bind_weights(program, w.weights, w.file);
      plan::LevelPlan plan = cuda::plan_for_cuda(program, bound, schedule.value_or(""));
      notes = plan.schedule.notes(program.structure);
      if (threads) notes.push_back(fmt::format(msg::kCudaThreads, *threads));
      device = std::make_unique<cuda::DeviceModel>(plan, options);
      notes.insert(notes.end(), device->source().notes.begin(), device->source().notes.end());
      device->runner().bind(std::move(w.weights), w.file);
    }
    return std::make_unique<Model>(std::move(device), std::move(notes), std::move(input_vocab));
  }
  if (cuda_options) user_error(msg::kCudaWithoutTarget);
  cpu::CompileOptions options;
  options.weights_file = w.file;
  if (target) options.target = *target;
  if (schedule) options.schedule = *schedule;
  if (threads) options.schedule += fmt::format("{}threads={}", options.schedule.empty() ? "" : ",", *threads);
  std::optional<cpu::CompiledModel> compiled;
  {
    py::gil_scoped_release release;
    compiled.emplace(cpu::CompiledModel::compile(program, w.weights, options));
  }
  return std::make_unique<Model>(std::move(*compiled), std::move(input_vocab));
}

// ---- Relay programs ----------------------------------------------------------------------------

// The DType of a NumPy array, or a GroveError naming the argument.
relay::DType relay_dtype(const py::array &a, const std::string &what) {
  const char kind = a.dtype().kind();
  const auto size = a.dtype().itemsize();
  using relay::DType;
  if (kind == 'b' && size == 1) return DType::Bool;
  if (kind == 'i' || kind == 'u') {
    constexpr DType kSigned[] = {DType::Int8, DType::Int16, DType::Int32, DType::Int64};
    constexpr DType kUnsigned[] = {DType::UInt8, DType::UInt16, DType::UInt32, DType::UInt64};
    for (int i = 0; i < 4; ++i)
      if (size == py::ssize_t(1) << i) return kind == 'i' ? kSigned[i] : kUnsigned[i];
  }
  if (kind == 'f' && size == 2) return DType::Float16;
  if (kind == 'f' && size == 4) return DType::Float32;
  if (kind == 'f' && size == 8) return DType::Float64;
  user_error(msg::kRelayDtype, what, py::str(a.dtype()).cast<std::string>());
}

// A C-ordered NumPy array (relay.py converts the arguments) copied into an NDArray.
relay::NDArray to_ndarray(py::handle value, const std::string &what) {
  if (!py::isinstance<py::array>(value))
    throw py::type_error(fmt::format(msg::kRelayArgType, what, type_name(value)));
  py::array a = py::array::ensure(value, py::array::c_style);
  if (!a) throw py::error_already_set();
  relay::Shape shape(a.shape(), a.shape() + a.ndim());
  relay::NDArray out(relay_dtype(a, what), std::move(shape));
  if (out.nbytes() > 0) std::memcpy(out.raw(), a.data(), out.nbytes());
  return out;
}

py::array to_numpy(const relay::NDArray &a) {
  std::vector<py::ssize_t> shape(a.shape().begin(), a.shape().end());
  py::array out(py::dtype(relay::to_string(a.dtype())), shape);
  if (a.nbytes() > 0) std::memcpy(out.mutable_data(), a.raw(), a.nbytes());
  return out;
}

class RelayProgram {
 public:
  explicit RelayProgram(std::shared_ptr<relay::RelayProgram> program) : program_(std::move(program)) {}

  // (name, type, kind, dtype, shape) per parameter of @main; dtype and shape None unless a tensor
  // or a list of tensors (the stacked tensor's shape), a `?` dimension None.
  py::list params() const {
    py::list out;
    for (const relay::RelayParam &p : program_->params()) {
      const bool tensor =
          p.kind == relay::RelayParam::Kind::Tensor || p.kind == relay::RelayParam::Kind::TensorList;
      py::object dtype = tensor ? py::object(py::str(relay::to_string(p.dtype))) : py::object(py::none());
      py::object shape = py::none();
      if (tensor) {
        py::list dims;
        for (int64_t d : p.shape)
          dims.append(d == relay::kAnyDim ? py::object(py::none()) : py::object(py::int_(d)));
        shape = py::tuple(dims);
      }
      const char *kind = p.kind == relay::RelayParam::Kind::Tensor       ? "tensor"
                         : p.kind == relay::RelayParam::Kind::TensorList ? "tensor_list"
                         : p.kind == relay::RelayParam::Kind::Trees      ? "trees"
                                                                         : "other";
      out.append(py::make_tuple(p.name, p.type_text, kind, dtype, shape));
    }
    return out;
  }

  const std::string &result_type() const { return program_->result_type(); }

  // arrays: one per tensor parameter; trees: None, a str (a tree per line) or a list of str.
  py::list run(const py::sequence &arrays, py::handle trees) const {
    std::vector<relay::NDArray> tensors;
    const auto &params = program_->params();
    for (size_t i = 0, k = 0; i < size_t(py::len(arrays)); ++i, ++k) {
      while (int(k) == program_->tree_param()) ++k;
      std::string what =
          k < params.size() ? "argument %" + params[k].name : fmt::format("argument {}", i + 1);
      tensors.push_back(to_ndarray(arrays[i], what));
    }
    std::optional<std::vector<Tree>> tree_values;
    if (py::isinstance<py::str>(trees)) {
      tree_values = program_->read_trees(trees.cast<std::string>());
    } else if (!trees.is_none()) {
      if (!py::isinstance<py::sequence>(trees))
        throw py::type_error(fmt::format(msg::kRelayTreesType, type_name(trees)));
      tree_values.emplace();
      int64_t number = 0;
      for (py::handle t : trees) {
        ++number;
        if (!py::isinstance<py::str>(t))
          throw py::type_error(fmt::format(msg::kRelayTreeType, number, type_name(t)));
        tree_values->push_back(program_->read_tree(t.cast<std::string>(), number));
      }
    }
    std::vector<relay::NDArray> outputs;
    {
      py::gil_scoped_release release;
      outputs = program_->run(tensors, tree_values);
    }
    py::list out;
    for (const relay::NDArray &a : outputs) out.append(to_numpy(a));
    return out;
  }

 private:
  std::shared_ptr<relay::RelayProgram> program_;
};

relay::RelayProgramOptions relay_options(std::optional<int64_t> threads, const std::string &executor,
                                         const std::vector<std::string> &targets,
                                         std::optional<std::string> vocab) {
  relay::RelayProgramOptions options;
  if (threads) {
    if (*threads < 1) user_error(msg::kThreads, *threads);
    options.threads = int(*threads);
  }
  if (executor == "interp")
    options.executor = relay::RelayExecutor::Interpreter;
  else if (executor != "vm")
    user_error(msg::kRelayExecutor, executor);
  options.targets = targets;
  if (vocab) options.vocab = *vocab;
  return options;
}

std::unique_ptr<RelayProgram> relay_load(const std::string &path, std::optional<int64_t> threads,
                                         const std::string &executor, const std::vector<std::string> &targets,
                                         std::optional<std::string> vocab) {
  relay::RelayProgramOptions options = relay_options(threads, executor, targets, vocab);
  py::gil_scoped_release release;
  return std::make_unique<RelayProgram>(relay::RelayProgram::open(path, std::move(options)));
}

std::unique_ptr<RelayProgram> relay_parse(const std::string &text, const std::string &name,
                                          std::optional<int64_t> threads, const std::string &executor,
                                          const std::vector<std::string> &targets,
                                          std::optional<std::string> vocab) {
  relay::RelayProgramOptions options = relay_options(threads, executor, targets, vocab);
  py::gil_scoped_release release;
  return std::make_unique<RelayProgram>(relay::RelayProgram::parse(text, name, std::move(options)));
}

}  // namespace

}  // namespace grove::python

PYBIND11_MODULE(_grove, m) {
  namespace py = pybind11;
  using grove::python::DLPackTensor;
  using grove::python::Model;
  m.doc() = "grove's compiled models (use the `grove` package, python/grove/__init__.py)";

  py::register_exception<grove::UserError>(m, "GroveError", PyExc_ValueError);

  py::class_<DLPackTensor>(m, "DLPackTensor", "A result to hand to a DLPack consumer (torch, NumPy) once")
      .def("__dlpack__", &DLPackTensor::dlpack, py::arg("stream") = py::none())
      .def("__dlpack_device__", &DLPackTensor::device)
      .def_property_readonly("data_ptr", &DLPackTensor::data_ptr, "the address of the first float")
      .def_property_readonly("shape", &DLPackTensor::shape);

  py::class_<Model>(m, "Model")
      .def("run_trees", &Model::run_trees, py::arg("trees"), py::arg("batch") = 0,
           py::arg("vocab") = py::none(), py::arg("dlpack") = false)
      .def("run_tree_arrays", &Model::run_tree_arrays, py::arg("parent"), py::arg("tokens"),
           py::arg("node_begin"), py::arg("batch") = 0, py::arg("dlpack") = false)
      .def("run_sequences", &Model::run_sequences, py::arg("sequences"), py::arg("batch") = 0,
           py::arg("dlpack") = false)
      .def("run_dags", &Model::run_dags, py::arg("dags"), py::arg("batch") = 0, py::arg("outputs") = "sinks",
           py::arg("dlpack") = false)
      .def("bind_weights", &Model::bind_weights, py::arg("weights"))
      .def_property_readonly("name", [](const Model &model) { return model.abi().model; })
      .def_property_readonly("structure", [](const Model &model) { return model.abi().structure; })
      .def_property_readonly("runs_dags", [](const Model &model) { return model.abi().runs_dags(); })
      .def_property_readonly("schedule", &Model::schedule)
      .def_property_readonly("notes", &Model::notes,
                             "requested schedule options that could not take effect, a sentence each")
      .def_property_readonly("compile_ms", &Model::compile_ms)
      .def_property_readonly("target", &Model::target)
      .def_property_readonly("params", &Model::params)
      .def_property_readonly("sizes", [](const Model &model) { return model.abi().sizes; })
      .def_property_readonly("vocab_size", [](const Model &model) { return model.abi().vocab_size; })
      .def_property_readonly(
          "output_shape", [](const Model &model) { return py::tuple(py::cast(model.abi().output_shape)); });

  using grove::python::RelayProgram;
  py::class_<RelayProgram>(m, "RelayProgram")
      .def_property_readonly("params", &RelayProgram::params)
      .def_property_readonly("result_type", &RelayProgram::result_type)
      .def("run", &RelayProgram::run, py::arg("arrays"), py::arg("trees") = py::none());
  m.def("relay_load", &grove::python::relay_load, py::arg("path"), py::arg("threads") = py::none(),
        py::arg("executor") = "vm", py::arg("targets") = std::vector<std::string>{},
        py::arg("vocab") = py::none());
  m.def("relay_parse", &grove::python::relay_parse, py::arg("text"), py::arg("name") = "<text>",
        py::arg("threads") = py::none(), py::arg("executor") = "vm",
        py::arg("targets") = std::vector<std::string>{}, py::arg("vocab") = py::none());

  m.def("compile", &grove::python::compile, py::arg("model"), py::arg("weights") = py::none(),
        py::arg("sizes") = py::none(), py::arg("schedule") = py::none(), py::arg("threads") = py::none(),
        py::arg("target") = py::none(), py::arg("vocab") = py::none(), py::arg("seed") = 1,
        py::arg("cuda") = py::none());

  grove::python::register_training(m);
}
