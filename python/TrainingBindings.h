#pragma once
// Training from Python: grove.TrainableModel (a tree model compiled for training, its forward and
// backward, backends/cpu/TrainableModel.h), grove.Trainer (the training driver `grove train` runs,
// training/Trainer.h, also one step at a time) and grove.LabelledTrees (labelled PTB trees as `grove
// train` reads them). Registered into the _grove module by grove_module.cpp.

#include <pybind11/pybind11.h>

namespace grove::python {

void register_training(pybind11::module_ &m);

}  // namespace grove::python
