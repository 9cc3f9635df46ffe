//===- mp-grad-check.cpp - derived gradients against finite differences ---===//

#include "mp/Tools/mp-grad-check/GradCheckMain.h"

int main(int argc, char **argv) { return mp::gradCheckMain(argc, argv); }
