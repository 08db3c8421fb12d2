/* The C API's Relay programs from C11 (include/grove/grove.h, grove_relay_*): a small perceptron with a
 * tuple result opened from text, run from four threads on one program and checked against the same
 * arithmetic in C; then a missing file and a wrong argument count, with their messages.
 * Usage: grove_c_api_relay_c SOURCE_DIR */

#include <grove/grove.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(cond, ...)                                         \
  do {                                                           \
    if (!(cond)) {                                               \
      fprintf(stderr, "%s:%d: %s: ", __FILE__, __LINE__, #cond); \
      fprintf(stderr, __VA_ARGS__);                              \
      fprintf(stderr, "\n");                                     \
      exit(1);                                                   \
    }                                                            \
  } while (0)

/* relu(x W^T + b) and its double. */
static const char kProgram[] =
    "#[version = \"0.0.5\"]\n"
    "def @main(%x: Tensor[(?, 3), float32], %w: Tensor[(2, 3), float32], %b: Tensor[(2), float32]) {\n"
    "  %0 = nn.dense(%x, %w);\n"
    "  %1 = nn.relu(nn.bias_add(%0, %b));\n"
    "  (%1, add(%1, %1))\n"
    "}\n";

enum { kRows = 5, kRuns = 20 };
static float x[kRows * 3], w[2 * 3], b[2];
static float expected[kRows * 2];
static const int64_t x_shape[] = {kRows, 3}, w_shape[] = {2, 3}, b_shape[] = {2};

static void check_result(const grove_relay_result *result) {
  int32_t count = 0;
  CHECK(grove_relay_result_count(result, &count) == GROVE_OK, "%s", grove_last_error());
  CHECK(count == 2, "%d tensors", count);
  for (int32_t i = 0; i < count; ++i) {
    grove_tensor t;
    CHECK(grove_relay_result_tensor(result, i, &t) == GROVE_OK, "%s", grove_last_error());
    CHECK(t.dtype == GROVE_DTYPE_FLOAT32 && t.rank == 2 && t.shape[0] == kRows && t.shape[1] == 2,
          "tensor %d", i);
    const float *data = (const float *)t.data;
    for (int k = 0; k < kRows * 2; ++k)
      CHECK(fabsf(data[k] - (float)(i + 1) * expected[k]) < 1e-5f, "tensor %d element %d: %g, expected %g", i,
            k, data[k], (i + 1) * expected[k]);
  }
}

static void *runner(void *arg) {
  const grove_relay *program = (const grove_relay *)arg;
  grove_tensor inputs[3] = {{GROVE_DTYPE_FLOAT32, x, x_shape, 2},
                            {GROVE_DTYPE_FLOAT32, w, w_shape, 2},
                            {GROVE_DTYPE_FLOAT32, b, b_shape, 1}};
  for (int run = 0; run < kRuns; ++run) {
    grove_relay_result *result = NULL;
    CHECK(grove_relay_run(program, inputs, 3, NULL, &result) == GROVE_OK, "%s", grove_last_error());
    check_result(result);
    grove_relay_result_free(result);
  }
  return NULL;
}

int main(int argc, char **argv) {
  CHECK(argc == 2, "usage: %s SOURCE_DIR", argv[0]);
  for (int i = 0; i < kRows * 3; ++i) x[i] = (float)((i * 7) % 11) / 5.0f - 1.0f;
  for (int i = 0; i < 6; ++i) w[i] = (float)((i * 5) % 7) / 3.0f - 1.0f;
  b[0] = 0.25f;
  b[1] = -0.5f;
  for (int r = 0; r < kRows; ++r)
    for (int o = 0; o < 2; ++o) {
      double s = b[o];
      for (int k = 0; k < 3; ++k) s += (double)x[r * 3 + k] * w[o * 3 + k];
      expected[r * 2 + o] = s > 0 ? (float)s : 0.0f;
    }

  grove_relay_options options = {0};
  options.threads = 2;
  grove_relay *program = NULL;
  CHECK(grove_relay_open_text(kProgram, &options, &program) == GROVE_OK, "%s", grove_last_error());
  int32_t params = 0;
  CHECK(grove_relay_num_params(program, &params) == GROVE_OK && params == 3, "%d params", params);
  grove_relay_param p;
  CHECK(grove_relay_param_info(program, 0, &p) == GROVE_OK, "%s", grove_last_error());
  CHECK(strcmp(p.name, "x") == 0 && p.kind == GROVE_RELAY_PARAM_TENSOR && p.rank == 2 && p.shape[0] == -1 &&
            p.shape[1] == 3,
        "param 0: %s %s", p.name, p.type);
  const char *type = NULL;
  CHECK(grove_relay_result_type(program, &type) == GROVE_OK, "%s", grove_last_error());
  CHECK(strcmp(type, "(Tensor[(?, 2), float32], Tensor[(?, 2), float32])") == 0, "result type %s", type);

  pthread_t threads[4];
  for (int i = 0; i < 4; ++i)
    CHECK(pthread_create(&threads[i], NULL, runner, program) == 0, "pthread_create");
  for (int i = 0; i < 4; ++i) pthread_join(threads[i], NULL);

  grove_tensor two[2] = {{GROVE_DTYPE_FLOAT32, x, x_shape, 2}, {GROVE_DTYPE_FLOAT32, w, w_shape, 2}};
  grove_relay_result *result = NULL;
  CHECK(grove_relay_run(program, two, 2, NULL, &result) == GROVE_ERROR_USER, "two arguments ran");
  CHECK(strcmp(grove_last_error(), "grove_relay_open_text: @main takes 3 tensors (%x, %w, %b); got 2") == 0,
        "%s", grove_last_error());
  CHECK(result == NULL, "a failing run wrote its result");
  grove_relay_close(program);

  char path[4096];
  snprintf(path, sizeof path, "%s/models/relay/no-such-model.relay", argv[1]);
  grove_relay *missing = NULL;
  CHECK(grove_relay_open(path, NULL, &missing) == GROVE_ERROR_USER, "a missing file opened");
  CHECK(strstr(grove_last_error(), "no-such-model.relay") != NULL, "%s", grove_last_error());
  CHECK(missing == NULL, "a failing open wrote its program");
  printf("grove_c_api_relay_c: ok\n");
  return 0;
}
