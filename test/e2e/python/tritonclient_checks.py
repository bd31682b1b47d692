"""Issue #32: checks run with Triton's own Python client (tritonclient) against Nereid
serving the Python models of test/e2e/python/models.ts. Usage:

    python tritonclient_checks.py CHECK HTTP_HOST:PORT GRPC_HOST:PORT METRICS_URL

prints one JSON object: what the client saw (the test asserts the exact values)."""
import json
import queue
import sys
import urllib.request

import numpy as np
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException


def add_sub_inputs(module):
    a = np.array([[1, 2, 3, 4], [5, 6, 7, 8]], dtype=np.float32)
    b = np.array([[1, 1, 1, 1], [2, 2, 2, 2]], dtype=np.float32)
    inputs = [module.InferInput("INPUT0", [2, 4], "FP32"), module.InferInput("INPUT1", [2, 4], "FP32")]
    inputs[0].set_data_from_numpy(a)
    inputs[1].set_data_from_numpy(b)
    return inputs


def clients(http, grpc):
    """(protocol, tritonclient module, client) for HTTP, then gRPC."""
    return (("http", httpclient, httpclient.InferenceServerClient(http)), ("grpc", grpcclient, grpcclient.InferenceServerClient(grpc)))


def tensor(result, name):
    out = result.as_numpy(name)
    if out is None:
        return None
    if out.dtype == np.object_:
        return {"dtype": "object", "shape": list(out.shape), "data": [x.decode("utf-8") for x in out.reshape(-1)]}
    return {"dtype": str(out.dtype), "shape": list(out.shape), "data": out.reshape(-1).tolist()}


def error(e):
    return {"status": e.status(), "message": e.message()}


def check_add_sub(http, grpc, _metrics):
    seen = {}
    for proto, module, client in clients(http, grpc):
        outputs = [module.InferRequestedOutput("OUTPUT0"), module.InferRequestedOutput("OUTPUT1")]
        result = client.infer("py_add_sub", add_sub_inputs(module), outputs=outputs, request_id="add-sub-1")
        seen[proto] = {
            "ready": client.is_model_ready("py_add_sub"),
            "id": result.get_response()["id"] if proto == "http" else result.get_response().id,
            "OUTPUT0": tensor(result, "OUTPUT0"),
            "OUTPUT1": tensor(result, "OUTPUT1"),
        }
    return seen


def check_bytes(http, grpc, _metrics):
    seen = {}
    text = np.array([b"abc", "Z\u00fcrich".encode(), b""], dtype=np.object_)
    for proto, module, client in clients(http, grpc):
        inp = module.InferInput("TEXT", [3], "BYTES")
        inp.set_data_from_numpy(text)
        result = client.infer("py_echo", [inp], outputs=[module.InferRequestedOutput("UPPER")], request_id="bytes-1", parameters={"tag": "x"})
        meta = client.infer("py_echo", [inp], outputs=[module.InferRequestedOutput("META")], request_id="bytes-2", parameters={"tag": "x"})
        seen[proto] = {"UPPER": tensor(result, "UPPER"), "META": tensor(meta, "META")}
    return seen


def check_bls(http, grpc, _metrics):
    seen = {}
    for proto, module, client in clients(http, grpc):
        x = module.InferInput("X", [4], "FP32")
        x.set_data_from_numpy(np.array([1, 2, 3, 4], dtype=np.float32))
        n = module.InferInput("N", [1], "INT32")
        n.set_data_from_numpy(np.array([4], dtype=np.int32))
        result = client.infer("py_bls", [x, n])
        seen[proto] = {name: tensor(result, name) for name in ("SYNC", "ASYNC", "STREAM", "MISSING")}
    return seen


def check_decoupled(_http, grpc, _metrics):
    client = grpcclient.InferenceServerClient(grpc)
    results = queue.Queue()
    client.start_stream(callback=lambda result, error: results.put((result, error)))
    seen = {}
    try:
        for model, name, value, count, rid in (("py_repeat", "N", 4, 4, "repeat-4"), ("py_square", "IN", 3, 3, "square-3"), ("py_repeat", "N", 2, 2, "repeat-2")):
            inp = grpcclient.InferInput(name, [1], "INT32")
            inp.set_data_from_numpy(np.array([value], dtype=np.int32))
            client.async_stream_infer(model, [inp], request_id=rid, enable_empty_final_response=True)
            got = []
            while True:
                result, err = results.get(timeout=30)
                if err is not None:
                    got.append({"error": error(err)})
                    break
                response = result.get_response()
                final = response.parameters["triton_final_response"].bool_param
                got.append({"id": response.id, "model": response.model_name, "OUT": tensor(result, "OUT"), "final": final})
                if final:
                    break
            seen[rid] = got
    finally:
        client.stop_stream()
    # A decoupled model over unary infer, as tritonclient shows Nereid's refusal.
    try:
        inp = grpcclient.InferInput("N", [1], "INT32")
        inp.set_data_from_numpy(np.array([1], dtype=np.int32))
        client.infer("py_repeat", [inp])
        seen["unary"] = "no error"
    except InferenceServerException as e:
        seen["unary"] = error(e)
    return seen


def check_metrics(http, grpc, metrics):
    counts = []
    for proto, module, client in clients(http, grpc):
        for x in (3.0, 7.0) if proto == "http" else (0.5,):
            inp = module.InferInput("X", [1], "FP32")
            inp.set_data_from_numpy(np.array([x], dtype=np.float32))
            counts.append(tensor(client.infer("py_metrics", [inp]), "COUNT")["data"][0])
    with urllib.request.urlopen(metrics + "/metrics") as r:
        text = r.read().decode()
    return {"counts": counts, "lines": [l for l in text.split("\n") if l.startswith(("custom_", "# HELP custom_", "# TYPE custom_"))]}


def check_errors(http, grpc, _metrics):
    seen = {}
    for proto, module, client in clients(http, grpc):
        for word in ("fail", "raise"):
            inp = module.InferInput("TEXT", [1], "BYTES")
            inp.set_data_from_numpy(np.array([word.encode()], dtype=np.object_))
            try:
                client.infer("py_echo", [inp])
                seen[f"{proto} {word}"] = "no error"
            except InferenceServerException as e:
                seen[f"{proto} {word}"] = error(e)
    return seen


CHECKS = {name[len("check_"):]: f for name, f in globals().items() if name.startswith("check_")}

if __name__ == "__main__":
    check, http, grpc, metrics = sys.argv[1:5]
    print(json.dumps(CHECKS[check](http, grpc, metrics)))
