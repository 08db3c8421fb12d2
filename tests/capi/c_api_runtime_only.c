/* grove's C API in a C program linked against libgrove_runtime alone (no compiler): compiling a
 * model file must fail with GROVE_ERROR_UNSUPPORTED and say what to link; misuse fails with
 * GROVE_ERROR_INVALID_ARGUMENT; nothing aborts. Usage: c_api_runtime_only SOURCE_DIR. */

#include <grove/grove.h>
#include <stdio.h>
#include <string.h>

static int failures = 0;

#define CHECK(cond, ...)                                                       \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, #cond); \
      fprintf(stderr, __VA_ARGS__);                                            \
      fprintf(stderr, "\n");                                                   \
      failures++;                                                              \
    }                                                                          \
  } while (0)

static int mentions(const char *text) { return strstr(grove_last_error(), text) != NULL; }

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s SOURCE_DIR\n", argv[0]);
    return 2;
  }
  char model_file[600];
  snprintf(model_file, sizeof model_file, "%s/models/treelstm.grove", argv[1]);

  CHECK(grove_api_version() == GROVE_API_VERSION, "version %d", grove_api_version());
  CHECK(strcmp(grove_last_error(), "") == 0, "before any failure: '%s'", grove_last_error());
  CHECK(strcmp(grove_status_string(GROVE_ERROR_UNSUPPORTED), "unsupported") == 0, "%s",
        grove_status_string(GROVE_ERROR_UNSUPPORTED));
  CHECK(strcmp(grove_status_string((grove_status)99), "unknown status") == 0, "%s",
        grove_status_string((grove_status)99));

  grove_model *model = NULL;
  grove_compile_options options = {"H=8,D=8,V=10", NULL, NULL, 0};
  grove_status status = grove_model_compile(model_file, NULL, &options, &model);
  CHECK(status == GROVE_ERROR_UNSUPPORTED, "compile: %s: %s", grove_status_string(status),
        grove_last_error());
  CHECK(mentions("link grove::compiler"), "message: %s", grove_last_error());
  CHECK(model == NULL, "a failed compile set the model");

  status = grove_model_compile(NULL, NULL, &options, &model);
  CHECK(
      status == GROVE_ERROR_INVALID_ARGUMENT && mentions("grove_model_compile: model_file is a null pointer"),
      "%s: %s", grove_status_string(status), grove_last_error());

  status = grove_model_open(NULL, &model);
  CHECK(
      status == GROVE_ERROR_INVALID_ARGUMENT && mentions("grove_model_open: library_path is a null pointer"),
      "%s: %s", grove_status_string(status), grove_last_error());

  status = grove_model_open("/nonexistent/libnothing.so", &model);
  CHECK(status == GROVE_ERROR_USER && mentions("/nonexistent/libnothing.so"), "%s: %s",
        grove_status_string(status), grove_last_error());

  grove_model_info info;
  status = grove_model_get_info(NULL, &info);
  CHECK(status == GROVE_ERROR_INVALID_ARGUMENT && mentions("grove_model_get_info: model is a null pointer"),
        "%s: %s", grove_status_string(status), grove_last_error());
  grove_model_free(NULL);

  char relay_file[600];
  snprintf(relay_file, sizeof relay_file, "%s/models/relay/mlp.relay", argv[1]);
  grove_relay *program = NULL;
  status = grove_relay_open(relay_file, NULL, &program);
  CHECK(
      status == GROVE_ERROR_UNSUPPORTED && mentions("grove_relay_open: this program does not contain grove's "
                                                    "Relay back end: link grove::compiler"),
      "%s: %s", grove_status_string(status), grove_last_error());
  CHECK(program == NULL, "a failed open set the program");
  status = grove_relay_open_text("def @main() { 1f }", NULL, &program);
  CHECK(status == GROVE_ERROR_UNSUPPORTED && mentions("grove_relay_open_text: this program"), "%s: %s",
        grove_status_string(status), grove_last_error());
  grove_relay_close(NULL);
  grove_relay_result_free(NULL);

  if (failures) {
    fprintf(stderr, "%d check(s) failed\n", failures);
    return 1;
  }
  printf(
      "c_api_runtime_only: grove_model_compile and grove_relay_open are unsupported without the compiler, as "
      "documented\n");
  return 0;
}
