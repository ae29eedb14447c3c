/* The whole kernel, for one translation unit: kernel.c (the Python module) or a C harness (tests/native)
 * includes this, so every part stays static and inlinable. In order: the shared types and the records'
 * layouts, the plain-C reference of every vectorised function (`*_ref`), the build's own forms and the names
 * mapped to them (dispatch.h, the one place), then what calls them: matmul, attention's jobs, the pass. */
#ifndef SL_NATIVE_H
#define SL_NATIVE_H
#include "common.h"
#include "blocks.h"
#include "pool.h"
#include "descriptor.h"
#include "ops.h"
/* references */
#include "quants.h"
#include "activations.h"
#include "attention.h"
/* the build's forms, by name */
#include "dispatch.h"
/* drivers */
#include "matmul.h"
#include "forward.h"
#endif
