// grove — the command-line program: compile and run recursive models, and show each stage.
#include <CLI/CLI.hpp>
#include <iostream>
#include <string>

#include "support/Error.h"
#include "tools/Bench.h"
#include "tools/Commands.h"
#include "tools/CompileCommand.h"
#include "tools/Messages.h"
#include "tools/RelayBench.h"
#include "tools/RelayCommands.h"
#include "tools/Report.h"
#include "tools/TrainCommand.h"
#include "tools/Tune.h"

int main(int argc, char **argv) {
  CLI::App app{
      "grove: a compiler for recursive neural networks (TreeLSTM, TreeGRU, MV-RNN, TreeFC, ...).\n"
      "A model file (models/*.grove) is compiled to vectorized, multi-threaded machine code and run\n"
      "over a batch of input trees. Start with `grove run --help`."};
  app.require_subcommand(1);

  grove::tool::RunCommand run;
  CLI::App *r = app.add_subcommand(
      "run", "Compile MODEL and write the output state of every tree, DAG, grid or sequence to OUT.npy");
  r->add_option("model", run.model,
                "Model file, e.g. models/treelstm.grove, or a shared library `grove compile` wrote")
      ->required()
      ->check(CLI::ExistingFile);
  // Required with a model file (checked below); a compiled library may embed its weights.
  r->add_option("--weights", run.weights,
                "Weights in safetensors format (names and shapes of the model's params)")
      ->check(CLI::ExistingFile);
  // Exactly one of --trees, --dags, --grids, --sequences (checked by the run command).
  r->add_option("--trees", run.inputs.trees,
                "Trees, one per line, in PTB bracket format: (3 (2 It) (4 good))")
      ->check(CLI::ExistingFile);
  r->add_option("--dags", run.inputs.dags,
                "DAGs (dag models) as JSON: {\"nodes\": [{\"token\": 3, \"preds\": [0, null]}, ...]} or a "
                "list of such objects")
      ->check(CLI::ExistingFile);
  r->add_option("--grids", run.inputs.grids,
                "Image grids (dag models), one per line: R C and then R*C token ids, row-major")
      ->check(CLI::ExistingFile);
  r->add_option("--sequences", run.inputs.sequences,
                "Sequences (sequence models), one per line, tokens separated by spaces")
      ->check(CLI::ExistingFile);
  r->add_option("--sweep", run.inputs.sweep,
                "Grids: the sweep direction se (default: p0 above, p1 left), sw, ne or nw");
  r->add_flag("--all-nodes", run.all_nodes,
              "DAGs and grids: write every node's output in node order, not only the sinks'");
  r->add_option("--vocab", run.inputs.vocab,
                "Vocabulary for trees and sequences: one token per line, id = line number; without it "
                "tokens are ids")
      ->check(CLI::ExistingFile);
  r->add_option("--out", run.out,
                "Output .npy file, float32: [trees, H] (roots), [sinks, H] (DAGs, grids), [sequences, H] "
                "(last states), in input order")
      ->required();
  r->add_option(
       "--batch", run.batch,
       "Trees per call of the compiled code (0 = one call per --chunk); results agree to float rounding "
       "whatever it is")
      ->check(CLI::NonNegativeNumber);
  r->add_option("--chunk", run.chunk,
                "Inputs read and run at a time (rounded up to a multiple of --batch): memory is bounded by "
                "the chunk, not the input file")
      ->check(CLI::PositiveNumber);
  r->add_option("--threads", run.threads,
                "Threads (the schedule's threads=N; default: all cores, shared among the MPI ranks on a "
                "machine)");
  r->add_flag("--quiet", run.quiet, "No progress line on a terminal");
  r->add_option("--target", run.target,
                "Halide target string (default: host), or cuda: the GPU's kernels through the CUDA driver");
  r->add_option(
      "--cuda", run.cuda,
      "--target cuda: the kernels' form, as grove dump --cuda takes it, e.g. 'form=per_level,graph=off' "
      "(default: persistent, counter barrier, 4 blocks x 32 threads)");
  r->add_option("--schedule", run.schedule,
                "Schedule overrides, e.g. 'batch=off' or 'fuse=off,node_block=4'");
  r->add_flag("--stats", run.stats, "Print what was run and how long each step took");
  r->add_flag("--tuned", run.tuned,
              "Start from the schedule `grove tune` cached for this model, sizes, --batch and threads");
  r->add_option("--cache", run.cache, "The tuning cache (default: $XDG_CACHE_HOME/grove/schedules.json)");

  grove::tool::DumpCommand dump;
  CLI::App *d = app.add_subcommand("dump", "Print one stage of MODEL's compilation");
  d->add_option("model", dump.model, "Model file")->required()->check(CLI::ExistingFile);
  d->add_option("--stage", dump.stage,
                "ilir (the IR), plan (the level plan: each case's GEMM groups, matrix products and node "
                "loops, and the entry function's arguments), loops (the Halide loop nest), llvm (LLVM IR), "
                "asm (x86 assembly), cuda (the CUDA kernels' source; every size bound) or ptx (their PTX, "
                "through NVRTC)")
      ->check(CLI::IsMember({"ilir", "plan", "loops", "llvm", "asm", "cuda", "ptx"}));
  d->add_option("--sizes", dump.sizes,
                "Bind size variables, e.g. H=256,D=256,V=100 (else they stay symbolic)");
  d->add_option("--schedule", dump.schedule, "Schedule overrides, e.g. 'gemm=off'");
  d->add_option("--target", dump.target, "Halide target string (default: host)");
  d->add_option("--cuda", dump.cuda,
                "--stage cuda|ptx: the kernels' form, e.g. 'form=per_level' or "
                "'form=persistent,barrier=grid_sync,blocks=132,threads=256,shared_limit=232448' (default: "
                "persistent, counter barrier, 4 blocks x 32 threads, 48 KB of weights in shared memory; "
                "graph=on|off: per level on a GPU, the launches replayed as a CUDA graph, default on)");
  d->add_option("--arch", dump.arch, "--stage ptx: the GPU architecture, e.g. sm_90 (default) or compute_75");
  d->add_option("--training", dump.training,
                "Show a training program instead of the model: backward (the backward pass derived from "
                "the model, top down, with its weight-gradient reductions) or forward (the forward that "
                "keeps per node what the backward reads)")
      ->check(CLI::IsMember({"backward", "forward"}));

  grove::tool::InitWeightsCommand init;
  CLI::App *w =
      app.add_subcommand("init-weights", "Write seeded random weights for MODEL (uniform, ±1/sqrt(fan-in))");
  w->add_option("model", init.model, "Model file")->required()->check(CLI::ExistingFile);
  w->add_option("--sizes", init.sizes, "Every size variable, e.g. H=256,D=256,V=21702")->required();
  w->add_option("--seed", init.seed, "Random seed (default 1)");
  w->add_option("--out", init.out, "Output safetensors file")->required();

  grove::tool::CompileCommand compile;
  CLI::App *cp = app.add_subcommand(
      "compile",
      "Compile MODEL ahead of time into DIR: lib<name>.so, lib<name>.a and <name>.h, which link "
      "libgrove_runtime and not the compiler (open them with grove's C API, include/grove/grove.h)");
  cp->add_option("model", compile.model, "Model file, e.g. models/treelstm.grove")
      ->required()
      ->check(CLI::ExistingFile);
  cp->add_option("--weights", compile.weights, "Weights in safetensors format: they give the sizes")
      ->check(CLI::ExistingFile);
  cp->add_option("--sizes", compile.sizes, "Every size variable, without --weights: H=256,D=300,V=21701");
  cp->add_option(
      "--target", compile.target,
      "Halide target string (default: host), or cuda: the kernels compiled by NVRTC into the library");
  cp->add_option("--schedule", compile.schedule, "Schedule overrides, e.g. 'unroll=2'");
  cp->add_option("--threads", compile.threads, "Threads (the schedule's threads=N; default: all cores)");
  cp->add_flag("--embed-weights", compile.embed_weights,
               "Embed the --weights file in the libraries: they run without a weights file");
  cp->add_option("--name", compile.name,
                 "The libraries' name, a C identifier (default: the model's name in lower case)");
  cp->add_option("--cuda", compile.cuda, "--target cuda: the kernels' form, as grove dump --cuda takes it");
  cp->add_option(
      "--arch", compile.arch,
      "--target cuda: GPU architectures, sm_XX for a cubin and compute_XX for PTX (default sm_90; the "
      "lowest sm_XX's PTX is added unless one is named)");
  cp->add_flag("--no-ptx", compile.no_ptx, "--target cuda: embed cubins only (no PTX for later GPUs)");
  cp->add_option("-o,--out", compile.out, "Output directory (created if missing)")->required();

  // bench and tune take the same inputs.
  auto add_bench_options = [](CLI::App *b, grove::tool::BenchCommand &bench) {
    b->add_option("model", bench.model, "Model file")->required()->check(CLI::ExistingFile);
    // Exactly one of --trees, --dags, --grids, --sequences (checked by the command).
    b->add_option("--trees", bench.inputs.trees, "Trees, one per line, in PTB bracket format")
        ->check(CLI::ExistingFile);
    b->add_option("--dags", bench.inputs.dags, "DAGs (dag models) as JSON, as grove run takes them")
        ->check(CLI::ExistingFile);
    b->add_option("--grids", bench.inputs.grids, "Image grids (dag models), as grove run takes them")
        ->check(CLI::ExistingFile);
    b->add_option("--sequences", bench.inputs.sequences,
                  "Sequences (sequence models), as grove run takes them")
        ->check(CLI::ExistingFile);
    b->add_option("--sweep", bench.inputs.sweep, "Grids: the sweep direction se (default), sw, ne or nw");
    b->add_option("--vocab", bench.inputs.vocab,
                  "Vocabulary for trees and sequences (one token per line); without it tokens are ids")
        ->check(CLI::ExistingFile);
    b->add_option("--weights", bench.weights, "Weights in safetensors format")->check(CLI::ExistingFile);
    b->add_flag("--random-weights", bench.random_weights,
                "Seeded random weights, as init-weights writes them");
    b->add_option("--sizes", bench.sizes, "Sizes of --random-weights, e.g. H=256,D=256,V=21702");
    b->add_option("--seed", bench.seed, "Seed of --random-weights (default 1)");
    b->add_option("--batch", bench.batch, "Trees per call of the compiled code")->required();
    b->add_option("--repeat", bench.repeat,
                  "Timed passes after one warm-up pass (bench: 5, tune: 3 by default)");
    b->add_option("--threads", bench.threads, "Threads (the schedule's threads=K; default: all cores)");
    b->add_option("--schedule", bench.schedule, "Schedule overrides, e.g. 'persist=off'");
    b->add_option("--limit", bench.limit, "Use only the first LIMIT trees");
    b->add_option("--target", bench.target,
                  "Halide target string (default: host), or cuda: the GPU's kernels (bench only)");
    b->add_option("--cuda", bench.cuda, "--target cuda: the kernels' form, as grove dump --cuda takes it");
    b->add_option("--cache", bench.cache, "The tuning cache (default: $XDG_CACHE_HOME/grove/schedules.json)");
    b->add_flag("--quiet", bench.quiet, "No progress line on a terminal");
  };
  grove::tool::BenchCommand bench;
  CLI::App *b = app.add_subcommand("bench",
                                   "Time MODEL over trees, DAGs, grids or sequences in calls of --batch "
                                   "inputs (the peers' protocol: median "
                                   "of --repeat passes)");
  add_bench_options(b, bench);
  b->add_flag("--json", bench.json, "Print one JSON object instead of the report");
  b->add_flag("--tuned", bench.tuned,
              "Start from the schedule `grove tune` cached for this model, sizes, --batch and threads");

  grove::tool::TuneCommand tune;
  CLI::App *t = app.add_subcommand(
      "tune",
      "Search the schedule space for MODEL on TREES in calls of --batch trees (grove bench's protocol) and "
      "cache the fastest schedule for grove bench/run --tuned");
  add_bench_options(t, tune.bench);
  tune.bench.repeat = 3;

  grove::tool::TrainCommand train;
  CLI::App *tr = app.add_subcommand(
      "train",
      "Train MODEL and a linear + softmax classifier on labelled PTB trees (SST labels every node): one "
      "line per epoch, checkpoints DIR/best.safetensors and DIR/last.safetensors (grove run --weights "
      "takes them); the defaults are Tai et al.'s TreeLSTM recipe but --average (theirs: trees)");
  tr->add_option("model", train.model, "Model file, e.g. models/treelstm.grove")
      ->required()
      ->check(CLI::ExistingFile);
  tr->add_option("--trees", train.trees,
                 "Training trees, one per line, PTB format with labels 0-4 at every node")
      ->required()
      ->check(CLI::ExistingFile);
  tr->add_option("--dev", train.dev, "Dev trees (same format), evaluated after every epoch")
      ->required()
      ->check(CLI::ExistingFile);
  tr->add_option("--vocab", train.vocab,
                 "Vocabulary: one token per line, id = line number; words not in it take its <unk> line's "
                 "id (appended as the last id when the file has none). Without it tokens are ids")
      ->check(CLI::ExistingFile);
  tr->add_option("--out", train.out, "Checkpoint directory (created if missing)")->required();
  tr->add_option("--sizes", train.sizes,
                 "Sizes of random initial weights, e.g. H=150,D=300 (V comes from --vocab)");
  tr->add_option("--init", train.init,
                 "Initial weights (safetensors; a head.weight/head.bias in it initializes the classifier)")
      ->check(CLI::ExistingFile);
  tr->add_option(
        "--resume", train.resume,
        "Continue from a checkpoint grove train wrote (weights, head, optimizer and epoch), with the "
        "options it was trained with")
      ->check(CLI::ExistingFile);
  tr->add_option("--embeddings", train.embeddings,
                 "GloVe vectors (text: a word and D numbers per line) for the vocabulary's words; the other "
                 "rows uniform in +-0.05")
      ->check(CLI::ExistingFile);
  tr->add_option("--epochs", train.epochs, "Epochs in all (default 10)");
  tr->add_option("--batch", train.batch,
                 "Trees per step; loss and gradients are averaged over its labelled nodes (default 25)");
  tr->add_option("--optimizer", train.optimizer, "adagrad (default), adam or sgd, as PyTorch defines them");
  tr->add_option("--lr", train.lr,
                 "Learning rate of the model and the head (default 0.05; with --optimizer adam 0.001)");
  tr->add_option("--emb-lr", train.emb_lr,
                 "Learning rate of the embedding, updated at the rows a batch reads (default 0.1)");
  tr->add_option("--emb-optimizer", train.emb_optimizer,
                 "sgd (plain SGD, default) or same (the --optimizer)");
  tr->add_option("--weight-decay", train.weight_decay,
                 "L2 weight decay on all but the embedding (default 1e-4)");
  tr->add_option("--dropout", train.dropout, "Dropout rate before the classifier (default 0.5; 0: none)");
  tr->add_option("--clip", train.clip, "Clip the global gradient norm to this (default 0: no clipping)");
  tr->add_option("--loss", train.loss, "all (every labelled node, default) or root");
  tr->add_option("--average", train.average,
                 "The batch's loss: nodes (the mean over its labelled nodes, as PyTorch's CrossEntropyLoss; "
                 "default) or trees (their sum divided by its trees, as Tai et al.)");
  tr->add_option("--seed", train.seed, "Seed of the initial weights, shuffles and dropout masks (default 1)");
  tr->add_option("--patience", train.patience,
                 "Stop after this many epochs without a better dev root accuracy (0: never)");
  tr->add_option("--threads", train.threads, "Threads (the schedule's threads=N; default: all cores)");
  tr->add_option("--schedule", train.schedule, "Schedule overrides, e.g. 'persist=off'");
  tr->add_option("--target", train.target, "Halide target string (default: host)");
  tr->add_flag("--quiet", train.quiet, "No progress line on a terminal");
  tr->add_flag("--stats", train.stats,
               "After each epoch, print where its time went: the model's forward and backward (its compiled "
               "code, inspector and runtime), the head, the optimizer's update, set_weights");
  tr->add_option("--step-log", train.step_log,
                 "Write one JSON line per step to this file: step, epoch, the batch's trees (0-based "
                 "indices into --trees, in batch order) and its loss");

  // grove relay: the Relay layer.
  CLI::App *relay = app.add_subcommand(
      "relay", "Relay programs (TVM's text format 0.0.5): check types, optimize, compare and run them");
  relay->require_subcommand(1);
  grove::tool::RelayCheckCommand relay_check;
  CLI::App *rc = relay->add_subcommand("check", "Type-check FILE and print it with every binding's type");
  rc->add_option("file", relay_check.file, "Relay text file, e.g. models/relay/mlp.relay")
      ->required()
      ->check(CLI::ExistingFile);
  grove::tool::RelayOptCommand relay_opt;
  CLI::App *ro = relay->add_subcommand("opt", "Run passes over FILE in the given order and print the module");
  ro->add_option("file", relay_opt.file, "Relay text file")->required()->check(CLI::ExistingFile);
  ro->add_option(
        "--passes", relay_opt.passes,
        "Comma-separated passes: infer, dce, fold, cse, inline, anf, graph, fuse, merge-composite=T, "
        "annotate=T, merge-regions, partition (T: a code generator, or T1+T2)")
      ->required();
  ro->add_option("--out", relay_opt.out,
                 "Write the module to this file (atomically; large constants to its .meta.safetensors) "
                 "instead of printing it");
  ro->add_option("--fuse-max-depth", relay_opt.fuse_max_depth,
                 "fuse: the most ops in one group (default 256)");
  ro->add_flag("--types", relay_opt.types, "Print every binding's type as a /* ty=... */ comment");
  ro->add_option(
      "--meta", relay_opt.meta,
      "Where constants that are not literals go: sidecar (OUT's .meta.safetensors, the default) or "
      "inline (a #[metadata] section at the end of the text, as TVM prints modules)");
  ro->add_flag("--explain", relay_opt.explain,
               "Say on stderr which globals grove's recursive compiler compiles (recursive functions over a "
               "tree) and why the others are not");
  grove::tool::RelayEqualCommand relay_equal;
  CLI::App *re = relay->add_subcommand(
      "equal",
      "Exit 0 if A and B are structurally equal (free variables mapped), else print the first difference "
      "and exit 1");
  re->add_option("a", relay_equal.a, "Relay text file")->required()->check(CLI::ExistingFile);
  re->add_option("b", relay_equal.b, "Relay text file")->required()->check(CLI::ExistingFile);
  grove::tool::RelayRunCommand relay_run;
  CLI::App *rr = relay->add_subcommand("run", "Run FILE's @main and write or print its result");
  rr->add_option("file", relay_run.file,
                 "Relay text file, ONNX model (.onnx), or a directory grove relay build wrote")
      ->required()
      ->check(CLI::ExistingPath);
  rr->add_option(
      "--arg", relay_run.args,
      "A parameter of @main: NAME=FILE.npy for a tensor, NAME=@FILE for a value written in Relay's "
      "syntax (Cons(Leaf(3), Nil), (1f, 2i64)); repeat per parameter");
  rr->add_option("--trees", relay_run.trees,
                 "PTB trees (one per line) for @main's List[Tree[int32]] or List[Rose[int32]] parameter")
      ->check(CLI::ExistingFile);
  rr->add_option("--vocab", relay_run.vocab, "Vocabulary for --trees' tokens (else tokens are integer ids)")
      ->check(CLI::ExistingFile);
  rr->add_option(
      "--out", relay_run.out,
      "Result file: OUT.npy for a tensor; for a tuple or a List a directory of 0.npy, 1.npy, ... or "
      "OUT.safetensors. "
      "Without it the result is printed");
  rr->add_option("--executor", relay_run.executor,
                 "vm (the compiled virtual machine, default) or interp (the reference interpreter)");
  rr->add_option("--threads", relay_run.threads,
                 "Threads of the VM's kernels and of grove's recursive functions (default: all cores)")
      ->check(CLI::Range(1, 1024));
  rr->add_option("--target", relay_run.targets,
                 "Partition for these external code generators first (comma-separated, in priority order; "
                 "grove relay targets lists them)")
      ->delimiter(',');
  grove::tool::RelayDumpCommand relay_dump;
  CLI::App *rd = relay->add_subcommand("dump", "Print one stage of FILE's compilation");
  rd->add_option("file", relay_dump.file, "Relay text file")->required()->check(CLI::ExistingFile);
  rd->add_option(
      "--stage", relay_dump.stage,
      "vm (the VM's bytecode: functions, registers, instructions), claimed (the module after grove's "
      "recursive compiler claimed its functions, before fusion, as Relay text), ilir (the ILIR of each "
      "global "
      "grove's recursive compiler compiles) or model (the model each such global is translated to, "
      "in the model language)");
  rd->add_option(
      "--arg", relay_dump.args,
      "--stage ilir or model: NAME=FILE.npy gives the shape of a recursive function's weight parameter "
      "NAME whose annotated type has `?`; repeat per parameter");
  grove::tool::RelayPartitionCommand relay_partition;
  CLI::App *rp = relay->add_subcommand(
      "partition",
      "Partition FILE for external code generators (merge-composite, annotate, merge-regions, partition) "
      "and print the module");
  rp->add_option("file", relay_partition.file, "Relay text file")->required()->check(CLI::ExistingFile);
  rp->add_option("--target", relay_partition.targets,
                 "Code generators, comma-separated, in priority order (grove relay targets lists them)")
      ->required()
      ->delimiter(',');
  rp->add_option("--out", relay_partition.out,
                 "Write the module to this file (atomically; large constants to its .meta.safetensors)");
  grove::tool::RelayBuildCommand relay_build;
  CLI::App *rbuild = relay->add_subcommand(
      "build",
      "Partition FILE for external code generators, compile them and save the program to a directory "
      "(module.relay, each saved kernel, manifest.json) that grove relay run/bench DIR load");
  rbuild->add_option("file", relay_build.file, "Relay text file or ONNX model (.onnx)")
      ->required()
      ->check(CLI::ExistingFile);
  rbuild
      ->add_option("--target", relay_build.targets,
                   "Code generators, comma-separated, in priority order (none: not partitioned)")
      ->delimiter(',');
  rbuild
      ->add_option("--out", relay_build.out,
                   "The directory to write (replaced atomically when it is a previous build's; any other "
                   "existing, non-empty directory is refused)")
      ->required();
  grove::tool::RelayImportCommand relay_import;
  CLI::App *rimport = relay->add_subcommand(
      "import",
      "Translate an ONNX model (opsets 11-17) to Relay text; its weights go to the constants sidecar "
      "(M.meta.safetensors)");
  rimport->add_option("file", relay_import.file, "ONNX model, e.g. exported by torch.onnx.export")
      ->required()
      ->check(CLI::ExistingFile);
  rimport->add_option("--out", relay_import.out, "The Relay file to write (never an input)")->required();
  CLI::App *rops = relay->add_subcommand("ops", "List the operators grove's Relay layer supports");
  CLI::App *rtargets = relay->add_subcommand("targets", "List the external code generators (BYOC targets)");
  grove::tool::RelayBenchCommand relay_bench;
  CLI::App *rb = relay->add_subcommand(
      "bench",
      "Time FILE's @main on the interpreter or the VM (grove bench's protocol: median of --repeat passes)");
  rb->add_option("file", relay_bench.file,
                 "Relay text file, ONNX model (.onnx), or a directory grove relay build wrote")
      ->required()
      ->check(CLI::ExistingPath);
  rb->add_option("--executor", relay_bench.executor, "vm (the compiled virtual machine, default) or interp");
  rb->add_option("--threads", relay_bench.threads,
                 "Threads of the VM's kernels and of grove's recursive functions (default: all cores)")
      ->check(CLI::Range(1, 1024));
  rb->add_option("--arg", relay_bench.args,
                 "A parameter of @main, as grove relay run takes it; repeat per parameter");
  rb->add_option("--trees", relay_bench.trees,
                 "PTB trees for @main's tree-list parameter, bound --batch at a time")
      ->check(CLI::ExistingFile);
  rb->add_option("--vocab", relay_bench.vocab, "Vocabulary for --trees' tokens")->check(CLI::ExistingFile);
  rb->add_option("--batch", relay_bench.batch, "With --trees: trees per call of @main");
  rb->add_option("--random-args", relay_bench.seed,
                 "Fill tensor parameters no --arg gives with seeded uniform values in ±1/sqrt(fan-in)");
  rb->add_option("--repeat", relay_bench.repeat, "Timed passes after one warm-up pass (default 5)");
  rb->add_flag("--json", relay_bench.json, "Print one JSON object instead of the report");
  rb->add_flag("--quiet", relay_bench.quiet, "No progress line on a terminal");
  rb->add_option("--target", relay_bench.targets,
                 "Partition for these external code generators first (comma-separated, priority order)")
      ->delimiter(',');

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError &e) {
    // --help and --version exit 0; every other command-line mistake is a user error: status 1.
    return app.exit(e) == 0 ? 0 : 1;
  }
  try {
    if (r->parsed()) {
      return grove::tool::run(run);
    }
    if (d->parsed()) return grove::tool::dump(dump);
    if (w->parsed()) return grove::tool::init_weights(init);
    if (cp->parsed()) return grove::tool::compile(compile);
    if (b->parsed()) return grove::tool::bench(bench, std::cout);
    if (t->parsed()) return grove::tool::tune(tune, std::cout);
    if (tr->parsed()) {
      train.lr_given = tr->count("--lr") > 0;
      return grove::tool::train(train);
    }
    if (rc->parsed()) return grove::tool::relay_check(relay_check);
    if (ro->parsed()) return grove::tool::relay_opt(relay_opt);
    if (re->parsed()) return grove::tool::relay_equal(relay_equal);
    if (rr->parsed()) return grove::tool::relay_run(relay_run);
    if (rd->parsed()) return grove::tool::relay_dump(relay_dump);
    if (rops->parsed()) return grove::tool::relay_ops();
    if (rimport->parsed()) return grove::tool::relay_import(relay_import);
    if (rp->parsed()) return grove::tool::relay_partition(relay_partition);
    if (rbuild->parsed()) return grove::tool::relay_build(relay_build);
    if (rtargets->parsed()) return grove::tool::relay_targets();
    if (rb->parsed()) {
      relay_bench.random_args = rb->count("--random-args") > 0;
      return grove::tool::relay_bench(relay_bench, std::cout);
    }
  } catch (const grove::UserError &e) {
    grove::tool::print_user_error(e.what());
    return 1;
  } catch (const grove::InternalError &e) {
    std::cerr << "grove: " << e.what()
              << "\nThis is a bug in grove; please report it with the command line.\n";
    return 2;
  }
  return 0;
}
