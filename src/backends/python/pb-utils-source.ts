/**
 * @module The `triton_python_backend_utils` module models import (as pb_utils): Tensor, InferenceRequest/Response, TritonError, ModelConfig for auto_complete_config, Logger, MetricFamily/Metric, datatype helpers. Written out next to the stub at run time (python-files.ts).
 * Python source kept as a string so the compiled binary carries it (no file beside the executable).
 */
export const PB_UTILS_SOURCE = String.raw`"""triton_python_backend_utils for Nereid's python backend (the stub imports it; models import it as pb_utils)."""
import json
import struct
import threading

import numpy as np

TRITONSERVER_RESPONSE_COMPLETE_FINAL = 1
TRITONSERVER_REQUEST_FLAG_SEQUENCE_START = 1
TRITONSERVER_REQUEST_FLAG_SEQUENCE_END = 2

# Triton's TRITONSERVER_DataType numbers, protocol names and numpy types.
_TYPES = [
    (1, "BOOL", np.bool_), (2, "UINT8", np.uint8), (3, "UINT16", np.uint16), (4, "UINT32", np.uint32),
    (5, "UINT64", np.uint64), (6, "INT8", np.int8), (7, "INT16", np.int16), (8, "INT32", np.int32),
    (9, "INT64", np.int64), (10, "FP16", np.float16), (11, "FP32", np.float32), (12, "FP64", np.float64),
    (13, "BYTES", np.object_),
]
_NUM_TO_NP = {n: t for n, _, t in _TYPES}
_NAME_TO_NP = {s: t for _, s, t in _TYPES}
_NUM_TO_NAME = {n: s for n, s, _ in _TYPES}
_NAME_TO_NUM = {s: n for n, s, _ in _TYPES}
TRITON_STRING_TO_NUMPY = {("TYPE_STRING" if s == "BYTES" else "TYPE_" + s): t for _, s, t in _TYPES}


def triton_to_numpy_type(data_type):
    return _NUM_TO_NP.get(data_type)


def numpy_to_triton_type(data_type):
    dt = np.dtype(data_type)
    if dt.kind in ("O", "S"):
        return 13
    for n, _, t in _TYPES[:-1]:
        if dt == np.dtype(t):
            return n
    return None


def triton_string_to_numpy(triton_type_string):
    return TRITON_STRING_TO_NUMPY[triton_type_string]


def serialize_byte_tensor(input_tensor):
    """A BYTES tensor (object or bytes_ array) as Triton's 4-byte length-prefixed elements, in C order."""
    if input_tensor.size == 0:
        return np.empty([0], dtype=np.uint8)
    parts = []
    for obj in input_tensor.reshape(-1, order="C"):
        s = obj if isinstance(obj, (bytes, bytearray)) else str(obj).encode("utf-8")
        parts.append(struct.pack("<I", len(s)))
        parts.append(bytes(s))
    return np.frombuffer(b"".join(parts), dtype=np.uint8)


def deserialize_bytes_tensor(encoded_tensor):
    """Length-prefixed elements as a 1-D object array of bytes."""
    buf = memoryview(encoded_tensor).cast("B")
    out = []
    offset = 0
    while offset + 4 <= len(buf):
        n = struct.unpack_from("<I", buf, offset)[0]
        offset += 4
        out.append(bytes(buf[offset:offset + n]))
        offset += n
    arr = np.empty(len(out), dtype=np.object_)
    arr[:] = out
    return arr


class TritonError:
    UNKNOWN = 0
    INTERNAL = 1
    NOT_FOUND = 2
    INVALID_ARG = 3
    UNAVAILABLE = 4
    UNSUPPORTED = 5
    ALREADY_EXISTS = 6
    CANCELLED = 7

    def __init__(self, message, code=INTERNAL):
        self._message = message
        self._code = code

    def message(self):
        return self._message

    def code(self):
        return self._code

    def __str__(self):
        return str(self._message)

    def __repr__(self):
        return "TritonError(%r, %r)" % (self._message, self._code)


_CODE_NAMES = {0: "UNKNOWN", 1: "INTERNAL", 2: "NOT_FOUND", 3: "INVALID_ARG", 4: "UNAVAILABLE", 5: "UNSUPPORTED", 6: "ALREADY_EXISTS", 7: "CANCELLED"}
_CODE_NUMS = {v: k for k, v in _CODE_NAMES.items()}


class TritonModelException(Exception):
    def __init__(self, msg):
        super().__init__(msg)
        self._msg = msg

    def message(self):
        return self._msg


class Tensor:
    """A named numpy array; BYTES as an object array of bytes."""

    def __init__(self, name, numpy_array, triton_dtype=None):
        if not isinstance(numpy_array, np.ndarray):
            raise TritonModelException("Tensor '%s': numpy_array must be a numpy.ndarray, not %s" % (name, type(numpy_array).__name__))
        if numpy_array.dtype.kind in ("U", "V"):
            raise TritonModelException("Tensor dtype used for numpy_array is not supported by Python backend. Please use np.object_ instead.")
        if triton_dtype is not None:
            np_type = triton_to_numpy_type(triton_dtype)
            if np_type is None:
                raise TritonModelException("Tensor '%s': unsupported Triton datatype %r" % (name, triton_dtype))
            if numpy_array.dtype != np.dtype(np_type) and np_type is not np.object_:
                numpy_array = numpy_array.view(np_type)
        else:
            triton_dtype = numpy_to_triton_type(numpy_array.dtype)
            if triton_dtype is None:
                raise TritonModelException("Tensor '%s': numpy dtype %s has no Triton datatype" % (name, numpy_array.dtype))
        self._name = name
        self._array = numpy_array
        self._triton_dtype = triton_dtype

    def name(self):
        return self._name

    def as_numpy(self):
        return self._array

    def triton_dtype(self):
        return self._triton_dtype

    def shape(self):
        return list(self._array.shape)

    def is_cpu(self):
        return True

    def to_dlpack(self):
        raise TritonModelException("DLPack is not supported by Nereid's python backend")

    @staticmethod
    def from_dlpack(name, capsule):
        raise TritonModelException("DLPack is not supported by Nereid's python backend")

    def __repr__(self):
        return "Tensor(%r, %s%r)" % (self._name, _NUM_TO_NAME.get(self._triton_dtype), tuple(self._array.shape))


class InferenceResponse:
    def __init__(self, output_tensors=None, error=None, parameters=None):
        if output_tensors is None:
            output_tensors = []
        if not isinstance(output_tensors, list):
            raise TritonModelException('"output_tensors" must be a list.')
        if error is not None and not isinstance(error, TritonError):
            raise TritonModelException('"error" must be a TritonError.')
        self._outputs = output_tensors
        self._error = error
        if isinstance(parameters, str):
            parameters = json.loads(parameters)
        self._parameters = parameters or {}

    def output_tensors(self):
        return self._outputs

    def has_error(self):
        return self._error is not None

    def error(self):
        return self._error

    def parameters(self):
        return json.dumps(self._parameters)


def get_input_tensor_by_name(inference_request, name):
    for t in inference_request.inputs():
        if t.name() == name:
            return t
    return None


def get_output_tensor_by_name(inference_response, name):
    for t in inference_response.output_tensors():
        if t.name() == name:
            return t
    return None


def get_input_config_by_name(model_config, name):
    for i in model_config.get("input", []):
        if i.get("name") == name:
            return i
    return None


def get_output_config_by_name(model_config, name):
    for o in model_config.get("output", []):
        if o.get("name") == name:
            return o
    return None


# The stub process sets this to its runtime (channel, arenas); BLS, senders, logs and metrics go through it.
_runtime = None


def _rt():
    if _runtime is None:
        raise TritonModelException("this call needs the python backend's stub process (it was made outside a model)")
    return _runtime


class InferenceRequest:
    """A request the server handed to execute(), or a BLS request the model makes (exec / async_exec)."""

    def __init__(self, model_name="", inputs=None, requested_output_names=None, request_id="", correlation_id=0,
                 flags=0, timeout=0, model_version=-1, parameters=None, preferred_memory=None, trace=None):
        self._model_name = model_name
        self._inputs = list(inputs or [])
        self._requested_output_names = list(requested_output_names or [])
        self._request_id = request_id
        self._correlation_id = correlation_id
        self._flags = flags
        self._timeout = timeout
        self._model_version = model_version
        if parameters is None:
            parameters = {}
        if isinstance(parameters, str):
            parameters = json.loads(parameters)
        if not isinstance(parameters, dict):
            raise TritonModelException("InferenceRequest parameters must be a dict or a JSON string")
        self._parameters = parameters
        self._cancelled = threading.Event()
        self._sender = None
        self._key = None

    def inputs(self):
        return self._inputs

    def request_id(self):
        return self._request_id

    def correlation_id(self):
        return self._correlation_id

    def flags(self):
        return self._flags

    def timeout(self):
        return self._timeout

    def model_name(self):
        return self._model_name

    def model_version(self):
        return self._model_version

    def requested_output_names(self):
        return self._requested_output_names

    def parameters(self):
        return json.dumps(self._parameters)

    def is_cancelled(self):
        return self._cancelled.is_set()

    def get_response_sender(self):
        if self._sender is None:
            raise TritonModelException("get_response_sender() is only available in a decoupled model (model_transaction_policy { decoupled: true })")
        return self._sender

    def exec(self, decoupled=False):
        return _rt().bls(self, decoupled)

    def async_exec(self, decoupled=False):
        return _rt().bls_async(self, decoupled)


class InferenceResponseSender:
    def __init__(self, runtime, key):
        self._rt = runtime
        self._key = key
        self._closed = False
        self._lock = threading.Lock()
        self._request = None

    def send(self, response=None, flags=0):
        final = bool(flags & TRITONSERVER_RESPONSE_COMPLETE_FINAL)
        with self._lock:
            if self._closed:
                raise TritonModelException("Unable to send response. Response sender has been closed.")
            if response is None and not final:
                raise TritonModelException("Inference Response object must be provided when the response flags is set to zero.")
            if final:
                self._closed = True
        self._rt.send_response(self._key, response, final)

    def is_cancelled(self):
        return self._request is not None and self._request.is_cancelled()


class Logger:
    INFO = 0
    WARNING = 1
    ERROR = 2
    VERBOSE = 3

    @staticmethod
    def log(message, level=0):
        name = {0: "info", 1: "warn", 2: "error", 3: "verbose"}.get(level, "info")
        if _runtime is None:
            print(message)
        else:
            _runtime.log(name, str(message))

    @staticmethod
    def log_info(message):
        Logger.log(message, Logger.INFO)

    @staticmethod
    def log_warn(message):
        Logger.log(message, Logger.WARNING)

    @staticmethod
    def log_error(message):
        Logger.log(message, Logger.ERROR)

    @staticmethod
    def log_verbose(message):
        Logger.log(message, Logger.VERBOSE)


class ModelConfig:
    """The config auto_complete_config receives and returns."""

    def __init__(self, model_config):
        if isinstance(model_config, str):
            model_config = json.loads(model_config)
        self._config = model_config

    def as_dict(self):
        return self._config

    def set_max_batch_size(self, max_batch_size):
        cur = self._config.get("max_batch_size", 0)
        if cur not in (0, max_batch_size) and cur != max_batch_size:
            raise ValueError("configuration specified max_batch_size " + str(cur) + ", but in auto-complete-config function for model '" + str(self._config.get("name")) + "' specified max_batch_size " + str(max_batch_size))
        self._config["max_batch_size"] = max_batch_size

    def set_dynamic_batching(self):
        self._config.setdefault("dynamic_batching", {})

    def set_model_transaction_policy(self, transaction_policy_dict):
        for k in transaction_policy_dict:
            if k != "decoupled":
                raise ValueError("model transaction property in auto-complete-config function for model '" + str(self._config.get("name")) + "' contains property other than 'decoupled'")
        self._config["model_transaction_policy"] = dict(transaction_policy_dict)

    def _add(self, kind, tensor):
        if not isinstance(tensor, dict):
            raise ValueError(kind + " in auto-complete-config function for model '" + str(self._config.get("name")) + "' must be a dict")
        for k in ("name", "data_type", "dims"):
            if k not in tensor:
                raise ValueError(kind + " '" + str(tensor.get("name")) + "' in auto-complete-config function for model '" + str(self._config.get("name")) + "' is missing '" + k + "' property.")
        entry = dict(tensor)
        dt = entry["data_type"]
        if not dt.startswith("TYPE_"):
            entry["data_type"] = "TYPE_" + dt
        entry["dims"] = [int(d) for d in entry["dims"]]
        entries = self._config.setdefault(kind, [])
        for existing in entries:
            if existing.get("name") == entry["name"]:
                for k in ("data_type", "dims"):
                    if k in existing and existing[k] and existing[k] != entry[k]:
                        raise ValueError("unable to load model '" + str(self._config.get("name")) + "', configuration expects " + k + " " + str(existing[k]) + " for " + kind + " '" + entry["name"] + "', model provides " + str(entry[k]))
                existing.update({k: v for k, v in entry.items() if k not in existing or not existing[k]})
                return
        entries.append(entry)

    def add_input(self, input):
        self._add("input", input)

    def add_output(self, output):
        self._add("output", output)


class Metric:
    """One labelled metric of a MetricFamily (made by MetricFamily.Metric)."""

    def increment(self, value):
        if self._family._kind == MetricFamily.GAUGE or value >= 0:
            _rt().metric_op(self._id, "inc", value)
        else:
            raise TritonModelException("Failed to increment metric value: counters may not decrease")

    def set(self, value):
        if self._family._kind != MetricFamily.GAUGE:
            raise TritonModelException("Failed to set metric value: only a gauge can be set")
        _rt().metric_op(self._id, "set", value)

    def observe(self, value):
        if self._family._kind != MetricFamily.HISTOGRAM:
            raise TritonModelException("Failed to observe metric value: only a histogram observes")
        _rt().metric_op(self._id, "observe", value)

    def value(self):
        return _rt().metric_value(self._id)


class MetricFamily:
    COUNTER = 0
    GAUGE = 1
    HISTOGRAM = 2

    def __init__(self, name, description, kind):
        if kind not in (0, 1, 2):
            raise TritonModelException("MetricFamily kind must be COUNTER, GAUGE or HISTOGRAM")
        self._name = name
        self._description = description
        self._kind = kind
        _rt().family_new(self)

    def Metric(self, labels=None, buckets=None):
        if self._kind == MetricFamily.HISTOGRAM and not buckets:
            raise TritonModelException("a histogram Metric needs buckets")
        m = Metric.__new__(Metric)
        m._family = self
        m._labels = dict(labels or {})
        m._id = _rt().metric_new(self, m._labels, buckets)
        return m
`;
