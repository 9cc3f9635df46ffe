//===- mp-grad-check.cpp - derived gradients against finite differences ---===//

#include "mp/Runner/Runner.h"

int main(int argc, char **argv) { return mp::gradCheckMain(argc, argv); }
