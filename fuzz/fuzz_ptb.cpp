// Fuzzes the PTB tree reader on the text of a whole tree file. Built twice: with GROVE_FUZZ_VOCAB
// tokens are looked up in a small vocabulary (with <unk>), without it they must be integer ids.
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "datasets/PTBReader.h"
#include "datasets/Vocab.h"
#include "fuzz/FuzzCommon.h"

namespace {

using grove::fuzz::require;

// The guarantees of read_ptb_tree_text: every tree is in post-order, each non-root node is the
// child of exactly one later node, leaves carry a token id (in the vocabulary if there is one),
// internal nodes carry -1.
void check_tree(const grove::Tree &t, const grove::Vocab *vocab) {
  const int32_t n = t.size();
  require(n > 0, "a tree has a node");
  require(t.child_begin.size() == static_cast<size_t>(n) + 1, "child_begin has size() + 1 entries");
  require(t.child_begin.front() == 0 && t.child_begin.back() == static_cast<int32_t>(t.children.size()),
          "child_begin spans children");
  require(t.root == n - 1, "the root is last");
  std::vector<int32_t> parents(n, 0);
  for (int32_t i = 0; i < n; ++i) {
    require(t.child_begin[i] <= t.child_begin[i + 1], "child_begin is non-decreasing");
    const bool leaf = t.num_children(i) == 0;
    if (leaf) {
      require(t.token[i] >= 0, "a leaf has a token id");
      if (vocab != nullptr) require(t.token[i] < vocab->size(), "a token id is in the vocabulary");
    } else {
      require(t.token[i] == -1, "an internal node has token -1");
    }
    for (int32_t k = 0; k < t.num_children(i); ++k) {
      const int32_t c = t.child(i, k);
      require(c >= 0 && c < i, "children come before their parent");
      ++parents[c];
    }
  }
  for (int32_t i = 0; i + 1 < n; ++i) require(parents[i] == 1, "every non-root node has one parent");
  require(parents[n - 1] == 0, "the root has no parent");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const std::string_view text(reinterpret_cast<const char *>(data), size);
#ifdef GROVE_FUZZ_VOCAB
  static const grove::Vocab vocab = grove::Vocab::parse(
      "<unk>\nthe\nfilm\n's\ngood\n.\n,\nn't\nIt\n-LRB-\n\xc3\xa9t\xc3\xa9\n", "fuzz-vocab.txt");
  const grove::Vocab *v = &vocab;
#else
  const grove::Vocab *v = nullptr;
#endif
  return grove::fuzz::run_reader([&] {
    std::vector<grove::Tree> trees = grove::read_ptb_tree_text(text, v, "fuzz.txt");
    require(!trees.empty(), "a tree file holds a tree");
    for (const grove::Tree &t : trees) check_tree(t, v);
  });
}
