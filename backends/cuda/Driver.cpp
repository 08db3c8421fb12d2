#include "backends/cuda/Driver.h"

#include <chrono>

#include "backends/cuda/KernelArgs.h"
#include "backends/cuda/Messages.h"
#include "backends/cuda/Nvrtc.h"
#include "backends/runtime/Clock.h"
#include "support/Error.h"

namespace grove::cuda {

namespace msg = cuda_messages;

struct DeviceModel::Impl {
  CudaSource source;
  std::unique_ptr<CudaRunner> runner;
  double compile_ms = 0;
};

// Steps: the device (a device without cooperative launches is refused before the compile for the
// persistent form); the kernels emitted and compiled by NVRTC for the device's architecture; the
// runner over the cubin (which loads it and checks the grid).
DeviceModel::DeviceModel(const plan::LevelPlan &plan, const CudaOptions &options, int device)
    : impl_(std::make_unique<Impl>()) {
  Impl &m = *impl_;
  const DeviceInfo info = device_info(device);
  if (options.form == Form::Persistent && !info.cooperative_launch) user_error(msg::kNoCooperative, device);
  auto t0 = std::chrono::steady_clock::now();
  ModelAbi abi = plan.abi;
  m.source = emit_cuda(plan, options);
  abi.function = m.source.kernels.front();
  abi.target = "cuda-" + info.arch();
  abi.cuda = cuda_launch(m.source);
  const NvrtcOutput &cubin = compile_with_nvrtc(m.source, info.arch(), abi.model);
  const std::string model = abi.model;
  m.runner = std::make_unique<CudaRunner>(
      std::move(abi), std::vector<CudaImage>{{cubin.arch, cubin.image.data(), cubin.image.size()}}, model,
      device);
  m.compile_ms = ms_since(t0);
}

DeviceModel::~DeviceModel() = default;

const CudaSource &DeviceModel::source() const { return impl_->source; }
const DeviceInfo &DeviceModel::device() const { return impl_->runner->device(); }
const ModelAbi &DeviceModel::abi() const { return impl_->runner->abi(); }
const CudaRunner &DeviceModel::runner() const { return *impl_->runner; }
CudaRunner &DeviceModel::runner() { return *impl_->runner; }
double DeviceModel::compile_ms() const { return impl_->compile_ms; }

void DeviceModel::bind(const Weights &weights) {
  const ModelAbi &abi = impl_->runner->abi();
  for (const ModelAbi::Param &p : abi.params) {
    auto it = weights.find(p.name);
    if (it == weights.end() || it->second.shape != p.shape)
      user_error(msg::kWeightMissing, abi.model, p.name, shape_string(p.shape));
  }
  std::map<std::string, WeightView> views;
  for (const ModelAbi::Param &p : abi.params) {
    const Tensor &t = weights.at(p.name);
    views.emplace(p.name, WeightView{t.data.data(), t.shape});
  }
  impl_->runner->bind(views, "the weights");
}

std::vector<float> DeviceModel::execute(const LinearizedBatch &batch) const {
  return impl_->runner->execute(batch);
}

Tensor DeviceModel::run(std::span<const Tree> trees) const { return run(trees, RunOptions{}); }

Tensor DeviceModel::run_dags(std::span<const Dag> dags, DagOutputs outputs) const {
  RunOptions options;
  options.outputs = outputs;
  return run_dags(dags, options);
}

Tensor DeviceModel::run(std::span<const Tree> trees, const RunOptions &options, RunStats *stats) const {
  return impl_->runner->run(trees, options, stats);
}

Tensor DeviceModel::run_dags(std::span<const Dag> dags, const RunOptions &options, RunStats *stats) const {
  return impl_->runner->run_dags(dags, options, stats);
}

Tensor DeviceModel::run_sequences(std::span<const std::vector<int32_t>> sequences, const RunOptions &options,
                                  RunStats *stats) const {
  return impl_->runner->run_sequences(sequences, options, stats);
}

}  // namespace grove::cuda
