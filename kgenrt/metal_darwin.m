//go:build darwin && cgo

// kgenrt's Objective-C: a thin, kernel-agnostic C layer over Metal, compiled
// once with the kgenrt package (never per generated package, so programs
// that link several generated packages have one copy of these symbols).
// Built with ARC (-fobjc-arc). Objects cross to Go as retained handles
// (__bridge_retained) that Go releases with kgen_mtl_release (CFRelease).
// Every entry point drains its own autorelease pool,
// since Go threads have none.

#import <CoreFoundation/CoreFoundation.h>
#import <Metal/Metal.h>
#include <stdlib.h>
#include <string.h>
#include "metal_darwin.h"

static char *error_text(NSError *err, const char *fallback) {
	const char *s = err ? err.localizedDescription.UTF8String : NULL;
	return strdup(s ? s : fallback);
}

static kgen_result ok(id obj) { return (kgen_result){(__bridge_retained void *)obj, NULL}; }

static kgen_result fail(char *err) { return (kgen_result){NULL, err}; }

kgen_result kgen_mtl_device(void) {
	@autoreleasepool {
		id<MTLDevice> dev = MTLCreateSystemDefaultDevice();
		if (dev == nil) {
			return fail(strdup("no Metal device (MTLCreateSystemDefaultDevice returned nil)"));
		}
		return ok(dev);
	}
}

kgen_result kgen_mtl_queue(void *device) {
	@autoreleasepool {
		id<MTLCommandQueue> q = [(__bridge id<MTLDevice>)device newCommandQueue];
		return q ? ok(q) : fail(strdup("cannot create a Metal command queue"));
	}
}

// MSL 3.1 (bfloat needs it), fast math only when the spec says `math: fast`.
kgen_result kgen_mtl_library(void *device, const char *src, size_t len, int fast_math) {
	@autoreleasepool {
		NSString *source = [[NSString alloc] initWithBytes:src length:len encoding:NSUTF8StringEncoding];
		if (source == nil) {
			return fail(strdup("the MSL source is not valid UTF-8"));
		}
		MTLCompileOptions *opts = [MTLCompileOptions new];
		opts.languageVersion = MTLLanguageVersion3_1;
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wdeprecated-declarations"
		opts.fastMathEnabled = fast_math ? YES : NO; // mathMode on macOS 15+; same meaning
#pragma clang diagnostic pop
		NSError *err = nil;
		id<MTLLibrary> lib = [(__bridge id<MTLDevice>)device newLibraryWithSource:source options:opts error:&err];
		return lib ? ok(lib) : fail(error_text(err, "the MSL source did not compile"));
	}
}

kgen_result kgen_mtl_pipeline(void *device, void *library, const char *name, unsigned *max_threads) {
	@autoreleasepool {
		NSString *fname = [NSString stringWithUTF8String:name];
		id<MTLFunction> fn = [(__bridge id<MTLLibrary>)library newFunctionWithName:fname];
		if (fn == nil) {
			return fail(strdup("the library has no function of this host name"));
		}
		NSError *err = nil;
		id<MTLComputePipelineState> p = [(__bridge id<MTLDevice>)device newComputePipelineStateWithFunction:fn error:&err];
		if (p == nil) {
			return fail(error_text(err, "cannot make a compute pipeline"));
		}
		*max_threads = (unsigned)p.maxTotalThreadsPerThreadgroup;
		return ok(p);
	}
}

// A shared-storage buffer (unified memory): the CPU sees its contents at
// *contents. bytes, when not NULL, is copied in.
kgen_result kgen_mtl_buffer(void *device, const void *bytes, size_t len, void **contents) {
	@autoreleasepool {
		id<MTLDevice> dev = (__bridge id<MTLDevice>)device;
		MTLResourceOptions mode = MTLResourceStorageModeShared;
		id<MTLBuffer> b = (bytes && len) ? [dev newBufferWithBytes:bytes length:len options:mode]
		                                 : [dev newBufferWithLength:(len ? len : 16) options:mode];
		if (b == nil) {
			return fail(strdup("cannot allocate a Metal buffer of this size"));
		}
		*contents = b.contents;
		return ok(b);
	}
}

kgen_result kgen_mtl_command_buffer(void *queue) {
	@autoreleasepool {
		id<MTLCommandBuffer> cb = [(__bridge id<MTLCommandQueue>)queue commandBuffer];
		return cb ? ok(cb) : fail(strdup("cannot create a command buffer"));
	}
}

// One compute pass: buffers at their indices and byte offsets (a view's
// offset into its buffer; 0 for a whole tensor), the args struct as
// bytes, dispatchThreads with the given grid and threadgroup.
char *kgen_mtl_encode(void *cmdbuf, void *pipeline, void **buffers, const size_t *offsets, const unsigned *indices, int nbuffers,
                      const void *args, size_t args_len, unsigned args_index,
                      const unsigned *grid, const unsigned *threadgroup) {
	@autoreleasepool {
		id<MTLCommandBuffer> cb = (__bridge id<MTLCommandBuffer>)cmdbuf;
		if (cb.status != MTLCommandBufferStatusNotEnqueued) {
			return strdup("the command buffer is already enqueued or committed; encode before Commit");
		}
		id<MTLComputeCommandEncoder> enc = [cb computeCommandEncoder];
		if (enc == nil) {
			return strdup("cannot create a compute encoder (is another encoder still open on this command buffer?)");
		}
		[enc setComputePipelineState:(__bridge id<MTLComputePipelineState>)pipeline];
		for (int i = 0; i < nbuffers; i++) {
			[enc setBuffer:(__bridge id<MTLBuffer>)buffers[i] offset:offsets[i] atIndex:indices[i]];
		}
		[enc setBytes:args length:args_len atIndex:args_index];
		[enc dispatchThreads:MTLSizeMake(grid[0], grid[1], grid[2])
		    threadsPerThreadgroup:MTLSizeMake(threadgroup[0], threadgroup[1], threadgroup[2])];
		[enc endEncoding];
		return NULL;
	}
}

void kgen_mtl_commit(void *cmdbuf) {
	@autoreleasepool {
		[(__bridge id<MTLCommandBuffer>)cmdbuf commit];
	}
}

char *kgen_mtl_wait(void *cmdbuf) {
	@autoreleasepool {
		id<MTLCommandBuffer> cb = (__bridge id<MTLCommandBuffer>)cmdbuf;
		if (cb.status == MTLCommandBufferStatusNotEnqueued) {
			return strdup("the command buffer was never committed");
		}
		[cb waitUntilCompleted];
		if (cb.status == MTLCommandBufferStatusError) {
			return error_text(cb.error, "the command buffer failed");
		}
		return NULL;
	}
}

void kgen_mtl_retain(void *obj) {
	if (obj) {
		CFRetain(obj);
	}
}

void kgen_mtl_release(void *obj) {
	if (obj) {
		CFRelease(obj);
	}
}
