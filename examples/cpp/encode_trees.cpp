// encode_trees: encodes parse trees with a grove model through the C API (include/grove/grove.h),
// as a C++ service would; it uses nothing of grove but the C API.
//
//   encode_trees MODEL WEIGHTS TREES [VOCAB]
//
// MODEL is a library written by `grove compile` (a .so, opened with grove_model_open) or a model
// file (.grove, compiled at run time with grove_model_compile, which needs grove::compiler linked
// in). WEIGHTS is a safetensors file. TREES holds one tree per line in the PTB format of the Stanford
// Sentiment Treebank, "(3 (2 It) (4 (2 's) (4 good)))"; its tokens are looked up in VOCAB (one token
// per line, the id is the line number; "<unk>" stands for unknown tokens), or are integer ids without
// one. Prints the first values of each tree's root state.

#include <grove/grove.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <string>
#include <unordered_map>
#include <vector>

namespace {

void check(grove_status status, const char *what) {
  if (status == GROVE_OK) return;
  std::cerr << "encode_trees: " << what << ": " << grove_status_string(status) << ": " << grove_last_error()
            << "\n";
  std::exit(1);
}

[[noreturn]] void fail(const std::string &message) {
  std::cerr << "encode_trees: " << message << "\n";
  std::exit(1);
}

// A batch of trees in the C API's parent form.
struct Batch {
  std::vector<int64_t> node_begin{0};
  std::vector<int32_t> parent, token;
};

// Appends one PTB line to `batch`. Nodes are numbered as their '(' appears, so siblings get
// increasing ids, which is the child order of the parent form. An explicit stack: no recursion.
void add_tree(const std::string &line, int64_t line_number,
              const std::unordered_map<std::string, int32_t> *vocab, Batch &batch) {
  std::vector<int32_t> open;    // the nodes whose ')' is still to come
  std::vector<bool> has_label;  // per open node: its label has been read
  size_t first = batch.parent.size();
  auto where = [&] { return "line " + std::to_string(line_number); };
  for (size_t i = 0; i < line.size();) {
    char c = line[i];
    if (c == ' ') {
      i++;
    } else if (c == '(') {
      int32_t node = int32_t(batch.parent.size());
      batch.parent.push_back(open.empty() ? -1 : open.back());
      batch.token.push_back(-1);
      if (open.empty() && node != int32_t(first)) fail(where() + ": more than one tree on the line");
      open.push_back(node);
      has_label.push_back(false);
      i++;
    } else if (c == ')') {
      if (open.empty()) fail(where() + ": unbalanced ')'");
      open.pop_back();
      has_label.pop_back();
      i++;
    } else {
      size_t end = line.find_first_of(" ()", i);
      std::string atom = line.substr(i, end == std::string::npos ? std::string::npos : end - i);
      i = end == std::string::npos ? line.size() : end;
      if (open.empty()) fail(where() + ": '" + atom + "' outside any bracket");
      if (!has_label.back()) {
        has_label.back() = true;  // the sentiment label: ignored
        continue;
      }
      int32_t id = -1;
      if (vocab) {
        auto it = vocab->find(atom);
        if (it == vocab->end()) it = vocab->find("<unk>");
        if (it == vocab->end()) fail(where() + ": token '" + atom + "' is not in the vocabulary");
        id = it->second;
      } else {
        id = std::atoi(atom.c_str());
      }
      batch.token[open.back()] = id;
    }
  }
  if (!open.empty()) fail(where() + ": unbalanced '('");
  if (batch.parent.size() == first) fail(where() + ": no tree");
  batch.node_begin.push_back(int64_t(batch.parent.size()));
}

}  // namespace

int main(int argc, char **argv) {
  if (argc != 4 && argc != 5) {
    std::cerr << "usage: encode_trees MODEL(.so|.grove) WEIGHTS.safetensors TREES [VOCAB]\n";
    return 2;
  }
  std::string model_path = argv[1], weights = argv[2], trees_path = argv[3];

  // 1. Open or compile the model, then bind its weights.
  grove_model *model = nullptr;
  bool library = model_path.size() > 3 && model_path.compare(model_path.size() - 3, 3, ".so") == 0;
  if (library) {
    check(grove_model_open(model_path.c_str(), &model), "opening the model");
    check(grove_model_bind_weights_file(model, weights.c_str()), "binding the weights");
  } else {
    check(grove_model_compile(model_path.c_str(), weights.c_str(), nullptr, &model), "compiling the model");
  }
  grove_model_info info;
  check(grove_model_get_info(model, &info), "reading the model's description");
  if (info.input != GROVE_INPUT_TREES) fail(std::string("model ") + info.name + " does not run over trees");

  // 2. Read the vocabulary and the trees.
  std::unordered_map<std::string, int32_t> vocab;
  if (argc == 5) {
    std::ifstream in(argv[4]);
    if (!in) fail(std::string("cannot open ") + argv[4]);
    for (std::string line; std::getline(in, line);) vocab.emplace(line, int32_t(vocab.size()));
  }
  std::ifstream in(trees_path);
  if (!in) fail("cannot open " + trees_path);
  Batch batch;
  int64_t line_number = 0;
  for (std::string line; std::getline(in, line);) {
    line_number++;
    if (!line.empty()) add_tree(line, line_number, argc == 5 ? &vocab : nullptr, batch);
  }

  // 3. Encode them all in one call and print the start of each root state.
  grove_trees trees{};
  trees.num_trees = int64_t(batch.node_begin.size()) - 1;
  trees.node_begin = batch.node_begin.data();
  trees.parent = batch.parent.data();
  trees.token = batch.token.data();
  std::vector<float> roots(trees.num_trees * info.output_elements);
  int64_t rows = 0;
  check(grove_model_run_trees(model, &trees, nullptr, roots.data(), int64_t(roots.size()), &rows),
        "encoding");
  std::printf("%s (%s): %lld trees, %lld values per root\n", info.name, info.structure, (long long)rows,
              (long long)info.output_elements);
  for (int64_t t = 0; t < rows; ++t) {
    std::printf("tree %lld:", (long long)(t + 1));
    for (int64_t k = 0; k < std::min<int64_t>(4, info.output_elements); ++k)
      std::printf(" %+.5f", roots[t * info.output_elements + k]);
    std::printf("\n");
  }
  grove_model_free(model);
  return 0;
}
