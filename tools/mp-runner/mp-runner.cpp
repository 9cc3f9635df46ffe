//===- mp-runner.cpp - train a model with a compiled tg step --------------===//

#include "mp/Tools/mp-runner/RunnerMain.h"

int main(int argc, char **argv) { return mp::runnerMain(argc, argv); }
