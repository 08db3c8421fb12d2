#include "backends/aot/LibraryWriter.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <stdlib.h>
#include <sys/wait.h>

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>

#include "backends/aot/Messages.h"
#include "backends/runtime/BindWeights.h"
#include "backends/runtime/SharedObject.h"
#include "support/Error.h"

namespace grove::aot {

namespace fs = std::filesystem;
namespace msg = aot_messages;

namespace {

bool is_identifier(const std::string &s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  return true;
}

std::string lower(std::string s) {
  for (char &c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// One byte as it stands in a C (or GNU assembler) string literal.
std::string c_escape(unsigned char c) {
  if (c == '"' || c == '\\' || c == '?') return std::string{'\\', char(c)};
  if (c < 0x20 || c > 0x7e) return fmt::format("\\{:03o}", c);
  return std::string(1, char(c));
}

// The shared library's one entry point.
std::string entry_source(const std::string &name) {
  return fmt::format(
      "/* Written by `grove compile`: what grove_model_open looks up in lib{0}.so. */\n"
      "#include <grove/grove.h>\n\n"
      "const grove_compiled_model *{0}_grove_model(void);\n"
      "const grove_compiled_model *grove_compiled_model_entry(void) {{ return {0}_grove_model(); }}\n",
      name);
}

}  // namespace

std::string library_name(const std::string &requested, const std::string &program_name) {
  const std::string name = requested.empty() ? lower(program_name) : requested;
  if (!is_identifier(name)) user_error(msg::kAotBadName, name);
  return name;
}

fs::path prepare_out_dir(const std::string &out_dir) {
  const fs::path dir = out_dir.empty() ? fs::path(".") : fs::path(out_dir);
  std::error_code ec;
  if (fs::exists(dir, ec) && !fs::is_directory(dir, ec)) user_error(msg::kAotOutDirNotDir, dir.string());
  if (!fs::exists(dir, ec) && !fs::create_directories(dir, ec))
    user_error(msg::kAotOutDir, dir.string(), ec ? ec.message() : "unknown error");
  return dir;
}

std::string c_string_literal(const std::string &text) {
  std::vector<std::string> lines{""};
  for (unsigned char c : text) {
    if (lines.back().size() >= 100) lines.emplace_back();
    lines.back() += c_escape(c);
  }
  std::string out;
  for (const std::string &line : lines) out += fmt::format("{}    \"{}\"", out.empty() ? "" : "\n", line);
  return out;
}

std::string tool(const char *variable, const char *fallback) {
  const char *value = std::getenv(variable);
  return value && *value ? value : fallback;
}

void run_tool(const std::string &program, const char *variable, const std::vector<std::string> &args,
              const std::string &what) {
  std::string command = program;
  for (const std::string &a : args) command.append(" ").append(shell_quote(a));
  FILE *pipe = popen((command + " 2>&1").c_str(), "r");
  if (!pipe) user_error(msg::kAotTool, what, command, std::strerror(errno), "");
  std::string output;
  char chunk[4096];
  for (size_t n; (n = std::fread(chunk, 1, sizeof(chunk), pipe)) > 0;) output.append(chunk, n);
  const int status = pclose(pipe);
  if (status == 0) return;
  const int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  user_error(msg::kAotTool, what, command,
             code == 127 ? fmt::format(msg::kAotNoTool, variable) : fmt::format("exit status {}", code),
             output);
}

void write_file(const fs::path &path, const std::string &bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out.flush()) user_error(msg::kAotWrite, path.string(), std::strerror(errno));
}

std::string read_file(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) user_error(msg::kAotRead, path, std::strerror(errno));
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) user_error(msg::kAotRead, path, std::strerror(errno));
  return bytes;
}

void check_weights_fit(const ilir::Program &program, const std::map<std::string, int64_t> &sizes,
                       const Weights &weights, const std::string &where) {
  for (const auto &[var, value] : bind_weights(program, weights, where)) {
    auto it = sizes.find(var);
    if (it != sizes.end() && it->second != value)
      user_error(msg::kAotWeightsSizes, where, var, value, var, it->second);
  }
}

std::string incbin_assembly(const std::string &section, const std::string &symbol, const std::string &file) {
  return fmt::format(
      "\t.section {section}\n"
      "\t.balign 64\n"
      "\t.globl {symbol}\n"
      "\t.hidden {symbol}\n"
      "{symbol}:\n"
      "\t.incbin \"{file}\"\n",
      fmt::arg("section", section), fmt::arg("symbol", symbol), fmt::arg("file", file));
}

std::string header_params(const ModelAbi &abi) {
  std::string params;
  for (const ModelAbi::Param &p : abi.params)
    params += fmt::format(" *   {} [{}]\n", p.name, fmt::join(p.shape, ", "));
  return params;
}

std::string header_sizes(const ModelAbi &abi) {
  std::string sizes;
  for (const auto &[var, value] : abi.sizes)
    sizes += fmt::format("{}{}={}", sizes.empty() ? "" : ",", var, value);
  return sizes;
}

const char *header_weights(bool embedded) {
  return embedded ? "The weights are embedded: the model is ready to run when opened."
                  : "The weights are not embedded: bind them before running the model.";
}

std::string header_declarations(const std::string &name) {
  std::string guard = "GROVE_MODEL_" + name + "_H";
  for (char &c : guard) c = char(std::toupper(static_cast<unsigned char>(c)));
  return fmt::format(
      "#ifndef {guard}\n"
      "#define {guard}\n\n"
      "#include <grove/grove.h>\n\n"
      "#ifdef __cplusplus\n"
      "extern \"C\" {{\n"
      "#endif\n\n"
      "/* The model's descriptor, for grove_model_open_compiled. */\n"
      "const grove_compiled_model *{name}_grove_model(void);\n\n"
      "#ifdef __cplusplus\n"
      "}}\n"
      "#endif\n\n"
      "#endif /* {guard} */\n",
      fmt::arg("name", name), fmt::arg("guard", guard));
}

LibraryWriter::LibraryWriter(std::string name, fs::path out_dir)
    : name_(std::move(name)),
      so_name_("lib" + name_ + ".so"),
      a_name_("lib" + name_ + ".a"),
      h_name_(name_ + ".h"),
      out_dir_(std::move(out_dir)) {
  // Inside out_dir, so that the results are renamed, not copied, into place.
  std::string pattern = (out_dir_ / ".grove-compile-XXXXXX").string();
  std::vector<char> buffer(pattern.begin(), pattern.end());
  buffer.push_back('\0');
  if (!mkdtemp(buffer.data())) user_error(msg::kAotTempDir, out_dir_.string(), std::strerror(errno));
  temp_ = buffer.data();
  cc_ = tool("CC", "cc");
}

LibraryWriter::~LibraryWriter() {
  std::error_code ignored;
  fs::remove_all(temp_, ignored);
}

std::string LibraryWriter::compile_c(const std::string &stem, const std::string &source,
                                     const std::vector<std::string> &flags, const std::string &what) {
  const std::string c = (temp_ / (stem + ".c")).string(), o = (temp_ / (stem + ".o")).string();
  write_file(c, source);
  std::vector<std::string> args{"-O2", "-fPIC"};
  args.insert(args.end(), flags.begin(), flags.end());
  args.insert(args.end(), {"-c", c, "-o", o});
  run_tool(cc_, "CC", args, what);
  return o;
}

std::string LibraryWriter::assemble(const std::string &stem, const std::string &source,
                                    const std::string &what) {
  const std::string s = (temp_ / (stem + ".s")).string(), o = (temp_ / (stem + ".o")).string();
  write_file(s, source);
  run_tool(cc_, "CC", {"-c", "-Wa,--noexecstack", "-Wa,-I" + temp_.string(), s, "-o", o}, what);
  return o;
}

void LibraryWriter::compile_entry(const std::vector<std::string> &flags) {
  compile_c("entry", entry_source(name_), flags, "the library's entry point");
}

void LibraryWriter::link_shared(const std::vector<std::string> &objects,
                                const std::vector<std::string> &libraries) {
  write_file(
      temp_ / "exports.map",
      fmt::format("{{\n  global: grove_compiled_model_entry; {}_grove_model;\n  local: *;\n}};\n", name_));
  std::vector<std::string> link{"-shared", "-o", (temp_ / so_name_).string()};
  link.insert(link.end(), objects.begin(), objects.end());
  link.insert(link.end(),
              {(temp_ / "entry.o").string(), "-Wl,--version-script=" + (temp_ / "exports.map").string(),
               "-Wl,-soname," + so_name_, "-Wl,-z,noexecstack", "-Wl,--no-undefined"});
  link.insert(link.end(), libraries.begin(), libraries.end());
  run_tool(cc_, "CC", link, so_name_);
}

void LibraryWriter::link_static(const std::vector<std::string> &objects) {
  const fs::path combined = temp_ / (name_ + ".o");
  std::vector<std::string> relocatable{"-r", "-nostdlib", "-o", combined.string()};
  relocatable.insert(relocatable.end(), objects.begin(), objects.end());
  run_tool(cc_, "CC", relocatable, a_name_);
  run_tool(tool("OBJCOPY", "objcopy"), "OBJCOPY",
           {"--keep-global-symbol=" + name_ + "_grove_model", combined.string()}, a_name_);
  run_tool(tool("AR", "ar"), "AR", {"rcs", (temp_ / a_name_).string(), combined.string()}, a_name_);
}

void LibraryWriter::write_header(const std::string &text) { write_file(temp_ / h_name_, text); }

LibraryFiles LibraryWriter::move_into_place() {
  std::error_code ec;
  for (const std::string &file : {so_name_, a_name_, h_name_}) {
    const fs::path to = out_dir_ / file;
    fs::rename(temp_ / file, to, ec);
    if (ec) user_error(msg::kAotRename, (temp_ / file).string(), to.string(), ec.message());
  }
  return {(out_dir_ / so_name_).string(), (out_dir_ / a_name_).string(), (out_dir_ / h_name_).string()};
}

}  // namespace grove::aot
