/*
 * THIS IS A TEST DOUBLE, NOT OPENVINO. Nothing it does is evidence about how the real
 * libopenvino_c.so behaves; it only lets the tests drive ffi/openvino and the openvino
 * backend on a machine where OpenVINO cannot be installed.
 *
 * It exports a subset of the OpenVINO C API 2.0 (the openvino/c/ov_*.h headers) with the same names,
 * argument lists and struct layouts as the published headers, so that a declaration
 * mistake in ffi/openvino/symbols.ts shows up here as wrong values or a crash. Its
 * "model" is fixed, whatever file it is given:
 *
 *   input  "INPUT0"  f32, partial shape [?,4]
 *   output "OUTPUT0" f32, same shape, = INPUT0 + 1
 *
 * Knobs (environment variables, read at each call):
 *   FAKE_OV_VERSION   the buildNumber ov_get_openvino_version reports (default
 *                     "2025.1.0-0-fake-double"); it also picks the ov_element_type_e value
 *                     the double uses for f32: 4 from 2025.1 on, 5 before (ov_common.h).
 *   FAKE_OV_INFER_MS  milliseconds ov_infer_request_infer sleeps (default 0).
 *
 * Built with -DFAKE_OV_NO_LAST_ERR it lacks ov_get_last_err_msg, as libraries before
 * that function existed do.
 *
 * Test hooks (not OpenVINO API): fake_live_handles() counts every object and array the
 * double has handed out and not had back; fake_last_device() is the device_name of the
 * last ov_core_compile_model, fake_last_properties() its property strings as
 * "KEY=VALUE;..." (an odd count of strings is refused, as OpenVINO refuses it). Strings from ov_get_last_err_msg are not counted: the
 * binding copies them and deliberately does not free them (see ffi/openvino/status.ts).
 *
 * Build: cc -shared -fPIC -o libfake_openvino_c.so fake_openvino_c.c
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ov_common.h */
typedef enum {
    OK = 0,
    GENERAL_ERROR = -1,
    NOT_IMPLEMENTED = -2,
    NETWORK_NOT_LOADED = -3,
    PARAMETER_MISMATCH = -4,
    NOT_FOUND = -5,
    OUT_OF_BOUNDS = -6,
    UNEXPECTED = -7,
    REQUEST_BUSY = -8,
    RESULT_NOT_READY = -9,
    NOT_ALLOCATED = -10,
    INFER_NOT_STARTED = -11,
    NETWORK_NOT_READ = -12,
    INFER_CANCELLED = -13,
    INVALID_C_PARAM = -14,
    UNKNOWN_C_ERROR = -15,
    NOT_IMPLEMENT_C_METHOD = -16,
    UNKNOW_EXCEPTION = -17,
} ov_status_e;

typedef unsigned int ov_element_type_e; /* the enum; its values depend on the release */

/* ov_core.h, ov_dimension.h, ov_rank.h, ov_partial_shape.h, ov_shape.h */
typedef struct {
    const char* buildNumber;
    const char* description;
} ov_version_t;
typedef struct {
    int64_t min;
    int64_t max;
} ov_dimension_t;
typedef ov_dimension_t ov_rank_t;
typedef struct {
    ov_rank_t rank;
    ov_dimension_t* dims;
} ov_partial_shape_t;
typedef struct {
    int64_t rank;
    int64_t* dims;
} ov_shape_t;

/* Opaque in the headers; the double's own contents. */
typedef struct ov_core { int unused; } ov_core_t;
typedef struct ov_model { int unused; } ov_model_t;
typedef struct ov_compiled_model { char device[64]; } ov_compiled_model_t;
typedef struct ov_output_const_port { bool is_input; } ov_output_const_port_t;
typedef struct ov_tensor {
    ov_element_type_e type;
    int64_t rank;
    int64_t dims[8];
    void* data;   /* host memory, never owned by the tensor */
    size_t bytes;
} ov_tensor_t;
typedef struct ov_infer_request {
    const float* input; /* the caller's host memory, as set_tensor shares it */
    int64_t batch;
    bool has_input;
    float* output;      /* owned by the request */
    int64_t output_batch;
} ov_infer_request_t;

#define EXPORT __attribute__((visibility("default")))

static long live = 0;
static char last_error[512] = "";
static char last_device[64] = "";
static char last_properties[512] = "";

static void* take(size_t n) {
    void* p = calloc(1, n ? n : 1);
    __atomic_add_fetch(&live, 1, __ATOMIC_SEQ_CST);
    return p;
}
static void give(void* p) {
    if (!p) return;
    free(p);
    __atomic_sub_fetch(&live, 1, __ATOMIC_SEQ_CST);
}
static char* take_string(const char* s) {
    char* p = take(strlen(s) + 1);
    strcpy(p, s);
    return p;
}
static ov_status_e fail(ov_status_e status, const char* fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
    return status;
}

static const char* version_string(void) {
    const char* v = getenv("FAKE_OV_VERSION");
    return v && *v ? v : "2025.1.0-0-fake-double";
}
/* ov_common.h: F32 is 5 from 2023.0 to 2025.0 and 4 from 2025.1 (DYNAMIC folded into UNDEFINED). */
static ov_element_type_e f32_value(void) {
    int year = 0, minor = 0;
    sscanf(version_string(), "%d.%d", &year, &minor);
    return (year > 2025 || (year == 2025 && minor >= 1)) ? 4u : 5u;
}

EXPORT long fake_live_handles(void) { return __atomic_load_n(&live, __ATOMIC_SEQ_CST); }
EXPORT const char* fake_last_device(void) { return last_device; }
EXPORT const char* fake_last_properties(void) { return last_properties; }

static const char* const infos[] = {
    "success", "general error", "it's not implement", "failed to network", "input parameter mismatch",
    "cannot find the value", "out of bounds", "run with unexpected error", "request is busy",
    "result is not ready", "it is not allocated", "inference start with error", "network is not ready",
    "inference is canceled", "invalid c input parameters", "unknown c error", "not implement in c method",
    "unknown exception"};

EXPORT const char* ov_get_error_info(ov_status_e status) {
    long i = -(long)status;
    if (i < 0 || i >= (long)(sizeof infos / sizeof infos[0])) i = (long)(sizeof infos / sizeof infos[0]) - 1;
    return infos[i];
}
EXPORT void ov_free(const char* content) { give((void*)content); }
#ifndef FAKE_OV_NO_LAST_ERR
EXPORT const char* ov_get_last_err_msg(void) {
    if (!last_error[0]) return NULL;
    return strdup(last_error); /* a fresh copy each call, as the library does since it stores a std::string */
}
#endif

EXPORT ov_status_e ov_get_openvino_version(ov_version_t* version) {
    if (!version) return INVALID_C_PARAM;
    version->buildNumber = take_string(version_string());
    version->description = take_string("fake OpenVINO Runtime (test double)");
    return OK;
}
EXPORT void ov_version_free(ov_version_t* version) {
    if (!version) return;
    give((void*)version->buildNumber);
    give((void*)version->description);
    version->buildNumber = version->description = NULL;
}

EXPORT ov_status_e ov_core_create(ov_core_t** core) {
    if (!core) return INVALID_C_PARAM;
    *core = take(sizeof(ov_core_t));
    return OK;
}
EXPORT void ov_core_free(ov_core_t* core) { give(core); }

static bool exists(const char* path) {
    FILE* f = fopen(path, "rb");
    if (!f) return false;
    fclose(f);
    return true;
}

EXPORT ov_status_e ov_core_read_model(const ov_core_t* core, const char* model_path, const char* bin_path, ov_model_t** model) {
    if (!core || !model_path || !model) return INVALID_C_PARAM;
    if (!exists(model_path)) return fail(GENERAL_ERROR, "[fake openvino] Unable to read the model: %s: no such file", model_path);
    if (bin_path && *bin_path && !exists(bin_path)) return fail(GENERAL_ERROR, "[fake openvino] Unable to read the weights: %s: no such file", bin_path);
    *model = take(sizeof(ov_model_t));
    return OK;
}
EXPORT void ov_model_free(ov_model_t* model) { give(model); }

EXPORT ov_status_e ov_core_compile_model(const ov_core_t* core, const ov_model_t* model, const char* device_name,
                                         const size_t property_args_size, ov_compiled_model_t** compiled_model, ...) {
    if (!core || !model || !device_name || !compiled_model) return INVALID_C_PARAM;
    if (property_args_size % 2 != 0) return fail(GENERAL_ERROR, "[fake openvino] property_args_size %zu is odd", property_args_size);
    last_properties[0] = '\0';
    va_list ap;
    va_start(ap, compiled_model);
    for (size_t i = 0; i < property_args_size; i += 2) {
        const char* key = va_arg(ap, const char*);
        const char* value = va_arg(ap, const char*);
        size_t used = strlen(last_properties);
        snprintf(last_properties + used, sizeof last_properties - used, "%s=%s;", key, value);
    }
    va_end(ap);
    snprintf(last_device, sizeof last_device, "%s", device_name);
    if (strcmp(device_name, "CPU") && strcmp(device_name, "GPU") && strcmp(device_name, "AUTO"))
        return fail(GENERAL_ERROR, "[fake openvino] Device with \"%s\" name is not registered in the OpenVINO Runtime", device_name);
    ov_compiled_model_t* c = take(sizeof(ov_compiled_model_t));
    snprintf(c->device, sizeof c->device, "%s", device_name);
    *compiled_model = c;
    return OK;
}
EXPORT void ov_compiled_model_free(ov_compiled_model_t* compiled_model) { give(compiled_model); }

EXPORT ov_status_e ov_compiled_model_create_infer_request(const ov_compiled_model_t* compiled_model, ov_infer_request_t** infer_request) {
    if (!compiled_model || !infer_request) return INVALID_C_PARAM;
    *infer_request = take(sizeof(ov_infer_request_t));
    return OK;
}
EXPORT void ov_infer_request_free(ov_infer_request_t* infer_request) {
    if (!infer_request) return;
    give(infer_request->output);
    give(infer_request);
}

EXPORT ov_status_e ov_model_inputs_size(const ov_model_t* model, size_t* input_size) {
    if (!model || !input_size) return INVALID_C_PARAM;
    *input_size = 1;
    return OK;
}
EXPORT ov_status_e ov_model_outputs_size(const ov_model_t* model, size_t* output_size) {
    if (!model || !output_size) return INVALID_C_PARAM;
    *output_size = 1;
    return OK;
}
static ov_status_e port(const ov_model_t* model, size_t index, ov_output_const_port_t** out, bool input) {
    if (!model || !out) return INVALID_C_PARAM;
    if (index != 0) return fail(GENERAL_ERROR, "[fake openvino] %s index %zu out of range", input ? "input" : "output", index);
    ov_output_const_port_t* p = take(sizeof(ov_output_const_port_t));
    p->is_input = input;
    *out = p;
    return OK;
}
EXPORT ov_status_e ov_model_const_input_by_index(const ov_model_t* model, const size_t index, ov_output_const_port_t** input_port) {
    return port(model, index, input_port, true);
}
EXPORT ov_status_e ov_model_const_output_by_index(const ov_model_t* model, const size_t index, ov_output_const_port_t** output_port) {
    return port(model, index, output_port, false);
}
EXPORT void ov_output_const_port_free(ov_output_const_port_t* port) { give(port); }

EXPORT ov_status_e ov_port_get_any_name(const ov_output_const_port_t* port, char** tensor_name) {
    if (!port || !tensor_name) return INVALID_C_PARAM;
    *tensor_name = take_string(port->is_input ? "INPUT0" : "OUTPUT0");
    return OK;
}
EXPORT ov_status_e ov_port_get_element_type(const ov_output_const_port_t* port, ov_element_type_e* tensor_type) {
    if (!port || !tensor_type) return INVALID_C_PARAM;
    *tensor_type = f32_value();
    return OK;
}
EXPORT ov_status_e ov_port_get_partial_shape(const ov_output_const_port_t* port, ov_partial_shape_t* partial_shape) {
    if (!port || !partial_shape) return INVALID_C_PARAM;
    partial_shape->rank.min = partial_shape->rank.max = 2;
    partial_shape->dims = take(2 * sizeof(ov_dimension_t));
    partial_shape->dims[0].min = 0; /* ov::Dimension::dynamic(): [0, unbounded] reads back as {0, -1} */
    partial_shape->dims[0].max = -1;
    partial_shape->dims[1].min = partial_shape->dims[1].max = 4;
    return OK;
}
EXPORT void ov_partial_shape_free(ov_partial_shape_t* partial_shape) {
    if (!partial_shape) return;
    give(partial_shape->dims);
    partial_shape->dims = NULL;
}

EXPORT ov_status_e ov_shape_create(const int64_t rank, const int64_t* dims, ov_shape_t* shape) {
    if (!shape || rank < 0) return INVALID_C_PARAM;
    shape->rank = rank;
    shape->dims = take((size_t)rank * sizeof(int64_t));
    if (dims) memcpy(shape->dims, dims, (size_t)rank * sizeof(int64_t));
    return OK;
}
EXPORT ov_status_e ov_shape_free(ov_shape_t* shape) {
    if (!shape) return INVALID_C_PARAM;
    give(shape->dims);
    shape->dims = NULL;
    return OK;
}

EXPORT ov_status_e ov_tensor_create_from_host_ptr(const ov_element_type_e type, const ov_shape_t shape, void* host_ptr, ov_tensor_t** tensor) {
    if (!host_ptr || !tensor || shape.rank < 0 || shape.rank > 8) return INVALID_C_PARAM;
    if (type != f32_value()) return fail(GENERAL_ERROR, "[fake openvino] the double only has f32 tensors (%u here), got element type %u", f32_value(), type);
    ov_tensor_t* t = take(sizeof(ov_tensor_t));
    t->type = type;
    t->rank = shape.rank;
    size_t count = 1;
    for (int64_t i = 0; i < shape.rank; i++) {
        t->dims[i] = shape.dims[i];
        count *= (size_t)shape.dims[i];
    }
    t->data = host_ptr;
    t->bytes = count * sizeof(float);
    *tensor = t;
    return OK;
}
EXPORT void ov_tensor_free(ov_tensor_t* tensor) { give(tensor); }
EXPORT ov_status_e ov_tensor_get_shape(const ov_tensor_t* tensor, ov_shape_t* shape) {
    if (!tensor || !shape) return INVALID_C_PARAM;
    return ov_shape_create(tensor->rank, tensor->dims, shape);
}
EXPORT ov_status_e ov_tensor_get_element_type(const ov_tensor_t* tensor, ov_element_type_e* type) {
    if (!tensor || !type) return INVALID_C_PARAM;
    *type = tensor->type;
    return OK;
}
EXPORT ov_status_e ov_tensor_get_byte_size(const ov_tensor_t* tensor, size_t* byte_size) {
    if (!tensor || !byte_size) return INVALID_C_PARAM;
    *byte_size = tensor->bytes;
    return OK;
}
EXPORT ov_status_e ov_tensor_data(const ov_tensor_t* tensor, void** data) {
    if (!tensor || !data) return INVALID_C_PARAM;
    *data = tensor->data;
    return OK;
}

EXPORT ov_status_e ov_infer_request_set_input_tensor_by_index(ov_infer_request_t* infer_request, const size_t idx, const ov_tensor_t* tensor) {
    if (!infer_request || !tensor) return INVALID_C_PARAM;
    if (idx != 0) return fail(GENERAL_ERROR, "[fake openvino] input index %zu out of range", idx);
    if (tensor->rank != 2 || tensor->dims[1] != 4)
        return fail(GENERAL_ERROR, "[fake openvino] The tensor shape is not compatible with the model input [?,4] (rank %lld)", (long long)tensor->rank);
    infer_request->input = tensor->data; /* shared, not copied: the caller keeps it alive */
    infer_request->batch = tensor->dims[0];
    infer_request->has_input = true;
    return OK;
}

EXPORT ov_status_e ov_infer_request_infer(ov_infer_request_t* infer_request) {
    if (!infer_request) return INVALID_C_PARAM;
    if (!infer_request->has_input) return fail(GENERAL_ERROR, "[fake openvino] INPUT0 was not set");
    const char* ms = getenv("FAKE_OV_INFER_MS");
    if (ms && atoi(ms) > 0) {
        struct timespec ts = {atoi(ms) / 1000, (long)(atoi(ms) % 1000) * 1000000L};
        nanosleep(&ts, NULL);
    }
    int64_t n = infer_request->batch * 4;
    if (infer_request->output_batch != infer_request->batch) {
        give(infer_request->output);
        infer_request->output = take((size_t)n * sizeof(float));
        infer_request->output_batch = infer_request->batch;
    }
    for (int64_t i = 0; i < n; i++) infer_request->output[i] = infer_request->input[i] + 1.0f;
    return OK;
}

EXPORT ov_status_e ov_infer_request_get_output_tensor_by_index(const ov_infer_request_t* infer_request, const size_t idx, ov_tensor_t** tensor) {
    if (!infer_request || !tensor) return INVALID_C_PARAM;
    if (idx != 0) return fail(GENERAL_ERROR, "[fake openvino] output index %zu out of range", idx);
    if (!infer_request->output) return fail(GENERAL_ERROR, "[fake openvino] no output before the first inference");
    ov_tensor_t* t = take(sizeof(ov_tensor_t));
    t->type = f32_value();
    t->rank = 2;
    t->dims[0] = infer_request->output_batch;
    t->dims[1] = 4;
    t->data = infer_request->output;
    t->bytes = (size_t)infer_request->output_batch * 4 * sizeof(float);
    *tensor = t;
    return OK;
}
