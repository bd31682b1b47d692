/*
 * THIS IS A TEST DOUBLE, NOT THE CUDA DRIVER. Nothing it does is evidence about how a real
 * libcuda.so.1 or a GPU behaves; it only lets the tests drive ffi/cuda/driver.ts and the
 * tensorrt backend on a machine without a GPU.
 *
 * It exports the driver calls ffi/cuda/driver.ts declares, with cuda.h's names and
 * argument lists (the `_v2` symbols cuda.h maps the plain names to). One device,
 * "Fake CUDA Device (test double)". "Device memory" is host memory from calloc, so a
 * device pointer can be read and written directly by fake_nvinfer.cpp's enqueueV3;
 * copies are memcpy and streams are counters. The IPC calls answer
 * CUDA_ERROR_NOT_SUPPORTED.
 *
 * Knobs (environment variables, read at each call):
 *   FAKE_CUDA_STRICT_CONTEXT=1  a call that needs a context (alloc, copies, stream
 *       create/synchronize/query) fails with CUDA_ERROR_INVALID_CONTEXT on a thread that
 *       has no current context (cuCtxSetCurrent is per thread, as in the driver). With
 *       it, cuStreamSynchronize from koffi's worker thread fails, which exercises the
 *       binding's cuStreamQuery fallback.
 *   FAKE_CUDA_QUERY_PENDING=n   cuStreamQuery answers CUDA_ERROR_NOT_READY n times per
 *       stream before CUDA_SUCCESS.
 *
 * Test hooks (not CUDA API): fake_cuda_live_allocations(), fake_cuda_live_streams(),
 * fake_cuda_primary_refs(), fake_cuda_sync_calls(), fake_cuda_query_calls().
 *
 * Build: cc -shared -fPIC -o libfake_cuda.so fake_cuda.c -lpthread
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
typedef int CUdevice;
typedef uint64_t CUdeviceptr;
typedef struct FakeContext *CUcontext;
typedef struct FakeStream *CUstream;

enum {
    CUDA_SUCCESS = 0,
    CUDA_ERROR_INVALID_VALUE = 1,
    CUDA_ERROR_OUT_OF_MEMORY = 2,
    CUDA_ERROR_NOT_INITIALIZED = 3,
    CUDA_ERROR_NO_DEVICE = 100,
    CUDA_ERROR_INVALID_DEVICE = 101,
    CUDA_ERROR_INVALID_CONTEXT = 201,
    CUDA_ERROR_INVALID_HANDLE = 400,
    CUDA_ERROR_NOT_READY = 600,
    CUDA_ERROR_NOT_SUPPORTED = 801,
};

struct FakeContext { int device; };
struct FakeStream { uint32_t magic; int pending; };
#define STREAM_MAGIC 0x57524D53u

static struct FakeContext primary = { 0 };
static int initialized = 0;
static int primary_refs = 0;
static long live_allocations = 0;
static long live_streams = 0;
static long sync_calls = 0;
static long query_calls = 0;
static __thread CUcontext current = 0;

static int env_int(const char *name) {
    const char *v = getenv(name);
    return v ? atoi(v) : 0;
}

static CUresult need_context(void) {
    if (!initialized) return CUDA_ERROR_NOT_INITIALIZED;
    if (env_int("FAKE_CUDA_STRICT_CONTEXT") && current == 0) return CUDA_ERROR_INVALID_CONTEXT;
    return CUDA_SUCCESS;
}

CUresult cuInit(unsigned int flags) {
    if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
    initialized = 1;
    return CUDA_SUCCESS;
}

CUresult cuDriverGetVersion(int *v) { *v = 12040; return CUDA_SUCCESS; }
CUresult cuDeviceGetCount(int *n) { *n = 1; return initialized ? CUDA_SUCCESS : CUDA_ERROR_NOT_INITIALIZED; }

CUresult cuDeviceGet(CUdevice *d, int ordinal) {
    if (ordinal != 0) return CUDA_ERROR_INVALID_DEVICE;
    *d = 0;
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetName(char *name, int len, CUdevice dev) {
    if (dev != 0) return CUDA_ERROR_INVALID_DEVICE;
    strncpy(name, "Fake CUDA Device (test double)", (size_t)len);
    name[len - 1] = 0;
    return CUDA_SUCCESS;
}

CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev) {
    if (dev != 0) return CUDA_ERROR_INVALID_DEVICE;
    *bytes = (size_t)1 << 30;
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetAttribute(int *v, int attr, CUdevice dev) {
    if (dev != 0) return CUDA_ERROR_INVALID_DEVICE;
    switch (attr) {
    case 75: *v = 9; return CUDA_SUCCESS; /* COMPUTE_CAPABILITY_MAJOR */
    case 76: *v = 0; return CUDA_SUCCESS; /* COMPUTE_CAPABILITY_MINOR */
    case 16: *v = 2; return CUDA_SUCCESS; /* MULTIPROCESSOR_COUNT */
    default: return CUDA_ERROR_INVALID_VALUE;
    }
}

CUresult cuDevicePrimaryCtxRetain(CUcontext *ctx, CUdevice dev) {
    if (dev != 0) return CUDA_ERROR_INVALID_DEVICE;
    primary_refs++;
    *ctx = &primary;
    return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev) {
    if (dev != 0) return CUDA_ERROR_INVALID_DEVICE;
    if (primary_refs == 0) return CUDA_ERROR_INVALID_CONTEXT;
    primary_refs--;
    return CUDA_SUCCESS;
}

CUresult cuCtxSetCurrent(CUcontext ctx) {
    if (ctx != 0 && ctx != &primary) return CUDA_ERROR_INVALID_CONTEXT;
    current = ctx;
    return CUDA_SUCCESS;
}

CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t bytes) {
    CUresult r = need_context();
    if (r) return r;
    if (bytes == 0) return CUDA_ERROR_INVALID_VALUE; /* as the driver does */
    void *m = calloc(1, bytes);
    if (!m) return CUDA_ERROR_OUT_OF_MEMORY;
    live_allocations++;
    *p = (CUdeviceptr)(uintptr_t)m;
    return CUDA_SUCCESS;
}

CUresult cuMemFree_v2(CUdeviceptr p) {
    if (!p) return CUDA_ERROR_INVALID_VALUE;
    free((void *)(uintptr_t)p);
    live_allocations--;
    return CUDA_SUCCESS;
}

CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t n) {
    CUresult r = need_context();
    if (r) return r;
    memcpy((void *)(uintptr_t)dst, src, n);
    return CUDA_SUCCESS;
}

CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t n) {
    CUresult r = need_context();
    if (r) return r;
    memcpy(dst, (const void *)(uintptr_t)src, n);
    return CUDA_SUCCESS;
}

static int valid_stream(CUstream s) { return s && s->magic == STREAM_MAGIC; }

CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src, size_t n, CUstream s) {
    CUresult r = need_context();
    if (r) return r;
    if (s && !valid_stream(s)) return CUDA_ERROR_INVALID_HANDLE;
    memcpy((void *)(uintptr_t)dst, src, n);
    return CUDA_SUCCESS;
}

CUresult cuMemcpyDtoHAsync_v2(void *dst, CUdeviceptr src, size_t n, CUstream s) {
    CUresult r = need_context();
    if (r) return r;
    if (s && !valid_stream(s)) return CUDA_ERROR_INVALID_HANDLE;
    memcpy(dst, (const void *)(uintptr_t)src, n);
    return CUDA_SUCCESS;
}

CUresult cuStreamCreate(CUstream *s, unsigned int flags) {
    (void)flags;
    CUresult r = need_context();
    if (r) return r;
    CUstream st = calloc(1, sizeof *st);
    st->magic = STREAM_MAGIC;
    live_streams++;
    *s = st;
    return CUDA_SUCCESS;
}

CUresult cuStreamSynchronize(CUstream s) {
    __atomic_fetch_add(&sync_calls, 1, __ATOMIC_SEQ_CST); /* also called from koffi's worker threads */
    CUresult r = need_context();
    if (r) return r;
    if (!valid_stream(s)) return CUDA_ERROR_INVALID_HANDLE;
    return CUDA_SUCCESS;
}

CUresult cuStreamQuery(CUstream s) {
    query_calls++;
    CUresult r = need_context();
    if (r) return r;
    if (!valid_stream(s)) return CUDA_ERROR_INVALID_HANDLE;
    if (s->pending < env_int("FAKE_CUDA_QUERY_PENDING")) {
        s->pending++;
        return CUDA_ERROR_NOT_READY;
    }
    s->pending = 0;
    return CUDA_SUCCESS;
}

CUresult cuStreamDestroy_v2(CUstream s) {
    if (!valid_stream(s)) return CUDA_ERROR_INVALID_HANDLE;
    s->magic = 0;
    free(s);
    live_streams--;
    return CUDA_SUCCESS;
}

CUresult cuIpcGetMemHandle(void *handle, CUdeviceptr p) { (void)handle; (void)p; return CUDA_ERROR_NOT_SUPPORTED; }
typedef struct { char reserved[64]; } CUipcMemHandle;
CUresult cuIpcOpenMemHandle_v2(CUdeviceptr *p, CUipcMemHandle h, unsigned int flags) { (void)p; (void)h; (void)flags; return CUDA_ERROR_NOT_SUPPORTED; }
CUresult cuIpcCloseMemHandle(CUdeviceptr p) { (void)p; return CUDA_ERROR_NOT_SUPPORTED; }

CUresult cuGetErrorName(CUresult code, const char **s) {
    switch (code) {
    case CUDA_SUCCESS: *s = "CUDA_SUCCESS"; return CUDA_SUCCESS;
    case CUDA_ERROR_INVALID_VALUE: *s = "CUDA_ERROR_INVALID_VALUE"; return CUDA_SUCCESS;
    case CUDA_ERROR_OUT_OF_MEMORY: *s = "CUDA_ERROR_OUT_OF_MEMORY"; return CUDA_SUCCESS;
    case CUDA_ERROR_NOT_INITIALIZED: *s = "CUDA_ERROR_NOT_INITIALIZED"; return CUDA_SUCCESS;
    case CUDA_ERROR_INVALID_DEVICE: *s = "CUDA_ERROR_INVALID_DEVICE"; return CUDA_SUCCESS;
    case CUDA_ERROR_INVALID_CONTEXT: *s = "CUDA_ERROR_INVALID_CONTEXT"; return CUDA_SUCCESS;
    case CUDA_ERROR_INVALID_HANDLE: *s = "CUDA_ERROR_INVALID_HANDLE"; return CUDA_SUCCESS;
    case CUDA_ERROR_NOT_READY: *s = "CUDA_ERROR_NOT_READY"; return CUDA_SUCCESS;
    case CUDA_ERROR_NOT_SUPPORTED: *s = "CUDA_ERROR_NOT_SUPPORTED"; return CUDA_SUCCESS;
    default: *s = 0; return CUDA_ERROR_INVALID_VALUE;
    }
}

CUresult cuGetErrorString(CUresult code, const char **s) {
    const char *name = 0;
    if (cuGetErrorName(code, &name)) return CUDA_ERROR_INVALID_VALUE;
    *s = "reported by the fake CUDA driver (test double)";
    return CUDA_SUCCESS;
}

long fake_cuda_live_allocations(void) { return live_allocations; }
long fake_cuda_live_streams(void) { return live_streams; }
int fake_cuda_primary_refs(void) { return primary_refs; }
long fake_cuda_sync_calls(void) { return __atomic_load_n(&sync_calls, __ATOMIC_SEQ_CST); }
long fake_cuda_query_calls(void) { return query_calls; }
