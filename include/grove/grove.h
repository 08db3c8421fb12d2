#ifndef GROVE_GROVE_H
#define GROVE_GROVE_H
/*
 * grove's C API, version 2: run recursive neural networks (TreeLSTM, TreeGRU, MV-RNN, DAG-RNN,
 * sequence LSTM/GRU, ...) compiled by grove, from C, C++ or anything with a C FFI. Version 2 added
 * the Relay programs of grove_relay_* (the end of this file); version 1's calls are unchanged.
 *
 *   grove_model *model;
 *   if (grove_model_open("out/libtreelstm.so", &model) != GROVE_OK ||      // `grove compile`'s output
 *       grove_model_bind_weights_file(model, "treelstm.safetensors") != GROVE_OK) {
 *     fprintf(stderr, "%s\n", grove_last_error());
 *     ...
 *   }
 *   grove_trees trees = {...};                                          // see grove_trees
 *   float *roots = malloc(sizeof(float) * trees.num_trees * info.output_elements);
 *   grove_model_run_trees(model, &trees, NULL, roots, capacity, &rows);
 *   grove_model_free(model);
 *
 * Libraries. Everything here is in libgrove_runtime (CMake: grove::runtime), except
 * grove_model_compile, which compiles a model file at run time and needs the compiler library
 * (grove::compiler), and grove_relay_open / grove_relay_open_text, which need the Relay back end
 * (in the build tree: grove_relay_backend); linked against the runtime alone they return
 * GROVE_ERROR_UNSUPPORTED.
 *
 * Errors. Every function that can fail returns a grove_status; on failure the calling thread's
 * grove_last_error() holds a message that says what was wrong and where (the file, the tree and
 * node, the tensor and its expected shape). No function aborts on bad input, and none writes to
 * the caller's output buffers unless it returns GROVE_OK.
 *
 * Threads. grove_model_run_* may be called from any number of threads at once on one model. The
 * bind functions may be called while runs are in flight, under any load: a run uses the weights
 * bound when it started for all of its work (never a mix of two sets), and a bind checks and packs
 * the new weights without stopping the runs, then makes them the ones later runs start with. A
 * bind waits for no run that started after it; it waits for the runs that started before it only
 * when the weights it replaces were bound in place (grove_model_bind_weights with copy = 0), so
 * that those buffers may be freed once it returns. grove_model_free must not race any other call
 * on the same model.
 *
 * Indices. Inputs are given as flat arrays over all nodes of a batch. Nodes are numbered globally,
 * 0 .. N-1 with N = node_begin[count]; input k owns nodes [node_begin[k], node_begin[k+1]), and every
 * index stored in parent, children or preds is such a global id of a node of the same input.
 */

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define GROVE_API_VERSION 2

typedef enum grove_status {
  GROVE_OK = 0,
  GROVE_ERROR_INVALID_ARGUMENT = 1, /* API misuse: a null pointer, a negative count, a buffer too small */
  GROVE_ERROR_USER = 2,        /* bad input: a tree, weight file, model file or library that does not fit */
  GROVE_ERROR_UNSUPPORTED = 3, /* grove_model_compile or grove_relay_open* without the compiler */
  GROVE_ERROR_OUT_OF_MEMORY = 4,
  GROVE_ERROR_INTERNAL = 5 /* a bug in grove: please report the message */
} grove_status;

/* GROVE_API_VERSION of the library linked at run time. */
int grove_api_version(void);

/* The message of the last call on this thread that failed; "" if none did. Valid until the next
 * grove call on this thread. */
const char *grove_last_error(void);

/* "invalid argument", "user error", ... */
const char *grove_status_string(grove_status status);

typedef struct grove_model grove_model;

/* ---- Opening and compiling --------------------------------------------------------------------- */

/* A CUDA library's compiled kernels (`grove compile --target cuda`): a cubin for arch "sm_XX", or PTX
 * text (NUL-terminated, size counting the NUL) for "compute_XX", which the driver JIT-compiles. */
typedef struct grove_cuda_image {
  const char *arch;
  const unsigned char *data;
  uint64_t size;
} grove_cuda_image;

/* What a library written by `grove compile` exports: its shared library defines
 * `const grove_compiled_model *grove_compiled_model_entry(void)`, its static library
 * `const grove_compiled_model *<model>_grove_model(void)` (declared in the generated header).
 * A CUDA library (its description's target is "cuda") has no entry and no set_num_threads: its
 * kernels are cuda_images, run through the CUDA driver (libcuda.so.1, loaded when the library is
 * opened; $GROVE_CUDA_DRIVER names another). The two cuda_ fields are read only for such a library
 * (a CPU library written before they existed ends at weights_size). */
typedef struct grove_compiled_model {
  int32_t abi_version;          /* the runtime refuses a version it does not read */
  const char *name;             /* the model's name */
  const char *abi_json;         /* arguments, layout, input checks (see abi/ModelAbi.h) */
  int (*entry)(void **args);    /* the compiled code, Halide's argv calling convention */
  int (*set_num_threads)(int);  /* the library's Halide runtime: halide_set_num_threads */
  const unsigned char *weights; /* with `--embed-weights`: a safetensors image; else NULL */
  uint64_t weights_size;
  int32_t num_cuda_images; /* a CUDA library: its cubins and PTX */
  const grove_cuda_image *cuda_images;
} grove_compiled_model;

/* Opens a shared library written by `grove compile` (dlopen). With embedded weights the model is
 * ready to run; otherwise bind weights first. A CUDA library opens on device 0 with the kernels
 * for its architecture (the cubin, else the PTX): no driver, no device, no kernels for the device,
 * a corrupt image, a persistent grid larger than the device holds at once, or out of device memory
 * is GROVE_ERROR_USER with the driver's message; its weights go to the device when bound, and a run
 * copies the batch's arrays there and the rows back. */
grove_status grove_model_open(const char *library_path, grove_model **model);

/* The same for a model linked in statically: grove_model_open_compiled(treelstm_grove_model(), &m). */
grove_status grove_model_open_compiled(const grove_compiled_model *compiled, grove_model **model);

typedef struct grove_compile_options {
  const char *sizes;    /* "H=256,D=300,V=21701": needed when weights_file is NULL; else NULL */
  const char *schedule; /* overrides over the default schedule, "batch=on,unroll=2"; NULL: none */
  const char *target;   /* a Halide target string; NULL: "host" */
  int32_t threads;      /* > 0: the thread pool's size; 0: the machine's hardware threads */
} grove_compile_options;

/* Compiles a model file (`.grove`) at run time (JIT). With weights_file the weights are bound and
 * give the sizes; without it options->sizes must. options may be NULL. Needs grove::compiler. */
grove_status grove_model_compile(const char *model_file, const char *weights_file,
                                 const grove_compile_options *options, grove_model **model);

/* Frees the model (NULL is fine). Caller-owned weight buffers may be freed after this. */
void grove_model_free(grove_model *model);

/* ---- What a model is --------------------------------------------------------------------------- */

typedef enum grove_input_kind {
  GROVE_INPUT_TREES = 0, /* binary trees or trees of any arity: grove_model_run_trees */
  GROVE_INPUT_DAGS = 1   /* DAGs, grids and sequences: grove_model_run_dags, _grids, _sequences */
} grove_input_kind;

typedef struct grove_model_info {
  const char *name;      /* e.g. "treelstm" */
  const char *structure; /* "binary tree", "tree", "dag", "grid", "sequence" */
  grove_input_kind input;
  int32_t predecessor_slots; /* DAG models: slots per node; 0 for tree models */
  int64_t vocab_size;        /* tokens must be in [0, vocab_size); -1 if the model has no table */
  int64_t output_elements;   /* floats per output row (one tree's root state, e.g. H) */
  int32_t num_params;        /* weights the model needs: grove_model_param(0 .. num_params - 1) */
  const char *schedule;      /* the schedule compiled in, KEY=VALUE pairs */
} grove_model_info;

/* The strings stay valid as long as the model. */
grove_status grove_model_get_info(const grove_model *model, grove_model_info *info);

/* Parameter `index`: its name (e.g. "W_iou") and shape. */
grove_status grove_model_param(const grove_model *model, int32_t index, const char **name,
                               const int64_t **shape, int32_t *rank);

/* ---- Weights ----------------------------------------------------------------------------------- */

/* Reads a safetensors file (float32 tensors, the names and shapes of grove_model_param). */
grove_status grove_model_bind_weights_file(grove_model *model, const char *path);

typedef struct grove_tensor_view {
  const char *name;
  const float *data; /* row-major float32 */
  const int64_t *shape;
  int32_t rank;
} grove_tensor_view;

/* Binds every parameter from caller buffers: exactly the model's parameters, each with its shape.
 * copy = 0: the buffers are used in place and must stay alive and unchanged until the model is
 * freed or the next bind returns; copy = 1: they are copied now. */
grove_status grove_model_bind_weights(grove_model *model, const grove_tensor_view *tensors, size_t count,
                                      int copy);

/* ---- Running ----------------------------------------------------------------------------------- */

typedef struct grove_run_options {
  int64_t batch; /* inputs per call of the compiled code; 0: all in one call. Results agree
                    across batch sizes to float rounding, not bit for bit. */
} grove_run_options;

/* A batch of trees. Give either `parent` or `child_begin` + `children`:
 *   parent[i]: the global id of node i's parent, -1 for its tree's root; a node's children are
 *     ordered by id (the left child has the smaller id);
 *   children[child_begin[i] .. child_begin[i+1]): node i's children in order, child_begin with N + 1
 *     entries; the root is the one node of its tree that is no one's child.
 * token[i]: a leaf's token id in [0, vocab_size); -1 for an internal node. */
typedef struct grove_trees {
  int64_t num_trees;
  const int64_t *node_begin; /* num_trees + 1 entries, node_begin[0] = 0 */
  const int32_t *parent;     /* N entries, or NULL */
  const int64_t *child_begin;
  const int32_t *children;
  const int32_t *token; /* N entries */
} grove_trees;

/* Every tree's root state, tree by tree: rows = num_trees, rows × output_elements floats into out.
 * With out == NULL only *rows is set. capacity counts floats. */
grove_status grove_model_run_trees(const grove_model *model, const grove_trees *trees,
                                   const grove_run_options *options, float *out, int64_t capacity,
                                   int64_t *rows);

typedef enum grove_dag_outputs {
  GROVE_OUTPUTS_SINKS = 0,    /* each DAG's sinks (nodes that are no one's predecessor), in node order */
  GROVE_OUTPUTS_ALL_NODES = 1 /* every node, in node order */
} grove_dag_outputs;

/* A batch of DAGs: node i's predecessor slots are preds[pred_begin[i] .. pred_begin[i+1]) (global ids,
 * -1 for an empty slot), predecessor_slots of them per node; token[i] is node i's token. */
typedef struct grove_dags {
  int64_t num_dags;
  const int64_t *node_begin; /* num_dags + 1 */
  const int64_t *pred_begin; /* N + 1 */
  const int32_t *preds;
  const int32_t *token; /* N */
  grove_dag_outputs outputs;
} grove_dags;

grove_status grove_model_run_dags(const grove_model *model, const grove_dags *dags,
                                  const grove_run_options *options, float *out, int64_t capacity,
                                  int64_t *rows);

/* The direction a DAG-RNN sweeps a grid, named by the corner it runs towards; a cell's two
 * predecessor slots, an empty slot outside the grid: */
typedef enum grove_sweep {
  GROVE_SWEEP_SOUTHEAST = 0, /* the cell above, the cell to its left */
  GROVE_SWEEP_SOUTHWEST = 1, /* above, right */
  GROVE_SWEEP_NORTHEAST = 2, /* below, left */
  GROVE_SWEEP_NORTHWEST = 3  /* below, right */
} grove_sweep;

/* A batch of grids, each rows[k] × cols[k] tokens, row-major from tokens[token_begin[k]]. A grid
 * DAG-RNN's output: each grid's last cell (its one sink). */
typedef struct grove_grids {
  int64_t num_grids;
  const int32_t *rows;
  const int32_t *cols;
  const int64_t *token_begin; /* num_grids + 1 */
  const int32_t *tokens;
  grove_sweep sweep;
} grove_grids;

grove_status grove_model_run_grids(const grove_model *model, const grove_grids *grids,
                                   const grove_run_options *options, float *out, int64_t capacity,
                                   int64_t *rows);

/* A batch of sequences: sequence k is tokens[token_begin[k] .. token_begin[k+1]); its last token's
 * state is its output row. */
typedef struct grove_sequences {
  int64_t num_sequences;
  const int64_t *token_begin; /* num_sequences + 1 */
  const int32_t *tokens;
} grove_sequences;

grove_status grove_model_run_sequences(const grove_model *model, const grove_sequences *sequences,
                                       const grove_run_options *options, float *out, int64_t capacity,
                                       int64_t *rows);

/* ---- Relay programs (version 2) ---------------------------------------------------------------- *
 * A whole model written in Relay (docs/RELAY.md), run as `grove relay run` runs it: on the VM, with
 * Halide kernels and grove's recursive compiler for recursive functions over trees, or on the
 * reference interpreter.
 *
 *   grove_relay *program;
 *   grove_relay_options options = {.threads = 4};
 *   if (grove_relay_open("models/relay/mlp.relay", &options, &program) != GROVE_OK) ...
 *   int64_t x_shape[] = {2, 16};
 *   grove_tensor inputs[5] = {{GROVE_DTYPE_FLOAT32, x, x_shape, 2}, ...};  // @main's parameters
 *   grove_relay_result *result;
 *   grove_relay_run(program, inputs, 5, NULL, &result);
 *   grove_tensor out;
 *   grove_relay_result_tensor(result, 0, &out);                          // [2, 10] float32
 *   grove_relay_result_free(result);
 *   grove_relay_close(program);
 *
 * Arguments are positional: one tensor per parameter of @main, in order, except the parameter of
 * type List[Tree[int32]] or List[Rose[int32]] (when @main has exactly one: grove_relay_param's kind
 * GROVE_RELAY_PARAM_TREES), which takes PTB trees instead; a List[Tensor[S]] takes one tensor of
 * shape (N, S...), its N slices the list's elements. The result, a tensor or a (nested) tuple
 * or List of tensors, is flattened in order. Arguments that do not fit @main (their count, a dtype,
 * a rank or a known dimension) are GROVE_ERROR_USER naming the parameter and its type.
 *
 * Threads. grove_relay_run may be called from several threads on one program: runs on the VM take
 * turns (the VM caches compiled kernels per program), each using options.threads threads inside;
 * open one program per thread to run side by side. grove_relay_close must not race other calls on
 * the program. A result is independent of its program and may outlive it. */

typedef enum grove_dtype {
  GROVE_DTYPE_BOOL = 0, /* one byte, 0 or 1 */
  GROVE_DTYPE_INT8 = 1,
  GROVE_DTYPE_INT16 = 2,
  GROVE_DTYPE_INT32 = 3,
  GROVE_DTYPE_INT64 = 4,
  GROVE_DTYPE_UINT8 = 5,
  GROVE_DTYPE_UINT16 = 6,
  GROVE_DTYPE_UINT32 = 7,
  GROVE_DTYPE_UINT64 = 8,
  GROVE_DTYPE_FLOAT16 = 9,
  GROVE_DTYPE_FLOAT32 = 10,
  GROVE_DTYPE_FLOAT64 = 11
} grove_dtype;

/* A dense row-major tensor (DLPack's fields for a contiguous CPU tensor). data may be NULL only
 * when the tensor has no elements; shape may be NULL only for rank 0. */
typedef struct grove_tensor {
  grove_dtype dtype;
  const void *data;
  const int64_t *shape;
  int32_t rank;
} grove_tensor;

typedef struct grove_relay grove_relay;
typedef struct grove_relay_result grove_relay_result;

typedef enum grove_relay_executor {
  GROVE_RELAY_VM = 0,         /* the compiled virtual machine (`grove relay run`'s default) */
  GROVE_RELAY_INTERPRETER = 1 /* the reference interpreter (`--executor interp`), on the calling thread */
} grove_relay_executor;

typedef struct grove_relay_options {
  int32_t threads; /* > 0: the VM's kernel pool and grove's recursive functions; 0: all cores */
  grove_relay_executor executor;
  const char *const *targets; /* BYOC targets to partition for ("dnnl", "ccompiler", "grove"), */
  int32_t num_targets;        /* as `grove relay run --target`; none for a saved program */
  const char *vocab;          /* a vocabulary file for the words of PTB trees; NULL: integer ids */
} grove_relay_options;

/* Opens a program: Relay text (`.relay`, its constants in FILE.meta.safetensors or a #[metadata]
 * section), an ONNX model (`.onnx`), or a directory written by `grove relay build`. options may be
 * NULL (all zero: the VM on all cores). Needs the Relay back end (see "Libraries"). */
grove_status grove_relay_open(const char *path, const grove_relay_options *options, grove_relay **program);

/* The same for Relay text in memory (constants, if any, in its #[metadata] section). */
grove_status grove_relay_open_text(const char *text, const grove_relay_options *options,
                                   grove_relay **program);

/* Frees the program (NULL is fine). */
void grove_relay_close(grove_relay *program);

typedef enum grove_relay_param_kind {
  GROVE_RELAY_PARAM_TENSOR = 0,     /* give a grove_tensor */
  GROVE_RELAY_PARAM_TREES = 1,      /* give PTB trees (grove_relay_run's trees) */
  GROVE_RELAY_PARAM_OTHER = 2,      /* a tuple, closure or other ADT: the program cannot run from C */
  GROVE_RELAY_PARAM_TENSOR_LIST = 3 /* List[Tensor[S]]: give one grove_tensor of shape (N, S...), whose
                                       N slices along the first axis are the list's elements */
} grove_relay_param_kind;

/* A parameter of @main. For a tensor, dtype and shape (-1 for a `?` dimension, any size; for a list
 * of tensors the stacked tensor's: -1 then the element's shape); type is the Relay type as text ("Tensor[(?,
 * 16), float32]", "List[Tree[int32]]"). The pointers stay valid as long as the program. */
typedef struct grove_relay_param {
  const char *name; /* without `%` */
  const char *type;
  grove_relay_param_kind kind;
  grove_dtype dtype;
  const int64_t *shape;
  int32_t rank;
} grove_relay_param;

/* @main's parameter count, all kinds. */
grove_status grove_relay_num_params(const grove_relay *program, int32_t *count);

grove_status grove_relay_param_info(const grove_relay *program, int32_t index, grove_relay_param *param);

/* @main's result type as text, e.g. "Tensor[(?, 10), float32]"; valid as long as the program. */
grove_status grove_relay_result_type(const grove_relay *program, const char **type);

/* Runs @main. inputs: one tensor per parameter of kind GROVE_RELAY_PARAM_TENSOR or _TENSOR_LIST, in
 * parameter order (read during the call only); trees: PTB trees, one per line ("(3 (2 It) (4 good))"), for
 * the parameter of kind GROVE_RELAY_PARAM_TREES, else NULL. On success *result holds the result's tensors;
 * free it with grove_relay_result_free. */
grove_status grove_relay_run(const grove_relay *program, const grove_tensor *inputs, size_t num_inputs,
                             const char *trees, grove_relay_result **result);

/* The result's tensor count and tensor `index` (its data owned by the result, valid until it is
 * freed). */
grove_status grove_relay_result_count(const grove_relay_result *result, int32_t *count);
grove_status grove_relay_result_tensor(const grove_relay_result *result, int32_t index, grove_tensor *tensor);

/* Frees the result (NULL is fine). */
void grove_relay_result_free(grove_relay_result *result);

#ifdef __cplusplus
}
#endif

#endif /* GROVE_GROVE_H */
