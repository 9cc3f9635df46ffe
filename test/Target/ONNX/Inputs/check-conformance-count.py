"""Checks that docs/Importing.md states the conformance counts that the
expected-pass list holds and that mp-onnx-test just measured.

usage: check-conformance-count.py <expected list> <Importing.md> <mp-onnx-test output>
"""

import re
import sys


def main():
    expected, doc, output = sys.argv[1:4]
    names = [line.split("#")[0].strip() for line in open(expected)]
    names = [n for n in names if n]
    node = sum(1 for n in names if n.startswith("node/"))
    measured = re.search(r"^passed (\d+) of (\d+) tests", open(output).read(),
                         re.M)
    stated = re.search(r"passes (\d+) of the (\d+) node tests and (\d+) of "
                       r"the (\d+) tests", open(doc).read().replace("\n", " "))
    if not measured or not stated:
        sys.exit("no counts found (the docs must say 'passes N of the M node "
                 "tests and P of the Q tests')")
    passed, total = int(measured.group(1)), int(measured.group(2))
    doc_node, doc_all, doc_total = (int(stated.group(1)), int(stated.group(3)),
                                    int(stated.group(4)))
    print("expected list: %d tests (%d node tests); measured %d of %d; "
          "docs: %d node tests, %d of %d" % (len(names), node, passed, total,
                                             doc_node, doc_all, doc_total))
    if (node, len(names), passed, total) != (doc_node, doc_all, doc_all,
                                              doc_total):
        sys.exit("the counts differ: update docs/Importing.md and the "
                 "expected list (mp-onnx-test --write-expected)")
    print("counts agree")


if __name__ == "__main__":
    main()
