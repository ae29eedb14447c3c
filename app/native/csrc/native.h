/* The whole kernel, for one translation unit: kernel.c (the Python module) or a C harness (tests/native)
 * includes this, so every part stays static and inlinable. */
#ifndef SL_NATIVE_H
#define SL_NATIVE_H
#include "common.h"
#include "blocks.h"
#include "pool.h"
#include "activations.h"
#include "matmul.h"
#include "descriptor.h"
#include "ops.h"
#include "attention.h"
#include "forward.h"
#endif
