/**
 * The Python models the python-backend e2e tests load (issue #32), as files for
 * makeRepository().add(): each entry maps a path inside the repository to its text.
 */

/** py_add_sub: Triton's add_sub example, batched, two instances; PID reports the stub's process id. */
const ADD_SUB = `
import json, os, time
import numpy as np
import triton_python_backend_utils as pb_utils

class TritonPythonModel:
    def initialize(self, args):
        self.args = args
        self.config = json.loads(args["model_config"])
        self.out0 = pb_utils.triton_string_to_numpy(pb_utils.get_output_config_by_name(self.config, "OUTPUT0")["data_type"])
        pb_utils.Logger.log_info("py_add_sub initialized " + args["model_instance_name"])

    def execute(self, requests):
        responses = []
        for request in requests:
            a = pb_utils.get_input_tensor_by_name(request, "INPUT0").as_numpy()
            b = pb_utils.get_input_tensor_by_name(request, "INPUT1").as_numpy()
            if request.parameters() != "{}" and json.loads(request.parameters()).get("sleep_ms"):
                time.sleep(json.loads(request.parameters())["sleep_ms"] / 1000)
            pid = np.full([a.shape[0], 1], os.getpid(), dtype=np.int64)
            info = np.array([[self.args[k].encode() for k in ("model_name", "model_version", "model_instance_kind", "model_instance_device_id", "model_instance_name")]] * a.shape[0], dtype=np.object_)
            responses.append(pb_utils.InferenceResponse([
                pb_utils.Tensor("OUTPUT0", (a + b).astype(self.out0)),
                pb_utils.Tensor("OUTPUT1", a - b),
                pb_utils.Tensor("PID", pid),
                pb_utils.Tensor("INFO", info),
            ]))
        return responses
`;

const ADD_SUB_CONFIG = `backend: "python"
max_batch_size: 8
input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ 4 ] }, { name: "INPUT1" data_type: TYPE_FP32 dims: [ 4 ] } ]
output [
  { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 4 ] },
  { name: "OUTPUT1" data_type: TYPE_FP32 dims: [ 4 ] },
  { name: "PID" data_type: TYPE_INT64 dims: [ 1 ] },
  { name: "INFO" data_type: TYPE_STRING dims: [ 5 ] }
]
instance_group [ { count: 2 kind: KIND_CPU } ]
`;

/** py_auto: config.pbtxt names only the backend; auto_complete_config fills the rest. */
const AUTO = `
import numpy as np
import triton_python_backend_utils as pb_utils

class TritonPythonModel:
    @staticmethod
    def auto_complete_config(auto_complete_model_config):
        auto_complete_model_config.add_input({"name": "IN", "data_type": "TYPE_INT32", "dims": [-1]})
        auto_complete_model_config.add_output({"name": "OUT", "data_type": "TYPE_INT32", "dims": [-1]})
        auto_complete_model_config.set_max_batch_size(4)
        auto_complete_model_config.set_dynamic_batching()
        return auto_complete_model_config

    def execute(self, requests):
        return [pb_utils.InferenceResponse([pb_utils.Tensor("OUT", pb_utils.get_input_tensor_by_name(r, "IN").as_numpy() * 2)]) for r in requests]
`;

/** py_echo: BYTES in and out (upper-cased by a module beside it), the request's id, parameters and requested outputs; "fail" / "raise" fail it. */
const ECHO = `
import json
import numpy as np
import triton_python_backend_utils as pb_utils
from helper import shout

class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for r in requests:
            text = pb_utils.get_input_tensor_by_name(r, "TEXT").as_numpy()
            if text.dtype != np.object_:
                raise TypeError("BYTES input is not an object array: " + str(text.dtype))
            if text[0] == b"raise":
                raise ValueError("raised on purpose")
            if text[0] == b"fail":
                responses.append(pb_utils.InferenceResponse(output_tensors=[], error=pb_utils.TritonError("bad text", pb_utils.TritonError.INVALID_ARG)))
                continue
            upper = np.array([shout(t) for t in text], dtype=np.object_)
            meta = np.array([r.request_id(), r.parameters(), json.dumps(r.requested_output_names()), str(r.correlation_id())], dtype=np.object_)
            responses.append(pb_utils.InferenceResponse([pb_utils.Tensor("UPPER", upper), pb_utils.Tensor("META", meta)]))
        return responses
`;

const ECHO_CONFIG = `backend: "python"
default_model_filename: "echo.py"
input [ { name: "TEXT" data_type: TYPE_STRING dims: [ -1 ] } ]
output [ { name: "UPPER" data_type: TYPE_STRING dims: [ -1 ] }, { name: "META" data_type: TYPE_STRING dims: [ 4 ] } ]
`;

/** py_repeat (decoupled): for N, sends OUT = 0..N-1 from a thread after execute returned, then a flag-only final. */
const REPEAT = `
import threading
import numpy as np
import triton_python_backend_utils as pb_utils

class TritonPythonModel:
    def execute(self, requests):
        for r in requests:
            n = int(pb_utils.get_input_tensor_by_name(r, "N").as_numpy()[0])
            sender = r.get_response_sender()
            def run(sender=sender, n=n):
                for i in range(n):
                    sender.send(pb_utils.InferenceResponse([pb_utils.Tensor("OUT", np.array([i], dtype=np.int32))]))
                sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
            threading.Thread(target=run).start()
        return None
`;

const REPEAT_CONFIG = `backend: "python"
model_transaction_policy { decoupled: true }
input [ { name: "N" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "OUT" data_type: TYPE_INT32 dims: [ 1 ] } ]
`;

/** py_square (decoupled): for N, sends N responses OUT = N (Triton's square example); the last carries the final flag. */
const SQUARE = `
import numpy as np
import triton_python_backend_utils as pb_utils

class TritonPythonModel:
    def execute(self, requests):
        for r in requests:
            n = int(pb_utils.get_input_tensor_by_name(r, "IN").as_numpy()[0])
            sender = r.get_response_sender()
            if n == 0:
                sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
            for i in range(n):
                sender.send(pb_utils.InferenceResponse([pb_utils.Tensor("OUT", np.array([n], dtype=np.int32))]), flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL if i == n - 1 else 0)
`;

const SQUARE_CONFIG = `backend: "python"
model_transaction_policy { decoupled: true }
input [ { name: "IN" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "OUT" data_type: TYPE_INT32 dims: [ 1 ] } ]
`;

/**
 * py_bls (async execute): X through py_add_sub with exec() (SYNC = X + X) and twice at
 * once with async_exec() (ASYNC = sum of both OUTPUT0s), py_repeat's stream for N through
 * exec(decoupled=True) (STREAM, its empty final response dropped), and a call to a
 * missing model whose error it reports in MISSING.
 */
const BLS = `
import asyncio
import numpy as np
import triton_python_backend_utils as pb_utils

def add_sub(x):
    return pb_utils.InferenceRequest(model_name="py_add_sub", requested_output_names=["OUTPUT0"],
                                     inputs=[pb_utils.Tensor("INPUT0", x[None]), pb_utils.Tensor("INPUT1", x[None])])

class TritonPythonModel:
    async def execute(self, requests):
        responses = []
        for r in requests:
            x = pb_utils.get_input_tensor_by_name(r, "X").as_numpy()
            n = pb_utils.get_input_tensor_by_name(r, "N").as_numpy()
            sync = add_sub(x).exec()
            if sync.has_error():
                raise pb_utils.TritonModelException(sync.error().message())
            a, b = await asyncio.gather(add_sub(x).async_exec(), add_sub(x * 2).async_exec())
            both = pb_utils.get_output_tensor_by_name(a, "OUTPUT0").as_numpy() + pb_utils.get_output_tensor_by_name(b, "OUTPUT0").as_numpy()
            stream = []
            for resp in pb_utils.InferenceRequest(model_name="py_repeat", requested_output_names=["OUT"], inputs=[pb_utils.Tensor("N", n)]).exec(decoupled=True):
                if resp.has_error():
                    raise pb_utils.TritonModelException(resp.error().message())
                out = pb_utils.get_output_tensor_by_name(resp, "OUT")
                if out is not None:
                    stream.append(int(out.as_numpy()[0]))
            missing = pb_utils.InferenceRequest(model_name="py_nope", requested_output_names=["X"], inputs=[pb_utils.Tensor("X", x)]).exec()
            responses.append(pb_utils.InferenceResponse([
                pb_utils.Tensor("SYNC", pb_utils.get_output_tensor_by_name(sync, "OUTPUT0").as_numpy()[0]),
                pb_utils.Tensor("ASYNC", both[0]),
                pb_utils.Tensor("STREAM", np.array(stream, dtype=np.int32)),
                pb_utils.Tensor("MISSING", np.array([missing.error().message().encode() if missing.has_error() else b"no error"], dtype=np.object_)),
            ]))
        return responses
`;

const BLS_CONFIG = `backend: "python"
input [ { name: "X" data_type: TYPE_FP32 dims: [ 4 ] }, { name: "N" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [
  { name: "SYNC" data_type: TYPE_FP32 dims: [ 4 ] },
  { name: "ASYNC" data_type: TYPE_FP32 dims: [ 4 ] },
  { name: "STREAM" data_type: TYPE_INT32 dims: [ -1 ] },
  { name: "MISSING" data_type: TYPE_STRING dims: [ 1 ] }
]
`;

/** py_crash: X = 1 ends the stub (os._exit), X = 2 stops it (SIGSTOP: it hangs), otherwise answers its PID. */
const CRASH = `
import os, signal
import numpy as np
import triton_python_backend_utils as pb_utils

class TritonPythonModel:
    def execute(self, requests):
        x = int(pb_utils.get_input_tensor_by_name(requests[0], "X").as_numpy()[0])
        if x == 1:
            os._exit(7)
        if x == 2:
            os.kill(os.getpid(), signal.SIGSTOP)
        return [pb_utils.InferenceResponse([pb_utils.Tensor("PID", np.array([os.getpid()], dtype=np.int64))]) for r in requests]
`;

const CRASH_CONFIG = `backend: "python"
input [ { name: "X" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "PID" data_type: TYPE_INT64 dims: [ 1 ] } ]
`;

/** py_cancel: waits (up to 60 s) until its request is cancelled, then writes the marker file its parameter names. */
const CANCEL = `
import json, time
import triton_python_backend_utils as pb_utils

class TritonPythonModel:
    def execute(self, requests):
        r = requests[0]
        marker = json.loads(r.parameters())["marker"]
        deadline = time.time() + 60
        while not r.is_cancelled() and time.time() < deadline:
            time.sleep(0.02)
        with open(marker, "w") as f:
            f.write("cancelled" if r.is_cancelled() else "timed out")
        return [pb_utils.InferenceResponse(error=pb_utils.TritonError("cancelled", pb_utils.TritonError.CANCELLED)) for r in requests]
`;

const CANCEL_CONFIG = `backend: "python"
input [ { name: "X" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "Y" data_type: TYPE_INT32 dims: [ 1 ] } ]
`;

/** py_metrics: custom metrics (a counter, a gauge, a histogram); COUNT is the counter's value after this request. */
const METRICS = `
import numpy as np
import triton_python_backend_utils as pb_utils

class TritonPythonModel:
    def initialize(self, args):
        labels = {"model": args["model_name"], "version": args["model_version"]}
        self.requests = pb_utils.MetricFamily("custom_requests", "Requests seen", pb_utils.MetricFamily.COUNTER).Metric(labels=labels)
        self.last = pb_utils.MetricFamily("custom_last_value", "Last X", pb_utils.MetricFamily.GAUGE).Metric(labels=labels)
        self.hist = pb_utils.MetricFamily("custom_x", "X values", pb_utils.MetricFamily.HISTOGRAM).Metric(labels=labels, buckets=[1.0, 5.0])
        try:
            pb_utils.MetricFamily("custom_requests", "Another help", pb_utils.MetricFamily.GAUGE)
            self.clash = "no error"
        except pb_utils.TritonModelException as e:
            self.clash = str(e)

    def execute(self, requests):
        out = []
        for r in requests:
            x = float(pb_utils.get_input_tensor_by_name(r, "X").as_numpy()[0])
            self.requests.increment(1)
            self.last.set(x)
            self.hist.observe(x)
            out.append(pb_utils.InferenceResponse([
                pb_utils.Tensor("COUNT", np.array([self.requests.value()], dtype=np.float64)),
                pb_utils.Tensor("CLASH", np.array([self.clash.encode()], dtype=np.object_)),
            ]))
        return out
`;

const METRICS_CONFIG = `backend: "python"
input [ { name: "X" data_type: TYPE_FP32 dims: [ 1 ] } ]
output [ { name: "COUNT" data_type: TYPE_FP64 dims: [ 1 ] }, { name: "CLASH" data_type: TYPE_STRING dims: [ 1 ] } ]
`;

/** py_no_numpy: its EXECUTION_ENV_PATH holds a bin/python3 that runs Python without site-packages (so without numpy). */
const NO_NUMPY_CONFIG = `backend: "python"
parameters { key: "EXECUTION_ENV_PATH" value: { string_value: "$$TRITON_MODEL_DIRECTORY/env" } }
input [ { name: "X" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "Y" data_type: TYPE_INT32 dims: [ 1 ] } ]
`;

/** py_outside_env: EXECUTION_ENV_PATH outside the model's folder, refused. */
const OUTSIDE_ENV_CONFIG = `backend: "python"
parameters { key: "EXECUTION_ENV_PATH", value: { string_value: "/usr" } }
input [ { name: "X" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "Y" data_type: TYPE_INT32 dims: [ 1 ] } ]
`;

/** py_params: a response with parameters (pb_utils.InferenceResponse(parameters=...)); X = 1 gives parameters no client can receive. */
const PARAMS = `import triton_python_backend_utils as pb_utils
import numpy as np


class TritonPythonModel:
    def execute(self, requests):
        out = []
        for r in requests:
            x = int(pb_utils.get_input_tensor_by_name(r, "X").as_numpy()[0])
            params = {"source": "py", "count": x * 3, "ratio": 0.5, "ok": True} if x != 1 else {"nested": [1, 2]}
            y = pb_utils.Tensor("Y", np.array([x], dtype=np.int32))
            out.append(pb_utils.InferenceResponse(output_tensors=[y], parameters=params))
        return out
`;

const PARAMS_CONFIG = `backend: "python"
input [ { name: "X" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "Y" data_type: TYPE_INT32 dims: [ 1 ] } ]
`;

/** The files of the main server's repository. */
export function pythonModels(python: string): Record<string, string> {
  return {
    "py_params/config.pbtxt": PARAMS_CONFIG,
    "py_params/1/model.py": PARAMS,
    "py_add_sub/config.pbtxt": ADD_SUB_CONFIG,
    "py_add_sub/1/model.py": ADD_SUB,
    "py_auto/config.pbtxt": `backend: "python"\n`,
    "py_auto/1/model.py": AUTO,
    "py_echo/config.pbtxt": ECHO_CONFIG,
    "py_echo/1/echo.py": ECHO,
    "py_echo/1/helper.py": "def shout(b):\n    return b.upper()\n",
    "py_repeat/config.pbtxt": REPEAT_CONFIG,
    "py_repeat/1/model.py": REPEAT,
    "py_square/config.pbtxt": SQUARE_CONFIG,
    "py_square/1/model.py": SQUARE,
    "py_bls/config.pbtxt": BLS_CONFIG,
    "py_bls/1/model.py": BLS,
    "py_cancel/config.pbtxt": CANCEL_CONFIG,
    "py_cancel/1/model.py": CANCEL,
    "py_metrics/config.pbtxt": METRICS_CONFIG,
    "py_metrics/1/model.py": METRICS,
    "py_no_numpy/config.pbtxt": NO_NUMPY_CONFIG,
    "py_no_numpy/1/model.py": ADD_SUB,
    "py_no_numpy/env/bin/python3": `#!/bin/sh\nexec ${python} -S "$@"\n`,
    "py_outside_env/config.pbtxt": OUTSIDE_ENV_CONFIG,
    "py_outside_env/1/model.py": ADD_SUB,
  };
}

/** py_crash_stream (decoupled): sends OUT = 0, then ends its stub. */
const CRASH_STREAM = `
import os
import numpy as np
import triton_python_backend_utils as pb_utils

class TritonPythonModel:
    def execute(self, requests):
        sender = requests[0].get_response_sender()
        sender.send(pb_utils.InferenceResponse([pb_utils.Tensor("OUT", np.array([0], dtype=np.int32))]))
        os._exit(9)
`;

/** The files of the crash/hang server's repository. */
export const CRASH_MODELS: Record<string, string> = {
  "py_crash_stream/config.pbtxt": REPEAT_CONFIG,
  "py_crash_stream/1/model.py": CRASH_STREAM,
  "py_crash/config.pbtxt": CRASH_CONFIG,
  "py_crash/1/model.py": CRASH,
};
