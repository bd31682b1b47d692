/**
 * @module The stub's main script: one process per model instance (stub-process.ts starts it), running model.py and answering the server's control messages; tensors cross through the two shared-memory regions.
 * Python source kept as a string so the compiled binary carries it (no file beside the executable).
 */
export const STUB_SOURCE = String.raw`"""Nereid's python backend stub: runs one model instance's model.py, talks to the server over
fd 0 / a private copy of fd 1 (length-prefixed JSON control messages) and two shared-memory
regions (tensor bytes). argv: lib_dir model_path region_in region_out region_size [socket].
With a socket path, the server's frontend worker threads also connect there, each on a
connection of its own, and send executes with their tensors inline (Direct)."""
import os
import sys
import json
import struct
import threading
import queue
import time
import traceback

_ctl_out = os.dup(1)
os.dup2(2, 1)  # the model's print() goes to the server's stderr, never into the control channel


def _write_all(fd, data):
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


_wlock = threading.Lock()


def send(msg):
    body = json.dumps(msg, separators=(",", ":")).encode("utf-8")
    try:
        with _wlock:
            _write_all(_ctl_out, struct.pack("<I", len(body)) + body)
    except OSError:
        os._exit(0)  # the server is gone


def _read_exact(n):
    chunks = []
    while n > 0:
        b = os.read(0, n)
        if not b:
            raise EOFError
        chunks.append(b)
        n -= len(b)
    return b"".join(chunks)


def recv():
    (n,) = struct.unpack("<I", _read_exact(4))
    return json.loads(_read_exact(n))


work = queue.Queue()


def _reader():
    try:
        while True:
            m = recv()
            if "fr" in m:  # blocks the server has copied, freed with its next message
                for o in m["fr"]:
                    arena.release(o)
            if m["t"] == "ping":
                send({"t": "pong", "n": m["n"]})
            elif m["t"] in ("exec", "init", "auto", "fini"):
                work.put(m)
            else:
                on_message(m)
    except EOFError:
        pass
    except Exception:
        traceback.print_exc()
    work.put({"t": "eof"})
    # The server closed the channel: a model still busy in execute has 5 s to return.
    ender = threading.Timer(5, lambda: os._exit(0))
    ender.daemon = True
    ender.start()


threading.Thread(target=_reader, daemon=True).start()

lib_dir, model_path, region_in, region_out, region_size = sys.argv[1:6]
socket_path = sys.argv[6] if len(sys.argv) > 6 else ""
region_size = int(region_size)
sys.path.insert(0, lib_dir)
try:
    import numpy as np
except Exception as e:  # the one failure the server reports as the model's load error
    send({"t": "fatal", "m": "the model's Python cannot import numpy (%s: %s); the python backend needs numpy in the model's Python environment" % (type(e).__name__, e)})
    sys.exit(3)

import mmap
import asyncio
import importlib.util
import triton_python_backend_utils as pb_utils


def _map(name):
    path = "/dev/shm/" + name.lstrip("/")
    fd = os.open(path, os.O_RDWR)
    try:
        return mmap.mmap(fd, region_size)
    finally:
        os.close(fd)
        os.unlink(path)  # mapped on both sides now: nothing is left behind if either dies


_in = _map(region_in)
_out = _map(region_out)

ALIGN = 64


def arena_too_small(n):
    raise pb_utils.TritonModelException("tensor of %d bytes does not fit the free space of the stub's shared memory region (%d bytes; raise --backend-config=python,shm-default-byte-size)" % (n, region_size))


class Arena:
    """First-fit allocator over the outgoing region; the server frees blocks once it has copied them."""

    def __init__(self, size):
        self.free = [(0, size)]
        self.used = {}
        self.lock = threading.Lock()

    def alloc(self, n):
        n = max(ALIGN, (n + ALIGN - 1) // ALIGN * ALIGN)
        with self.lock:
            for i, (off, size) in enumerate(self.free):
                if size >= n:
                    if size == n:
                        del self.free[i]
                    else:
                        self.free[i] = (off + n, size - n)
                    self.used[off] = n
                    return off
        arena_too_small(n)

    def release(self, off):
        with self.lock:
            n = self.used.pop(off, None)
            if n is None:
                return
            self.free.append((off, n))
            self.free.sort()
            merged = []
            for o, s in self.free:
                if merged and merged[-1][0] + merged[-1][1] == o:
                    merged[-1] = (merged[-1][0], merged[-1][1] + s)
                else:
                    merged.append((o, s))
            self.free = merged


arena = Arena(region_size)


def _tensor_bytes(t):
    if not isinstance(t, pb_utils.Tensor):
        raise pb_utils.TritonModelException("expected a pb_utils.Tensor, got %s" % type(t).__name__)
    arr = t.as_numpy()
    dt = pb_utils._NUM_TO_NAME[t.triton_dtype()]
    if dt == "BYTES":
        raw = pb_utils.serialize_byte_tensor(arr)
    else:
        raw = np.ascontiguousarray(arr).reshape(-1).view(np.uint8)
    return dt, [int(d) for d in arr.shape], raw


def put_tensors(tensors):
    """Writes tensors into the outgoing region; returns their descriptors (freed on failure)."""
    descs = []
    try:
        for t in tensors:
            dt, shape, raw = _tensor_bytes(t)
            n = raw.nbytes
            off = arena.alloc(n)
            descs.append({"n": t.name(), "d": dt, "s": shape, "o": off, "b": n})
            if n:
                np.frombuffer(_out, dtype=np.uint8, count=n, offset=off)[:] = raw
    except BaseException:
        for d in descs:
            arena.release(d["o"])
        raise
    return descs


class Inline:
    """Tensor bytes that travel inside a direct connection's message: one buffer, descriptors at offsets in it."""

    def __init__(self, raw=b""):
        self.raw = raw
        self.out = bytearray()
        self.used = 0

    def put(self, tensors):
        descs = []
        for t in tensors:
            dt, shape, raw = _tensor_bytes(t)
            n = raw.nbytes
            # The shared region's bound (64-byte blocks, all of an answer's tensors at once), so
            # an answer does not depend on the thread that asked.
            self.used += max(ALIGN, (n + ALIGN - 1) // ALIGN * ALIGN)
            if self.used > region_size:
                arena_too_small(n)
            descs.append({"n": t.name(), "d": dt, "s": shape, "o": len(self.out), "b": n})
            self.out += raw.tobytes()
        return descs

    def get(self, descs):
        return get_tensors(descs, self.raw)


def get_tensors(descs, source=None):
    """Copies tensors out of the incoming region (or source, a direct message's bytes) into numpy arrays the model owns."""
    src = _in if source is None else source
    out = []
    for d in descs:
        dt, o, b, shape = d["d"], d["o"], d["b"], d["s"]
        if o < 0 or b < 0 or o + b > len(src):
            raise pb_utils.TritonModelException("tensor '%s': bytes [%d, +%d) outside the message" % (d["n"], o, b))
        if dt == "BYTES":
            arr = pb_utils.deserialize_bytes_tensor(src[o:o + b]).reshape(shape)
        elif dt not in pb_utils._NAME_TO_NP:
            raise pb_utils.TritonModelException("tensor '%s': datatype %s is not supported by the python backend" % (d["n"], dt))
        else:
            np_type = pb_utils._NAME_TO_NP[dt]
            count = b // np.dtype(np_type).itemsize
            arr = np.frombuffer(src, dtype=np_type, count=count, offset=o).reshape(shape).copy()
        out.append(pb_utils.Tensor(d["n"], arr))
    return out


def error_of(err):
    if isinstance(err, pb_utils.TritonError):
        return {"m": str(err.message()), "c": pb_utils._CODE_NAMES.get(err.code(), "INTERNAL")}
    return {"m": "%s: %s" % (type(err).__name__, err), "c": "INTERNAL"}


def response_msg(resp, put=put_tensors):
    if not isinstance(resp, pb_utils.InferenceResponse):
        return {"err": {"m": "expected a pb_utils.InferenceResponse, got %s" % type(resp).__name__, "c": "INTERNAL"}}
    if resp.has_error():
        return {"err": error_of(resp.error())}
    try:
        msg = {"outs": put(resp.output_tensors())}
        if resp._parameters:
            msg["p"] = resp._parameters
        return msg
    except Exception as e:
        return {"err": error_of(e)}


class Runtime:
    """What pb_utils calls into: BLS, response senders, logs and metrics."""

    def __init__(self):
        self.lock = threading.Lock()
        self.next = 0
        self.calls = {}
        self.requests = {}
        self.loop = asyncio.new_event_loop()

    def _id(self):
        with self.lock:
            self.next += 1
            return self.next

    def log(self, level, message):
        send({"t": "log", "l": level, "m": message})

    def send_response(self, key, response, final):
        msg = {"t": "send", "k": key, "final": final}
        if response is not None:
            msg.update(response_msg(response))
        if final:
            self.requests.pop(tuple(key), None)
        send(msg)

    def _start_bls(self, request, decoupled, sink):
        if not isinstance(request.model_name(), str) or not request.model_name():
            raise pb_utils.TritonModelException("BLS InferenceRequest needs a model_name")
        cid = self._id()
        self.calls[cid] = sink
        try:
            descs = put_tensors(request.inputs())
        except BaseException:
            self.calls.pop(cid, None)
            raise
        send({"t": "bls", "c": cid, "m": request.model_name(), "v": request.model_version(), "in": descs,
              "out": request.requested_output_names(), "p": json.loads(request.parameters()),
              "id": request.request_id(), "corr": request.correlation_id(), "to": request.timeout(), "dec": bool(decoupled)})
        return cid

    def bls(self, request, decoupled):
        q = queue.Queue()
        self._start_bls(request, decoupled, q.put)
        if decoupled:
            return _StreamIterator(q)
        return q.get()[0]

    def bls_async(self, request, decoupled):
        loop = asyncio.get_event_loop()
        fut = loop.create_future()
        if decoupled:
            q = queue.Queue()
            first = [True]

            def sink(item):
                q.put(item)
                if first[0]:
                    first[0] = False
                    loop.call_soon_threadsafe(lambda: fut.done() or fut.set_result(_StreamIterator(q)))
            self._start_bls(request, True, sink)
        else:
            self._start_bls(request, False, lambda item: loop.call_soon_threadsafe(lambda: fut.done() or fut.set_result(item[0])))
        return fut

    def on_bls_result(self, m):
        sink = self.calls.get(m["c"])
        if m.get("final"):
            self.calls.pop(m["c"], None)
        resp = None
        if m.get("err"):
            resp = pb_utils.InferenceResponse([], pb_utils.TritonError(m["err"]["m"], pb_utils._CODE_NUMS.get(m["err"]["c"], 1)))
        elif m.get("outs") is not None:
            try:
                resp = pb_utils.InferenceResponse(get_tensors(m["outs"]))
            finally:
                send({"t": "free", "o": [d["o"] for d in m["outs"]]})
        if sink is not None:
            sink((resp, bool(m.get("final"))))

    # Custom metrics: registered with the server, which exports them on /metrics.
    def _metric_call(self, msg):
        q = queue.Queue()
        cid = self._id()
        self.calls[cid] = q.put
        msg["c"] = cid
        send(msg)
        reply = q.get()
        if reply.get("e"):
            raise pb_utils.TritonModelException(reply["e"])
        return reply.get("v")

    def family_new(self, family):
        family._id = self._id()
        self._metric_call({"t": "mfam", "f": family._id, "n": family._name, "d": family._description, "k": family._kind})

    def metric_new(self, family, labels, buckets=None):
        mid = self._id()
        self._metric_call({"t": "mnew", "f": family._id, "id": mid, "l": {str(k): str(v) for k, v in labels.items()},
                           "b": None if buckets is None else [float(b) for b in buckets]})
        return mid

    def metric_op(self, mid, op, value):
        send({"t": "mop", "id": mid, "op": op, "v": float(value)})

    def metric_value(self, mid):
        return self._metric_call({"t": "mget", "id": mid})


class _StreamIterator:
    """The responses of a decoupled BLS call; an empty final response ends it, as in Triton."""

    def __init__(self, q):
        self.q = q
        self.ended = False

    def __iter__(self):
        return self

    def __next__(self):
        if self.ended:
            raise StopIteration
        resp, final = self.q.get()
        if final:
            self.ended = True
            if resp is None:
                return pb_utils.InferenceResponse([])
        return resp

    def cancel(self):
        pass


rt = Runtime()
pb_utils._runtime = rt


def on_message(m):
    t = m["t"]
    if t == "free":
        for o in m["o"]:
            arena.release(o)
    elif t == "blsr":
        rt.on_bls_result(m)
    elif t == "mval":
        sink = rt.calls.pop(m["c"], None)
        if sink:
            sink(m)
    elif t == "cancel":
        r = rt.requests.get((m["id"], m["i"]))
        if r is not None:
            r._cancelled.set()


def load_model_class():
    here = os.path.dirname(os.path.abspath(model_path))
    if here not in sys.path:
        sys.path.append(here)  # as Triton's stub: modules beside model.py import
    spec = importlib.util.spec_from_file_location("model", model_path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["model"] = module
    spec.loader.exec_module(module)
    cls = getattr(module, "TritonPythonModel", None)
    if cls is None:
        raise pb_utils.TritonModelException("'%s' defines no class TritonPythonModel" % model_path)
    return cls


def run(value):
    if asyncio.iscoroutine(value):
        return rt.loop.run_until_complete(value)
    return value


def execute(model, m, decoupled, direct=None):
    """Runs one exec message: from the server (tensors in the shared regions) or from a direct connection (inline)."""
    ident = m["id"]
    inline = direct and Inline(m["_raw"])
    requests = []
    for i, r in enumerate(m["reqs"]):
        inputs = inline.get(r["in"]) if inline else get_tensors(r["in"])
        req = pb_utils.InferenceRequest(inputs=inputs, requested_output_names=r["out"], request_id=r.get("id", ""),
                                        correlation_id=r.get("corr", 0), flags=r.get("flags", 0), parameters=r.get("p"),
                                        model_name=model_name, model_version=model_version)
        key = (direct.no, ident, i) if direct else (ident, i)
        rt.requests[key] = req
        if r.get("cancelled") or (direct and direct.cancelled_now(ident)):
            req._cancelled.set()
        if decoupled:
            req._sender = pb_utils.InferenceResponseSender(rt, [ident, i])
            req._sender._request = req
        requests.append(req)
    try:
        responses = run(model.execute(requests))
    except Exception as e:
        traceback.print_exc()
        err = error_of(e)
        if not isinstance(e, pb_utils.TritonError):
            err["m"] = "Failed to process the request(s) for model instance '%s', message: %s" % (instance_name, err["m"])
        return {"t": "done", "id": ident, "err": err}
    finally:
        if not decoupled:
            for i in range(len(requests)):
                rt.requests.pop((direct.no, ident, i) if direct else (ident, i), None)
    if decoupled:
        if responses is not None:
            return {"t": "done", "id": ident, "err": {"m": "Python model '%s' is using the decoupled mode and the execute function must return None." % model_name, "c": "INTERNAL"}}
        return {"t": "done", "id": ident}
    if not isinstance(responses, list) or len(responses) != len(requests):
        got = len(responses) if isinstance(responses, list) else 0
        return {"t": "done", "id": ident, "err": {"m": "Number of InferenceResponse objects do not match number of InferenceRequest objects. InferenceRequest(s) size is:%d, and InferenceResponse(s) size is:%d" % (len(requests), got), "c": "INTERNAL"}}
    put = inline.put if inline else put_tensors
    done = {"t": "done", "id": ident, "resps": [response_msg(r, put) for r in responses]}
    if inline:
        done["_out"] = bytes(inline.out)
    return done


class Direct:
    """One frontend worker thread's connection to this instance: executes arrive with their
    tensors inline and are answered the same way, queued with the server's in arrival order.
    A frame is two little-endian uint32 (JSON length, bytes length), the JSON, the bytes."""

    def __init__(self, conn, no):
        self.conn = conn
        self.no = no
        self.lock = threading.Lock()
        self.live = set()  # ids received and not answered yet
        self.cancelled = set()  # of those, the ones the worker cancelled
        self.closed = False  # the worker closed the connection: nobody waits for its answers

    def send(self, msg, raw=b""):
        body = json.dumps(msg, separators=(",", ":")).encode("utf-8")
        try:
            with self.lock:
                self.conn.sendall(struct.pack("<II", len(body), len(raw)) + body + raw)
        except OSError:
            pass  # the worker thread is gone: nobody waits for the answer

    def cancelled_now(self, ident):
        with self.lock:
            return ident in self.cancelled

    def read(self):
        f = self.conn.makefile("rb")
        try:
            while True:
                head = f.read(8)
                if len(head) < 8:
                    break
                n, r = struct.unpack("<II", head)
                if n > 64 << 20 or r > region_size:
                    break
                m = json.loads(f.read(n))
                raw = f.read(r) if r else b""
                if len(raw) < r:
                    break
                if m.get("t") == "exec":
                    m["_direct"] = self
                    m["_raw"] = raw
                    m["_at"] = time.monotonic_ns()
                    with self.lock:
                        self.live.add(m["id"])
                    work.put(m)
                elif m.get("t") == "cancel":
                    with self.lock:
                        if m["id"] in self.live:
                            self.cancelled.add(m["id"])
                    req = rt.requests.get((self.no, m["id"], 0))
                    if req is not None:
                        req._cancelled.set()
        except Exception:
            traceback.print_exc()
        finally:
            self.closed = True
            try:
                self.conn.close()
            except OSError:
                pass

    def answer(self, model, m):
        ident = m["id"]
        waited = time.monotonic_ns() - m["_at"]
        if self.closed:
            return  # the worker has answered it already (it dropped the connection): it is not run
        if self.cancelled_now(ident):
            reply = {"t": "cancelled", "id": ident}
        else:
            try:
                reply = execute(model, m, False, self)
            except Exception as e:
                reply = {"t": "done", "id": ident, "err": error_of(e)}
            reply["w"] = waited
        raw = reply.pop("_out", b"")
        with self.lock:
            self.live.discard(ident)
            self.cancelled.discard(ident)
        self.send(reply, raw)


def serve_direct(path):
    """Listens on the server's socket for its frontend worker threads (bound before the model is initialized)."""
    import socket
    try:
        os.unlink(path)  # a stub that ended before this one left it
    except OSError:
        pass
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(path)
    srv.listen(64)

    def accept():
        no = 0
        while True:
            try:
                conn, _ = srv.accept()
            except OSError:
                return
            no += 1
            threading.Thread(target=Direct(conn, no).read, daemon=True).start()
    threading.Thread(target=accept, daemon=True).start()


instance_name = ""
model_name = ""
model_version = -1


def main():
    global instance_name, model_name, model_version
    asyncio.set_event_loop(rt.loop)
    if socket_path:
        try:
            serve_direct(socket_path)
        except OSError as e:  # the frontend workers then send through the server's main thread
            print("python stub: cannot listen on %s: %s" % (socket_path, e), file=sys.stderr)
    model = None
    decoupled = False
    while True:
        m = work.get()
        t = m["t"]
        if t == "eof":
            break
        if t == "auto":
            try:
                cls = load_model_class()
                cfg = pb_utils.ModelConfig(m["config"])
                if hasattr(cls, "auto_complete_config"):
                    cfg = cls.auto_complete_config(cfg)
                send({"t": "config", "config": cfg.as_dict()})
            except Exception as e:
                send({"t": "init_err", "m": "%s: %s" % (type(e).__name__, e), "tb": traceback.format_exc()})
        elif t == "init":
            instance_name = m["args"]["model_instance_name"]
            model_name = m["args"]["model_name"]
            model_version = int(m["args"]["model_version"])
            decoupled = m["decoupled"]
            try:
                model = load_model_class()()
                if hasattr(model, "initialize"):
                    run(model.initialize(m["args"]))
                send({"t": "ready"})
            except Exception as e:
                send({"t": "init_err", "m": "%s: %s" % (type(e).__name__, e), "tb": traceback.format_exc()})
        elif t == "exec":
            if "_direct" in m:
                m["_direct"].answer(model, m)
            else:
                send(execute(model, m, decoupled))
        elif t == "fini":
            try:
                if model is not None and hasattr(model, "finalize"):
                    run(model.finalize())
            except Exception:
                traceback.print_exc()
            send({"t": "fini_done"})
            break


main()
`;
