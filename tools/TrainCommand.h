#pragma once
// `grove train MODEL --trees train.txt --dev dev.txt --out DIR ...`: trains a tree model and a linear +
// softmax classifier on labelled PTB trees (training/Trainer.h) through the compiled training program
// (backends/cpu/TrainableModel.h), printing one line per epoch and writing DIR/best.safetensors and
// DIR/last.safetensors.

#include <cstdint>
#include <string>

namespace grove::tool {

// The defaults are Tai, Socher and Manning's recipe for the constituency TreeLSTM on SST (AdaGrad
// 0.05, the embedding by SGD at 0.1, batch 25, L2 1e-4, dropout 0.5, 10 epochs, every node's loss)
// but the loss's average: PyTorch's mean over the labelled nodes here, their sum over the batch's
// trees there (`--average trees`, ~37× larger gradients on SST; it learns faster: 47.1% dev root
// after 3 epochs against 37.5% with the mean, random embeddings, H=150, D=300, seed 1;
// experiments/results/train_sst.md).
struct TrainCommand {
  std::string model, trees, dev, vocab, sizes, init, embeddings, resume, out;
  int64_t epochs = 10, batch = 25, patience = 0;
  std::string optimizer = "adagrad", emb_optimizer = "sgd", loss = "all", average = "nodes";
  double lr = 0.05, emb_lr = 0.1, weight_decay = 1e-4, dropout = 0.5, clip = 0.0;
  bool lr_given = true;  // false: --lr not given, so Adam takes PyTorch's default 0.001
  uint64_t seed = 1;
  int threads = 0;  // > 0: the schedule's threads=N
  std::string schedule, target = "host";
  bool quiet = false;    // no progress line
  bool stats = false;    // after each epoch, where its time went (standard error)
  std::string step_log;  // "": none; else one JSON line per step: {"step", "epoch", "trees", "loss"}
};

int train(const TrainCommand &c);

}  // namespace grove::tool
