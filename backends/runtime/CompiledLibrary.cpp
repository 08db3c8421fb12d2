#include "backends/runtime/CompiledLibrary.h"

#include <dlfcn.h>

#include <filesystem>
#include <string_view>

#include "abi/Messages.h"
#include "backends/runtime/CudaMessages.h"
#include "backends/runtime/CudaRunner.h"
#include "backends/runtime/Messages.h"
#include "support/Error.h"
#include "support/Safetensors.h"

namespace grove {

namespace msg = runtime_messages;

namespace {

// A CUDA library's images, checked against the description's (arch, size, FNV-1a checksum): a
// section changed after `grove compile` wrote it is refused before the driver sees it.
std::vector<cuda::CudaImage> cuda_images(const grove_compiled_model &compiled, const ModelAbi &abi,
                                         const std::string &where) {
  namespace cmsg = cuda_driver_messages;
  const std::vector<CudaLaunch::Image> &described = abi.cuda->images;
  if (compiled.num_cuda_images <= 0 || !compiled.cuda_images) user_error(cmsg::kNoImages, where);
  std::vector<cuda::CudaImage> images;
  std::string held, listed;
  for (int32_t i = 0; i < compiled.num_cuda_images; ++i) {
    const grove_cuda_image &image = compiled.cuda_images[i];
    if (!image.arch || !image.data) user_error(msg::kLibraryIncomplete, where, "CUDA image");
    images.push_back({image.arch, image.data, size_t(image.size)});
    held += (held.empty() ? "" : ", ") + std::string(image.arch);
  }
  for (const CudaLaunch::Image &d : described) listed += (listed.empty() ? "" : ", ") + d.arch;
  if (images.size() != described.size()) user_error(cmsg::kImageMismatch, where, held, listed);
  for (size_t i = 0; i < images.size(); ++i) {
    const CudaLaunch::Image &d = described[i];
    if (images[i].arch != d.arch) user_error(cmsg::kImageMismatch, where, held, listed);
    const uint64_t sum = fnv1a64(images[i].data, images[i].size);
    if (images[i].size != d.size || sum != d.checksum)
      user_error(cmsg::kImageCorrupt, where, d.arch, images[i].size, sum, d.size, d.checksum);
  }
  return images;
}

}  // namespace

CompiledLibrary open_compiled_model(const grove_compiled_model &compiled, const std::string &where) {
  // The version first: a descriptor of another version may lay out its fields differently.
  if (compiled.abi_version != kModelAbiVersion)
    user_error(abi_messages::kAbiVersion, where, compiled.abi_version, kModelAbiVersion);
  if (!compiled.abi_json) user_error(msg::kLibraryIncomplete, where, "description (abi_json)");
  if (!compiled.weights && compiled.weights_size > 0)
    user_error(msg::kLibraryIncomplete, where, "weights, though it gives their size");
  ModelAbi abi = model_abi_from_json(compiled.abi_json, where);
  CompiledLibrary library;
  if (abi.target == "cuda" || abi.cuda) {
    if (!abi.cuda) user_error(cuda_driver_messages::kNotCudaLibrary, where);
    std::vector<cuda::CudaImage> images = cuda_images(compiled, abi, where);
    library.executor = std::make_unique<cuda::CudaRunner>(std::move(abi), images, where);
  } else {
    if (!compiled.entry) user_error(msg::kLibraryIncomplete, where, "entry function");
    if (!compiled.set_num_threads) user_error(msg::kLibraryIncomplete, where, "set_num_threads");
    library.executor =
        std::make_unique<Executor>(std::move(abi), EntryPoints{compiled.entry, compiled.set_num_threads});
  }
  if (compiled.weights) {
    const std::string name = where + " (embedded weights)";
    library.executor->bind(
        read_safetensors_bytes(std::string_view(reinterpret_cast<const char *>(compiled.weights),
                                                static_cast<size_t>(compiled.weights_size)),
                               name),
        name);
  }
  return library;
}

// 1. Check the file exists (dlopen's message for a missing file is less direct), and give dlopen a
//    path with a slash so that it does not search the library path for a bare file name.
// 2. dlopen it and look up the entry point; the handle is closed when the last user lets go, after
//    the executor that calls into it.
// 3. Read the descriptor as a statically linked one.
CompiledLibrary open_compiled_library(const std::string &path) {
  // 1.
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) user_error(msg::kLibraryMissing, path);
  const std::string load_path = path.find('/') == std::string::npos ? "./" + path : path;
  // 2.
  void *raw = dlopen(load_path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!raw) {
    const char *error = dlerror();
    user_error(msg::kLibraryLoad, path, error ? error : "unknown error");
  }
  std::shared_ptr<void> handle(raw, [](void *h) { dlclose(h); });
  using EntryFn = const grove_compiled_model *(*)();
  auto entry = reinterpret_cast<EntryFn>(dlsym(raw, "grove_compiled_model_entry"));
  if (!entry) user_error(msg::kLibraryNotGrove, path);
  const grove_compiled_model *compiled = entry();
  if (!compiled)
    user_error(msg::kLibraryIncomplete, path, "descriptor (grove_compiled_model_entry returned NULL)");
  // 3.
  CompiledLibrary library = open_compiled_model(*compiled, path);
  library.handle = std::move(handle);
  return library;
}

}  // namespace grove
