// The driver API without a driver: every way in (availability, device properties, a model's
// kernels on a device) fails with the one clear UserError, and nothing needs libcuda to start.
// On a machine with a driver these tests skip, saying so (test_cuda_device runs there).

#include <gtest/gtest.h>

#include "backends/cuda/Driver.h"
#include "support/Error.h"
#include "tests/backends/cuda/CudaTestUtil.h"

namespace grove {
namespace {

using namespace testing;

constexpr char kPrefix[] = "no CUDA driver: libcuda.so.1 could not be loaded (";

#define SKIP_WITH_A_DRIVER()                                                                       \
  do {                                                                                             \
    if (cuda::driver_available()) GTEST_SKIP() << "a CUDA driver is installed: nothing to refuse"; \
  } while (0)

void expect_no_driver_error(const std::function<void()> &f) {
  try {
    f();
    FAIL() << "no error";
  } catch (const UserError &e) {
    const std::string what = e.what();
    EXPECT_EQ(what.rfind(kPrefix, 0), 0u) << what;
    EXPECT_EQ(what.back(), ')') << what;
  }
}

TEST(NoDriver, IsReportedAsUnavailable) {
  SKIP_WITH_A_DRIVER();
  std::string why;
  EXPECT_FALSE(cuda::driver_available(&why));
  EXPECT_EQ(why.rfind(kPrefix, 0), 0u) << why;
  EXPECT_NE(why.find("libcuda.so.1"), std::string::npos) << why;
}

TEST(NoDriver, DeviceInfoFailsClearly) {
  SKIP_WITH_A_DRIVER();
  expect_no_driver_error([] { cuda::device_info(0); });
}

TEST(NoDriver, ModelOnTheDeviceFailsClearly) {
  SKIP_WITH_A_DRIVER();
  plan::LevelPlan plan = cuda::plan_for_cuda(cuda_test_program(ModelKind::TreeLSTM),
                                             cuda_test_sizes(ModelKind::TreeLSTM, 16, 8), "");
  for (cuda::Form form : {cuda::Form::PerLevel, cuda::Form::Persistent})
    expect_no_driver_error([&] { cuda::DeviceModel model(plan, {.form = form}); });
}

}  // namespace
}  // namespace grove
