#include "backends/runtime/CompiledLibrary.h"

#include <dlfcn.h>

#include <filesystem>
#include <string_view>

#include "abi/Messages.h"
#include "backends/runtime/Messages.h"
#include "support/Error.h"
#include "support/Safetensors.h"

namespace grove {

namespace msg = runtime_messages;

CompiledLibrary open_compiled_model(const grove_compiled_model &compiled, const std::string &where) {
  // The version first: a descriptor of another version may lay out its fields differently.
  if (compiled.abi_version != kModelAbiVersion)
    user_error(abi_messages::kAbiVersion, where, compiled.abi_version, kModelAbiVersion);
  if (!compiled.abi_json) user_error(msg::kLibraryIncomplete, where, "description (abi_json)");
  if (!compiled.entry) user_error(msg::kLibraryIncomplete, where, "entry function");
  if (!compiled.set_num_threads) user_error(msg::kLibraryIncomplete, where, "set_num_threads");
  if (!compiled.weights && compiled.weights_size > 0)
    user_error(msg::kLibraryIncomplete, where, "weights, though it gives their size");
  ModelAbi abi = model_abi_from_json(compiled.abi_json, where);
  CompiledLibrary library;
  library.executor =
      std::make_unique<Executor>(std::move(abi), EntryPoints{compiled.entry, compiled.set_num_threads});
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
