// Invalid tg-check-numerics options are errors, never crashes.
// RUN: not mp-opt %s --tg-check-numerics=scope=sometimes 2>&1 | FileCheck %s --check-prefix=SCOPE
// RUN: not mp-opt %s "--tg-check-numerics=ops=fc[" 2>&1 | FileCheck %s --check-prefix=GLOB

// SCOPE: error: tg-check-numerics: invalid scope 'sometimes'; expected all, forward or backward
// GLOB: error: tg-check-numerics: invalid pattern 'fc[' in 'ops':

module {
}
// RUN: not mp-opt %s "--tg-check-numerics=ops=a,,b" 2>&1 | FileCheck %s --check-prefix=EMPTY
// EMPTY: error: tg-check-numerics: an empty pattern in 'ops'
