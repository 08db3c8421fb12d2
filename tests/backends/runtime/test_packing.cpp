// The packed weight layout's fill (abi/ModelAbi.h): pack() against the layout written out
// by PackedWeight::offset, and pack_transposed() against pack() of the transpose written out by hand.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "abi/ModelAbi.h"

namespace grove {
namespace {

std::vector<float> ramp(int64_t n) {
  std::vector<float> v(static_cast<size_t>(n));
  for (size_t i = 0; i < v.size(); i++) v[i] = 1.0f + 0.25f * float(i);
  return v;
}

TEST(Packing, Float32PanelsWithARowOffsetAndAPartialLastPanel) {
  // Rows [2, 9) of a 10 × 3 weight in panels of 4: a partial second panel, zero-padded.
  const PackedWeight w{"pk0", "W", 2, 7, 3, 4};
  const std::vector<float> param = ramp(10 * 3);
  std::vector<float> out(size_t(w.words()), NAN);  // every element must be written
  pack(w, param.data(), out.data());
  for (int64_t p = 0; p < w.panels(); p++)
    for (int64_t k = 0; k < w.cols; k++)
      for (int64_t r = 0; r < w.panel; r++) {
        const int64_t row = p * w.panel + r;
        const float want = row < w.rows ? param[size_t((w.row_offset + row) * w.cols + k)] : 0.0f;
        EXPECT_EQ(out[size_t(w.offset(p, k, r))], want) << "panel " << p << " column " << k << " row " << r;
      }
}

// pack_transposed(w, P, ...) is pack(w, T) for T[k, r] = P[row0 + r, k].
void expect_transposed_equals_pack(PackedElement element) {
  const int64_t p_rows = 11, p_cols = 9, row0 = 3, block = 6;  // T = P[3:9, :]ᵀ, [9, 6]
  const std::vector<float> param = ramp(p_rows * p_cols);
  std::vector<float> t(size_t(p_cols * block));
  for (int64_t r = 0; r < block; r++)
    for (int64_t k = 0; k < p_cols; k++) t[size_t(k * block + r)] = param[size_t((row0 + r) * p_cols + k)];
  // T's rows [1, 8) in panels of 4 (a partial last one), all 6 columns (an even count for bf16's pairs
  // and an odd one below).
  for (int64_t cols : {block, block - 1}) {
    const PackedWeight w{"pk1", "W_T", 1, 7, cols, 4, element};
    std::vector<float> t_cols(size_t(p_cols * cols));
    for (int64_t k = 0; k < p_cols; k++)
      for (int64_t c = 0; c < cols; c++) t_cols[size_t(k * cols + c)] = t[size_t(k * block + c)];
    std::vector<uint32_t> want(size_t(w.words()), 0xdeadbeefu), got(size_t(w.words()), 0xdeadbeefu);
    pack(w, t_cols.data(), want.data());
    // The transposed block's columns: param's rows [row0, row0 + cols).
    pack_transposed(w, param.data(), p_cols, row0, got.data());
    EXPECT_EQ(got, want) << "cols " << cols;
  }
}

TEST(Packing, TransposedEqualsPackOfTheTransposeFloat32) {
  expect_transposed_equals_pack(PackedElement::F32);
}
TEST(Packing, TransposedEqualsPackOfTheTransposeBf16) { expect_transposed_equals_pack(PackedElement::BF16); }

}  // namespace
}  // namespace grove
