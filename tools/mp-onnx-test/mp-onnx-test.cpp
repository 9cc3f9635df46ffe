//===- mp-onnx-test.cpp - run ONNX backend tests --------------------------===//

#include "mp/Tools/mp-onnx-test/OnnxTestMain.h"

int main(int argc, char **argv) { return mp::onnxTestMain(argc, argv); }
