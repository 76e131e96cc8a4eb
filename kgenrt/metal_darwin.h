//go:build darwin && cgo

// The C interface of kgenrt's Objective-C Metal code (metal_darwin.m).
// Plain C only: Go sees opaque handles. Every handle returned is retained
// (+1) and released with kgen_mtl_release; every char* returned is
// malloc'ed error text the caller frees, NULL meaning success.

#ifndef KGEN_METAL_DARWIN_H
#define KGEN_METAL_DARWIN_H

#include <stddef.h>

typedef struct {
	void *obj;  // the new object, or NULL
	char *err;  // why not, or NULL
} kgen_result;

kgen_result kgen_mtl_device(void);
kgen_result kgen_mtl_queue(void *device);
kgen_result kgen_mtl_library(void *device, const char *src, size_t len, int fast_math);
kgen_result kgen_mtl_pipeline(void *device, void *library, const char *name, unsigned *max_threads);
kgen_result kgen_mtl_buffer(void *device, const void *bytes, size_t len, void **contents);
kgen_result kgen_mtl_command_buffer(void *queue);
char *kgen_mtl_encode(void *cmdbuf, void *pipeline, void **buffers, const size_t *offsets, const unsigned *indices, int nbuffers,
                      const void *args, size_t args_len, unsigned args_index,
                      const unsigned *grid, const unsigned *threadgroup);
void kgen_mtl_commit(void *cmdbuf);
char *kgen_mtl_wait(void *cmdbuf);
void kgen_mtl_retain(void *obj);
void kgen_mtl_release(void *obj);

#endif
