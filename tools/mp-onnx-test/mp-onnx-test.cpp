//===- mp-onnx-test.cpp - run ONNX backend tests --------------------------===//

#include "mp/Runner/Runner.h"

int main(int argc, char **argv) { return mp::onnxTestMain(argc, argv); }
