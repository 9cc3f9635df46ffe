//===- mp-compile.cpp - compile a tg step ahead of time -------------------===//

#include "mp/Tools/mp-compile/CompileMain.h"

int main(int argc, char **argv) { return mp::compileMain(argc, argv); }
