"""
A minimal MLServer custom runtime around onnxruntime, as MLServer's docs show for custom
models (an MLModel subclass with load and predict), for scripts/bench-peers.ts. The model
file is the model-settings.json's parameters.uri; ONNX Runtime gets one intra-op thread,
as the server is pinned to one core.
"""
import onnxruntime as ort
from mlserver import MLModel
from mlserver.codecs import NumpyCodec
from mlserver.types import InferenceRequest, InferenceResponse


class OnnxRuntimeModel(MLModel):
    async def load(self) -> bool:
        options = ort.SessionOptions()
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        self._session = ort.InferenceSession(self.settings.parameters.uri, options, providers=["CPUExecutionProvider"])
        self._outputs = [o.name for o in self._session.get_outputs()]
        return True

    async def predict(self, payload: InferenceRequest) -> InferenceResponse:
        feeds = {i.name: NumpyCodec.decode_input(i) for i in payload.inputs}
        results = self._session.run(self._outputs, feeds)
        return InferenceResponse(
            model_name=self.name,
            outputs=[NumpyCodec.encode_output(name, value) for name, value in zip(self._outputs, results)],
        )
