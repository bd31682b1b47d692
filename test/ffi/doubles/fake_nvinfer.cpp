/*
 * THIS IS A TEST DOUBLE, NOT TENSORRT. Nothing it does is evidence about how the real
 * libnvinfer.so.10 behaves; it only lets the tests drive ffi/tensorrt and the tensorrt
 * backend on a machine without a GPU or TensorRT.
 *
 * What it does share with TensorRT 10 is the binary interface the binding relies on, laid
 * out here by the C++ compiler rather than by hand:
 *  - the exported C functions getInferLibVersion() and createInferRuntime_INTERNAL();
 *  - public objects IRuntime, ICudaEngine, IExecutionContext that are [vptr][mImpl], whose
 *    only virtual is the destructor (so "delete" is vtable slot 1), with mImpl pointing at
 *    an apiv::VRuntime / VCudaEngine / VExecutionContext;
 *  - those V-classes declare their virtual methods in the order of NvInferImpl.h
 *    (TensorRT 10.0.0, identical through 10.16), up to the last method the binding uses,
 *    so the compiler gives each the slot the header gives it. Methods the binding does not
 *    call have simplified parameter types (the slot does not depend on them) and abort if
 *    called. fake_slot() reports the compiler's slot for a method, which the test compares
 *    with ffi/tensorrt/abi.ts;
 *  - the ILogger the binding passes in is called through its vtable slot 0
 *    (log(severity, msg)), as TensorRT does.
 *
 * Its one "engine" is fixed: a plan is any blob starting with "FAKEPLAN" (anything else is
 * refused with an error logged through the ILogger, and deserializeCudaEngine returns
 * null, as TensorRT does for a corrupt plan):
 *
 *   input  "INPUT0"  kFLOAT [-1,4]  profile 0: min [1,4] opt [4,4] max [8,4]
 *   output "OUTPUT0" kFLOAT [-1,4]  = INPUT0 * 2
 *
 * enqueueV3 computes OUTPUT0 on the host, through the "device" pointers that
 * fake_cuda.c's cuMemAlloc_v2 handed out (host memory in this same process). A plan
 * "FAKEPLAN:fp8" reports OUTPUT0 as kFP8; "FAKEPLAN:chw4" reports INPUT0 in a
 * vectorized format (kCHW4).
 *
 * Knobs (environment variables, read at each call):
 *   FAKE_TRT_VERSION   what getInferLibVersion() returns (default 100800, i.e. 10.8.0,
 *                      NV_TENSORRT_VERSION_INT encoding).
 *
 * Test hooks (not TensorRT API): fake_live_objects() counts runtimes, engines and
 * execution contexts created and not yet deleted (a deletion counts only when the
 * object's own operator delete ran, i.e. through the deleting destructor);
 * fake_slot(cls, method); fake_last_runtime_version(); fake_max_threads();
 * fake_last_allocation_strategy(); fake_logger_type_name(); fake_logger_offset_to_top();
 * fake_enqueue_count().
 *
 * Build: c++ -shared -fPIC -std=c++17 -o libfake_nvinfer.so fake_nvinfer.cpp
 */
#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <typeinfo>

#define EXPORT extern "C" __attribute__((visibility("default")))

static long live_objects = 0;
static int32_t last_runtime_version = 0;
static int32_t max_threads = 0;
static int32_t last_strategy = -1;
static long enqueue_count = 0;
static std::string logger_type_name;
static long logger_offset_to_top = -1;

[[noreturn]] static void unexpected(const char *what) {
    std::fprintf(stderr, "fake_nvinfer: unexpected call to %s\n", what);
    std::abort();
}

namespace nvinfer1 {

enum class DataType : int32_t { kFLOAT = 0, kHALF = 1, kINT8 = 2, kINT32 = 3, kBOOL = 4, kUINT8 = 5, kFP8 = 6, kBF16 = 7, kINT64 = 8, kINT4 = 9 };
enum class TensorIOMode : int32_t { kNONE = 0, kINPUT = 1, kOUTPUT = 2 };
enum class OptProfileSelector : int32_t { kMIN = 0, kOPT = 1, kMAX = 2 };
enum class ExecutionContextAllocationStrategy : int32_t { kSTATIC = 0, kON_PROFILE_CHANGE = 1, kUSER_MANAGED = 2 };
enum class TensorFormat : int32_t { kLINEAR = 0, kCHW2 = 1, kHWC8 = 2, kCHW4 = 3 };
enum class TensorLocation : int32_t { kDEVICE = 0, kHOST = 1 };

class Dims64 {
public:
    static constexpr int32_t MAX_DIMS{8};
    int32_t nbDims;
    int64_t d[MAX_DIMS];
};
using Dims = Dims64;

class ILogger {
public:
    enum class Severity : int32_t { kINTERNAL_ERROR = 0, kERROR = 1, kWARNING = 2, kINFO = 3, kVERBOSE = 4 };
    virtual void log(Severity severity, char const *msg) noexcept = 0;
    ILogger() = default;
    virtual ~ILogger() = default;
};

class IRuntime;
class ICudaEngine;
class IExecutionContext;
using Opaque = void *;
using cudaStream_t = void *;

namespace apiv {

class VRoot {
public:
    virtual ~VRoot() noexcept = default;
};

// NvInferImpl.h class VRuntime, in declaration order up to getMaxThreads.
class VRuntime : public VRoot {
public:
    virtual IRuntime *getPImpl() noexcept = 0;
    virtual ICudaEngine *deserializeCudaEngine(void const *blob, std::size_t size) noexcept = 0;
    virtual ICudaEngine *deserializeCudaEngine(Opaque &streamReader) noexcept { (void)streamReader; unexpected("deserializeCudaEngine(IStreamReader&)"); }
    virtual void setDLACore(int32_t) noexcept { unexpected("setDLACore"); }
    virtual int32_t getDLACore() const noexcept { unexpected("getDLACore"); }
    virtual int32_t getNbDLACores() const noexcept { unexpected("getNbDLACores"); }
    virtual void setGpuAllocator(Opaque) noexcept { unexpected("setGpuAllocator"); }
    virtual void setErrorRecorder(Opaque) noexcept { unexpected("setErrorRecorder"); }
    virtual Opaque getErrorRecorder() const noexcept { unexpected("getErrorRecorder"); }
    virtual ILogger *getLogger() const noexcept { unexpected("getLogger"); }
    virtual bool setMaxThreads(int32_t maxThreads) noexcept = 0;
    virtual int32_t getMaxThreads() const noexcept = 0;
};

// NvInferImpl.h class VCudaEngine, in declaration order up to getIOTensorName.
class VCudaEngine : public VRoot {
public:
    virtual ICudaEngine *getPImpl() noexcept = 0;
    virtual int32_t getNbLayers() const noexcept { unexpected("getNbLayers"); }
    virtual Opaque serialize() const noexcept { unexpected("serialize"); }
    virtual IExecutionContext *createExecutionContext(ExecutionContextAllocationStrategy strategy) noexcept = 0;
    virtual IExecutionContext *createExecutionContextWithoutDeviceMemory() noexcept { unexpected("createExecutionContextWithoutDeviceMemory"); }
    virtual std::size_t getDeviceMemorySize() const noexcept { unexpected("getDeviceMemorySize"); }
    virtual bool isRefittable() const noexcept { unexpected("isRefittable"); }
    virtual char const *getName() const noexcept { unexpected("getName"); }
    virtual int32_t getNbOptimizationProfiles() const noexcept = 0;
    virtual int32_t const *getProfileTensorValues(char const *, int32_t, OptProfileSelector) const noexcept { unexpected("getProfileTensorValues"); }
    virtual int32_t getEngineCapability() const noexcept { unexpected("getEngineCapability"); }
    virtual void setErrorRecorder(Opaque) noexcept { unexpected("setErrorRecorder"); }
    virtual Opaque getErrorRecorder() const noexcept { unexpected("getErrorRecorder"); }
    virtual bool hasImplicitBatchDimension() const noexcept { unexpected("hasImplicitBatchDimension"); }
    virtual uint32_t getTacticSources() const noexcept { unexpected("getTacticSources"); }
    virtual int32_t getProfilingVerbosity() const noexcept { unexpected("getProfilingVerbosity"); }
    virtual Opaque createEngineInspector() const noexcept { unexpected("createEngineInspector"); }
    virtual Dims getTensorShape(char const *tensorName) const noexcept = 0;
    virtual DataType getTensorDataType(char const *tensorName) const noexcept = 0;
    virtual TensorLocation getTensorLocation(char const *tensorName) const noexcept = 0;
    virtual bool isShapeInferenceIO(char const *tensorName) const noexcept = 0;
    virtual TensorIOMode getTensorIOMode(char const *tensorName) const noexcept = 0;
    virtual int32_t getTensorBytesPerComponent(char const *) const noexcept { unexpected("getTensorBytesPerComponent"); }
    virtual int32_t getTensorComponentsPerElement(char const *) const noexcept { unexpected("getTensorComponentsPerElement"); }
    virtual TensorFormat getTensorFormat(char const *tensorName) const noexcept = 0;
    virtual char const *getTensorFormatDesc(char const *) const noexcept { unexpected("getTensorFormatDesc"); }
    virtual int32_t getTensorVectorizedDim(char const *) const noexcept { unexpected("getTensorVectorizedDim"); }
    virtual Dims getProfileShape(char const *tensorName, int32_t profileIndex, OptProfileSelector select) const noexcept = 0;
    virtual int32_t getNbIOTensors() const noexcept = 0;
    virtual char const *getIOTensorName(int32_t index) const noexcept = 0;
};

// NvInferImpl.h class VExecutionContext, in declaration order up to enqueueV3.
class VExecutionContext : public VRoot {
public:
    virtual IExecutionContext *getPImpl() noexcept = 0;
    virtual void setDebugSync(bool) noexcept { unexpected("setDebugSync"); }
    virtual bool getDebugSync() const noexcept { unexpected("getDebugSync"); }
    virtual void setProfiler(Opaque) noexcept { unexpected("setProfiler"); }
    virtual Opaque getProfiler() const noexcept { unexpected("getProfiler"); }
    virtual ICudaEngine const &getEngine() const noexcept { unexpected("getEngine"); }
    virtual void setName(char const *) noexcept { unexpected("setName"); }
    virtual char const *getName() const noexcept { unexpected("getName"); }
    virtual void setDeviceMemory(void *) noexcept { unexpected("setDeviceMemory"); }
    virtual int32_t getOptimizationProfile() const noexcept { unexpected("getOptimizationProfile"); }
    virtual bool allInputDimensionsSpecified() const noexcept { unexpected("allInputDimensionsSpecified"); }
    virtual bool allInputShapesSpecified() const noexcept { unexpected("allInputShapesSpecified"); }
    virtual void setErrorRecorder(Opaque) noexcept { unexpected("setErrorRecorder"); }
    virtual Opaque getErrorRecorder() const noexcept { unexpected("getErrorRecorder"); }
    virtual bool executeV2(void *const *) noexcept { unexpected("executeV2"); }
    virtual bool setOptimizationProfileAsync(int32_t, cudaStream_t) noexcept { unexpected("setOptimizationProfileAsync"); }
    virtual void setEnqueueEmitsProfile(bool) noexcept { unexpected("setEnqueueEmitsProfile"); }
    virtual bool getEnqueueEmitsProfile() const noexcept { unexpected("getEnqueueEmitsProfile"); }
    virtual bool reportToProfiler() const noexcept { unexpected("reportToProfiler"); }
    virtual bool setInputShape(char const *tensorName, Dims const &dims) noexcept = 0;
    virtual Dims getTensorShape(char const *tensorName) const noexcept = 0;
    virtual Dims getTensorStrides(char const *) const noexcept { unexpected("getTensorStrides"); }
    virtual bool setTensorAddress(char const *tensorName, void *data) noexcept = 0;
    virtual void const *getTensorAddress(char const *) const noexcept { unexpected("getTensorAddress"); }
    virtual bool setInputTensorAddress(char const *, void const *) noexcept { unexpected("setInputTensorAddress"); }
    virtual bool setOutputTensorAddress(char const *, void *) noexcept { unexpected("setOutputTensorAddress"); }
    virtual int32_t inferShapes(int32_t, char const **) noexcept { unexpected("inferShapes"); }
    virtual bool setInputConsumedEvent(Opaque) noexcept { unexpected("setInputConsumedEvent"); }
    virtual Opaque getInputConsumedEvent() const noexcept { unexpected("getInputConsumedEvent"); }
    virtual void *getOutputTensorAddress(char const *) const noexcept { unexpected("getOutputTensorAddress"); }
    virtual bool setOutputAllocator(char const *, Opaque) noexcept { unexpected("setOutputAllocator"); }
    virtual Opaque getOutputAllocator(char const *) noexcept { unexpected("getOutputAllocator"); }
    virtual int64_t getMaxOutputSize(char const *) const noexcept { unexpected("getMaxOutputSize"); }
    virtual bool setTemporaryStorageAllocator(Opaque) noexcept { unexpected("setTemporaryStorageAllocator"); }
    virtual Opaque getTemporaryStorageAllocator() const noexcept { unexpected("getTemporaryStorageAllocator"); }
    virtual bool enqueueV3(cudaStream_t stream) noexcept = 0;
};

} // namespace apiv

// NvInferRuntime.h: INoCopy and the public classes, [vptr][mImpl].
class INoCopy {
protected:
    INoCopy() = default;
    virtual ~INoCopy() = default;
    INoCopy(INoCopy const &) = delete;
    INoCopy &operator=(INoCopy const &) = delete;
};

class IRuntime : public INoCopy {
public:
    virtual ~IRuntime() noexcept = default;
protected:
    apiv::VRuntime *mImpl;
};

class ICudaEngine : public INoCopy {
public:
    virtual ~ICudaEngine() noexcept = default;
protected:
    apiv::VCudaEngine *mImpl;
};

class IExecutionContext : public INoCopy {
public:
    virtual ~IExecutionContext() noexcept = default;
protected:
    apiv::VExecutionContext *mImpl;
};

} // namespace nvinfer1

using namespace nvinfer1;
using Severity = ILogger::Severity;

static Dims dims(std::initializer_list<int64_t> ds) {
    Dims r{};
    r.nbDims = 0;
    for (int64_t v : ds) r.d[r.nbDims++] = v;
    return r;
}
static Dims invalidDims() {
    Dims r{};
    r.nbDims = -1;
    return r;
}

// ------------------------------------------------------------------ implementations

struct Variant {
    bool fp8Output = false;
    bool chw4Input = false;
};

class FakeEngine;

class FakeContextImpl final : public apiv::VExecutionContext {
public:
    FakeContextImpl(IExecutionContext *pub, ILogger *logger) : mPub(pub), mLogger(logger) {}
    IExecutionContext *getPImpl() noexcept override { return mPub; }
    bool setInputShape(char const *name, Dims const &d) noexcept override {
        if (std::strcmp(name, "INPUT0") != 0) return error("setInputShape: no input tensor named '%s'", name);
        if (d.nbDims != 2 || d.d[1] != 4) return error("setInputShape: INPUT0 must be [N,4], got rank %d", d.nbDims);
        if (d.d[0] < 1 || d.d[0] > 8)
            return error("IExecutionContext::setInputShape: Error Code 3: API Usage Error (INPUT0 dimension 0 is %lld, outside the optimization profile's [1, 8])",
                         (long long)d.d[0]);
        mBatch = d.d[0];
        return true;
    }
    Dims getTensorShape(char const *name) const noexcept override {
        if (std::strcmp(name, "INPUT0") != 0 && std::strcmp(name, "OUTPUT0") != 0) return invalidDims();
        return dims({mBatch, 4});
    }
    bool setTensorAddress(char const *name, void *data) noexcept override {
        if (std::strcmp(name, "INPUT0") != 0 && std::strcmp(name, "OUTPUT0") != 0) return error("setTensorAddress: no tensor named '%s'", name);
        mAddress[name] = data;
        return true;
    }
    bool enqueueV3(cudaStream_t stream) noexcept override {
        if (!stream) return error("enqueueV3: the fake wants a stream, got the default stream");
        if (mBatch < 0) return error("enqueueV3: INPUT0's shape was not set");
        float const *in = static_cast<float const *>(mAddress["INPUT0"]);
        float *out = static_cast<float *>(mAddress["OUTPUT0"]);
        if (!in || !out) return error("enqueueV3: tensor addresses not set");
        for (int64_t i = 0; i < mBatch * 4; i++) out[i] = in[i] * 2.0f;
        enqueue_count++;
        return true;
    }

private:
    bool error(char const *fmt, ...) __attribute__((format(printf, 2, 3))) {
        char buf[512];
        va_list ap;
        va_start(ap, fmt);
        std::vsnprintf(buf, sizeof buf, fmt, ap);
        va_end(ap);
        mLogger->log(Severity::kERROR, buf);
        return false;
    }
    IExecutionContext *mPub;
    ILogger *mLogger;
    int64_t mBatch = -1;
    std::map<std::string, void *> mAddress;
};

class FakeContext final : public IExecutionContext {
public:
    FakeContext(ILogger *logger) {
        mImpl = new FakeContextImpl(this, logger);
        live_objects++;
    }
    ~FakeContext() noexcept override { delete mImpl; }
    static void operator delete(void *p) {
        live_objects--;
        ::operator delete(p);
    }
};

class FakeEngineImpl final : public apiv::VCudaEngine {
public:
    FakeEngineImpl(ICudaEngine *pub, ILogger *logger, Variant v) : mPub(pub), mLogger(logger), mVariant(v) {}
    ICudaEngine *getPImpl() noexcept override { return mPub; }
    IExecutionContext *createExecutionContext(ExecutionContextAllocationStrategy s) noexcept override {
        last_strategy = static_cast<int32_t>(s);
        return new FakeContext(mLogger);
    }
    int32_t getNbOptimizationProfiles() const noexcept override { return 1; }
    Dims getTensorShape(char const *name) const noexcept override { return known(name) ? dims({-1, 4}) : invalidDims(); }
    DataType getTensorDataType(char const *name) const noexcept override {
        return mVariant.fp8Output && std::strcmp(name, "OUTPUT0") == 0 ? DataType::kFP8 : DataType::kFLOAT;
    }
    TensorLocation getTensorLocation(char const *) const noexcept override { return TensorLocation::kDEVICE; }
    bool isShapeInferenceIO(char const *) const noexcept override { return false; }
    TensorIOMode getTensorIOMode(char const *name) const noexcept override {
        if (std::strcmp(name, "INPUT0") == 0) return TensorIOMode::kINPUT;
        if (std::strcmp(name, "OUTPUT0") == 0) return TensorIOMode::kOUTPUT;
        return TensorIOMode::kNONE;
    }
    TensorFormat getTensorFormat(char const *name) const noexcept override {
        return mVariant.chw4Input && std::strcmp(name, "INPUT0") == 0 ? TensorFormat::kCHW4 : TensorFormat::kLINEAR;
    }
    Dims getProfileShape(char const *name, int32_t profile, OptProfileSelector sel) const noexcept override {
        if (profile != 0 || std::strcmp(name, "INPUT0") != 0) return invalidDims();
        switch (sel) {
        case OptProfileSelector::kMIN: return dims({1, 4});
        case OptProfileSelector::kOPT: return dims({4, 4});
        case OptProfileSelector::kMAX: return dims({8, 4});
        }
        return invalidDims();
    }
    int32_t getNbIOTensors() const noexcept override { return 2; }
    char const *getIOTensorName(int32_t i) const noexcept override { return i == 0 ? "INPUT0" : i == 1 ? "OUTPUT0" : nullptr; }

private:
    static bool known(char const *name) { return std::strcmp(name, "INPUT0") == 0 || std::strcmp(name, "OUTPUT0") == 0; }
    ICudaEngine *mPub;
    ILogger *mLogger;
    Variant mVariant;
};

class FakeEngine final : public ICudaEngine {
public:
    FakeEngine(ILogger *logger, Variant v) {
        mImpl = new FakeEngineImpl(this, logger, v);
        live_objects++;
    }
    ~FakeEngine() noexcept override { delete mImpl; }
    static void operator delete(void *p) {
        live_objects--;
        ::operator delete(p);
    }
};

class FakeRuntimeImpl final : public apiv::VRuntime {
public:
    FakeRuntimeImpl(IRuntime *pub, ILogger *logger) : mPub(pub), mLogger(logger) {}
    IRuntime *getPImpl() noexcept override { return mPub; }
    ICudaEngine *deserializeCudaEngine(void const *blob, std::size_t size) noexcept override {
        char const *p = static_cast<char const *>(blob);
        if (!blob || size < 8 || std::memcmp(p, "FAKEPLAN", 8) != 0) {
            mLogger->log(Severity::kERROR,
                         "IRuntime::deserializeCudaEngine: Error Code 1: Serialization (Serialization assertion failed: the blob is not a fake plan)");
            return nullptr;
        }
        std::string variant(p + 8, size - 8);
        Variant v;
        v.fp8Output = variant.rfind(":fp8", 0) == 0;
        v.chw4Input = variant.rfind(":chw4", 0) == 0;
        mLogger->log(Severity::kINFO, "Loaded engine size: 0 MiB (fake)");
        return new FakeEngine(mLogger, v);
    }
    using apiv::VRuntime::deserializeCudaEngine;
    bool setMaxThreads(int32_t n) noexcept override {
        if (n < 1) return false;
        max_threads = n;
        return true;
    }
    int32_t getMaxThreads() const noexcept override { return max_threads; }

private:
    IRuntime *mPub;
    ILogger *mLogger;
};

class FakeRuntime final : public IRuntime {
public:
    FakeRuntime(ILogger *logger) {
        mImpl = new FakeRuntimeImpl(this, logger);
        live_objects++;
    }
    ~FakeRuntime() noexcept override { delete mImpl; }
    static void operator delete(void *p) {
        live_objects--;
        ::operator delete(p);
    }
};

// --------------------------------------------------------------------- entry points

static int32_t reported_version() {
    char const *v = std::getenv("FAKE_TRT_VERSION");
    return v ? std::atoi(v) : 100800;
}

EXPORT int32_t getInferLibVersion() noexcept { return reported_version(); }

EXPORT void *createInferRuntime_INTERNAL(void *logger, int32_t version) noexcept {
    last_runtime_version = version;
    ILogger *l = static_cast<ILogger *>(logger);
    if (!l) return nullptr;
    // Read the logger's RTTI words the way a dynamic_cast or typeid would, without trusting them.
    void **vtable = *static_cast<void ***>(logger);
    logger_offset_to_top = reinterpret_cast<long>(vtable[-2]);
    std::type_info const *ti = static_cast<std::type_info const *>(vtable[-1]);
    logger_type_name = ti ? ti->name() : "";
    if (version / 10000 != reported_version() / 10000) {
        l->log(Severity::kERROR, "createInferRuntime: version mismatch (fake)");
        return nullptr;
    }
    l->log(Severity::kINFO, "fake TensorRT runtime created");
    l->log(Severity::kVERBOSE, "fake TensorRT: verbose detail");
    l->log(Severity::kWARNING, "fake TensorRT: this is a test double");
    return static_cast<IRuntime *>(new FakeRuntime(l));
}

// ------------------------------------------------------------------------ test hooks

template <typename F> static long slot_of(F f) {
    struct { uintptr_t ptr; ptrdiff_t adj; } rep;
    static_assert(sizeof(F) == sizeof(rep), "Itanium pointer to member function");
    std::memcpy(&rep, &f, sizeof rep);
#if defined(__aarch64__) || defined(__arm__)
    if (!(rep.adj & 1)) return -1; // ARM's variant: the virtual flag lives in adj
    return static_cast<long>(rep.ptr / sizeof(void *));
#else
    if (!(rep.ptr & 1)) return -1; // not virtual
    return static_cast<long>((rep.ptr - 1) / sizeof(void *));
#endif
}

EXPORT long fake_slot(char const *cls, char const *method) {
    std::string c(cls), m(method);
    using namespace apiv;
    if (c == "VRuntime") {
        if (m == "getPImpl") return slot_of(&VRuntime::getPImpl);
        if (m == "deserializeCudaEngine")
            return slot_of(static_cast<ICudaEngine *(VRuntime::*)(void const *, std::size_t) noexcept>(&VRuntime::deserializeCudaEngine));
        if (m == "setMaxThreads") return slot_of(&VRuntime::setMaxThreads);
        if (m == "getMaxThreads") return slot_of(&VRuntime::getMaxThreads);
    } else if (c == "VCudaEngine") {
        if (m == "getPImpl") return slot_of(&VCudaEngine::getPImpl);
        if (m == "createExecutionContext") return slot_of(&VCudaEngine::createExecutionContext);
        if (m == "getNbOptimizationProfiles") return slot_of(&VCudaEngine::getNbOptimizationProfiles);
        if (m == "getTensorShape") return slot_of(&VCudaEngine::getTensorShape);
        if (m == "getTensorDataType") return slot_of(&VCudaEngine::getTensorDataType);
        if (m == "getTensorLocation") return slot_of(&VCudaEngine::getTensorLocation);
        if (m == "isShapeInferenceIO") return slot_of(&VCudaEngine::isShapeInferenceIO);
        if (m == "getTensorIOMode") return slot_of(&VCudaEngine::getTensorIOMode);
        if (m == "getTensorFormat") return slot_of(&VCudaEngine::getTensorFormat);
        if (m == "getProfileShape") return slot_of(&VCudaEngine::getProfileShape);
        if (m == "getNbIOTensors") return slot_of(&VCudaEngine::getNbIOTensors);
        if (m == "getIOTensorName") return slot_of(&VCudaEngine::getIOTensorName);
    } else if (c == "VExecutionContext") {
        if (m == "getPImpl") return slot_of(&VExecutionContext::getPImpl);
        if (m == "setInputShape") return slot_of(&VExecutionContext::setInputShape);
        if (m == "getTensorShape") return slot_of(&VExecutionContext::getTensorShape);
        if (m == "setTensorAddress") return slot_of(&VExecutionContext::setTensorAddress);
        if (m == "enqueueV3") return slot_of(&VExecutionContext::enqueueV3);
    } else if (c == "ILogger") {
        if (m == "log") return slot_of(&ILogger::log);
    }
    return -2;
}

EXPORT long fake_live_objects() { return live_objects; }
EXPORT int32_t fake_last_runtime_version() { return last_runtime_version; }
EXPORT int32_t fake_max_threads() { return max_threads; }
EXPORT int32_t fake_last_allocation_strategy() { return last_strategy; }
EXPORT char const *fake_logger_type_name() { return logger_type_name.c_str(); }
EXPORT long fake_logger_offset_to_top() { return logger_offset_to_top; }
EXPORT long fake_enqueue_count() { return enqueue_count; }
EXPORT long fake_sizeof_dims() { return static_cast<long>(sizeof(Dims64)); }
EXPORT long fake_offsetof_dims_d() { return static_cast<long>(offsetof(Dims64, d)); }
EXPORT long fake_impl_offset() {
    struct Probe : IRuntime {
        long offset() const { return reinterpret_cast<char const *>(&mImpl) - reinterpret_cast<char const *>(this); }
    };
    Probe probe;
    return probe.offset();
}
