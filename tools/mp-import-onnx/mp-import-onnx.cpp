//===- mp-import-onnx.cpp - import an ONNX model as tg --------------------===//

#include "mp/Tools/mp-import-onnx/ImportOnnxMain.h"

int main(int argc, char **argv) { return mp::importOnnxMain(argc, argv); }
