/**
 * proto/model_config.proto is Triton's schema: every message, enum, field name, field
 * number, type and oneof of triton-inference-server/common protobuf/model_config.proto
 * (read in 2026; ModelEnsembling.max_inflight_requests is its newest field) is pinned
 * below, and the embedded copy the server parses is the file itself.
 */
import { describe, it, expect } from "vitest";
import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import protobuf from "protobufjs";
import { modelConfigSchema, modelConfigType, integerBounds, fieldKind, type MessageType, type EnumType } from "../../../src/model-config/schema.ts";
import { MODEL_CONFIG_DESCRIPTOR } from "../../../src/model-config/model-config-descriptor.generated.ts";
import { MODEL_CONFIG_PROTO } from "../../../src/model-config/model-config-proto.generated.ts";

const root = resolve(import.meta.dirname, "../../..");

/** "<message>": "<field>=<number>:<type> ...", "<enum>": "<NAME>=<value> ...", plus each oneof's members. */
const TRITON_SCHEMA: Record<string, string> = {
  "inference.DataType":
    "TYPE_INVALID=0 TYPE_BOOL=1 TYPE_UINT8=2 TYPE_UINT16=3 TYPE_UINT32=4 TYPE_UINT64=5 TYPE_INT8=6 TYPE_INT16=7 TYPE_INT32=8 TYPE_INT64=9 TYPE_FP16=10 TYPE_FP32=11 TYPE_FP64=12 TYPE_STRING=13 TYPE_BF16=14",
  "inference.ModelRateLimiter": "resources=1:repeated_Resource priority=2:uint32",
  "inference.ModelRateLimiter.Resource": "name=1:string global=2:bool count=3:uint32",
  "inference.ModelInstanceGroup":
    "name=1:string kind=4:Kind count=2:int32 rate_limiter=6:ModelRateLimiter gpus=3:repeated_int32 secondary_devices=8:repeated_SecondaryDevice profile=5:repeated_string passive=7:bool host_policy=9:string",
  "inference.ModelInstanceGroup.Kind": "KIND_AUTO=0 KIND_GPU=1 KIND_CPU=2 KIND_MODEL=3",
  "inference.ModelInstanceGroup.SecondaryDevice": "kind=1:SecondaryDeviceKind device_id=2:int64",
  "inference.ModelInstanceGroup.SecondaryDevice.SecondaryDeviceKind": "KIND_NVDLA=0",
  "inference.ModelTensorReshape": "shape=1:repeated_int64",
  "inference.ModelInput":
    "name=1:string data_type=2:DataType format=3:Format dims=4:repeated_int64 reshape=5:ModelTensorReshape is_shape_tensor=6:bool allow_ragged_batch=7:bool optional=8:bool is_non_linear_format_io=9:bool",
  "inference.ModelInput.Format": "FORMAT_NONE=0 FORMAT_NHWC=1 FORMAT_NCHW=2",
  "inference.ModelOutput":
    "name=1:string data_type=2:DataType dims=3:repeated_int64 reshape=5:ModelTensorReshape label_filename=4:string is_shape_tensor=6:bool is_non_linear_format_io=7:bool",
  "inference.BatchInput": "kind=1:Kind target_name=2:repeated_string data_type=3:DataType source_input=4:repeated_string",
  "inference.BatchInput.Kind":
    "BATCH_ELEMENT_COUNT=0 BATCH_ACCUMULATED_ELEMENT_COUNT=1 BATCH_ACCUMULATED_ELEMENT_COUNT_WITH_ZERO=2 BATCH_MAX_ELEMENT_COUNT_AS_SHAPE=3 BATCH_ITEM_SHAPE=4 BATCH_ITEM_SHAPE_FLATTEN=5",
  "inference.BatchOutput": "target_name=1:repeated_string kind=2:Kind source_input=3:repeated_string",
  "inference.BatchOutput.Kind": "BATCH_SCATTER_WITH_INPUT_SHAPE=0",
  "inference.ModelVersionPolicy": "latest=1:Latest all=2:All specific=3:Specific",
  "inference.ModelVersionPolicy oneof policy_choice": "latest all specific",
  "inference.ModelVersionPolicy.Latest": "num_versions=1:uint32",
  "inference.ModelVersionPolicy.All": "",
  "inference.ModelVersionPolicy.Specific": "versions=1:repeated_int64",
  "inference.ModelOptimizationPolicy":
    "graph=1:Graph priority=2:ModelPriority cuda=3:Cuda execution_accelerators=4:ExecutionAccelerators input_pinned_memory=5:PinnedMemoryBuffer output_pinned_memory=6:PinnedMemoryBuffer gather_kernel_buffer_threshold=7:uint32 eager_batching=8:bool",
  "inference.ModelOptimizationPolicy.Graph": "level=1:int32",
  "inference.ModelOptimizationPolicy.ModelPriority": "PRIORITY_DEFAULT=0 PRIORITY_MAX=1 PRIORITY_MIN=2",
  "inference.ModelOptimizationPolicy.Cuda": "graphs=1:bool busy_wait_events=2:bool graph_spec=3:repeated_GraphSpec output_copy_stream=4:bool",
  "inference.ModelOptimizationPolicy.Cuda.GraphSpec": "batch_size=1:int32 input=2:map<string,Shape> graph_lower_bound=3:LowerBound",
  "inference.ModelOptimizationPolicy.Cuda.GraphSpec.Shape": "dim=1:repeated_int64",
  "inference.ModelOptimizationPolicy.Cuda.GraphSpec.LowerBound": "batch_size=1:int32 input=2:map<string,Shape>",
  "inference.ModelOptimizationPolicy.ExecutionAccelerators":
    "gpu_execution_accelerator=1:repeated_Accelerator cpu_execution_accelerator=2:repeated_Accelerator",
  "inference.ModelOptimizationPolicy.ExecutionAccelerators.Accelerator": "name=1:string parameters=2:map<string,string>",
  "inference.ModelOptimizationPolicy.PinnedMemoryBuffer": "enable=1:bool",
  "inference.ModelQueuePolicy": "timeout_action=1:TimeoutAction default_timeout_microseconds=2:uint64 allow_timeout_override=3:bool max_queue_size=4:uint32",
  "inference.ModelQueuePolicy.TimeoutAction": "REJECT=0 DELAY=1",
  "inference.ModelDynamicBatching":
    "preferred_batch_size=1:repeated_int32 max_queue_delay_microseconds=2:uint64 preserve_ordering=3:bool priority_levels=4:uint64 default_priority_level=5:uint64 default_queue_policy=6:ModelQueuePolicy priority_queue_policy=7:map<uint64,ModelQueuePolicy>",
  "inference.ModelSequenceBatching":
    "direct=3:StrategyDirect oldest=4:StrategyOldest max_sequence_idle_microseconds=1:uint64 control_input=2:repeated_ControlInput state=5:repeated_State iterative_sequence=6:bool",
  "inference.ModelSequenceBatching oneof strategy_choice": "direct oldest",
  "inference.ModelSequenceBatching.Control":
    "kind=1:Kind int32_false_true=2:repeated_int32 fp32_false_true=3:repeated_float bool_false_true=5:repeated_bool data_type=4:DataType",
  "inference.ModelSequenceBatching.Control.Kind": "CONTROL_SEQUENCE_START=0 CONTROL_SEQUENCE_READY=1 CONTROL_SEQUENCE_END=2 CONTROL_SEQUENCE_CORRID=3",
  "inference.ModelSequenceBatching.ControlInput": "name=1:string control=2:repeated_Control",
  "inference.ModelSequenceBatching.InitialState": "data_type=1:DataType dims=2:repeated_int64 zero_data=3:bool data_file=4:string name=5:string",
  "inference.ModelSequenceBatching.InitialState oneof state_data": "zero_data data_file",
  "inference.ModelSequenceBatching.State":
    "input_name=1:string output_name=2:string data_type=3:DataType dims=4:repeated_int64 initial_state=5:repeated_InitialState use_same_buffer_for_input_output=6:bool use_growable_memory=7:bool",
  "inference.ModelSequenceBatching.StrategyDirect": "max_queue_delay_microseconds=1:uint64 minimum_slot_utilization=2:float",
  "inference.ModelSequenceBatching.StrategyOldest":
    "max_candidate_sequences=1:int32 preferred_batch_size=2:repeated_int32 max_queue_delay_microseconds=3:uint64 preserve_ordering=4:bool",
  "inference.ModelEnsembling": "step=1:repeated_Step max_inflight_requests=2:uint32",
  "inference.ModelEnsembling.Step":
    "model_name=1:string model_version=2:int64 input_map=3:map<string,string> output_map=4:map<string,string> model_namespace=5:string",
  "inference.ModelParameter": "string_value=1:string",
  "inference.ModelWarmup": "name=1:string batch_size=2:uint32 inputs=3:map<string,Input> count=4:uint32",
  "inference.ModelWarmup.Input": "data_type=1:DataType dims=2:repeated_int64 zero_data=3:bool random_data=4:bool input_data_file=5:string",
  "inference.ModelWarmup.Input oneof input_data_type": "zero_data random_data input_data_file",
  "inference.ModelOperations": "op_library_filename=1:repeated_string",
  "inference.ModelTransactionPolicy": "decoupled=1:bool",
  "inference.ModelRepositoryAgents": "agents=1:repeated_Agent",
  "inference.ModelRepositoryAgents.Agent": "name=1:string parameters=2:map<string,string>",
  "inference.ModelResponseCache": "enable=1:bool",
  "inference.ModelMetrics": "metric_control=1:repeated_MetricControl",
  "inference.ModelMetrics.MetricControl": "metric_identifier=1:MetricIdentifier histogram_options=2:HistogramOptions",
  "inference.ModelMetrics.MetricControl oneof metric_options": "histogram_options",
  "inference.ModelMetrics.MetricControl.MetricIdentifier": "family=1:string",
  "inference.ModelMetrics.MetricControl.HistogramOptions": "buckets=1:repeated_double",
  "inference.ModelConfig":
    "name=1:string platform=2:string backend=17:string runtime=25:string version_policy=3:ModelVersionPolicy max_batch_size=4:int32 input=5:repeated_ModelInput output=6:repeated_ModelOutput batch_input=20:repeated_BatchInput batch_output=21:repeated_BatchOutput optimization=12:ModelOptimizationPolicy dynamic_batching=11:ModelDynamicBatching sequence_batching=13:ModelSequenceBatching ensemble_scheduling=15:ModelEnsembling instance_group=7:repeated_ModelInstanceGroup default_model_filename=8:string cc_model_filenames=9:map<string,string> metric_tags=10:map<string,string> parameters=14:map<string,ModelParameter> model_warmup=16:repeated_ModelWarmup model_operations=18:ModelOperations model_transaction_policy=19:ModelTransactionPolicy model_repository_agents=23:ModelRepositoryAgents response_cache=24:ModelResponseCache model_metrics=26:ModelMetrics",
  "inference.ModelConfig oneof scheduling_choice": "dynamic_batching sequence_batching ensemble_scheduling",
};

/** The same description, read from the schema the server uses. */
function describeSchema(): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (items: readonly (MessageType | EnumType)[]) => {
    for (const obj of items) {
      if (obj.kind === "message") {
        const fields = obj.fieldsArray.map((f) => {
          const type = f.map ? `map<${f.keyType},${f.type}>` : `${f.repeated ? "repeated_" : ""}${f.type}`;
          return `${f.name}=${f.id}:${type}`;
        });
        out[obj.fullName] = fields.join(" ");
        for (const o of obj.oneofsArray) out[`${obj.fullName} oneof ${o.name}`] = o.oneof.join(" ");
        walk(obj.nested);
      } else {
        out[obj.fullName] = Object.entries(obj.values)
          .map(([k, v]) => `${k}=${v}`)
          .join(" ");
      }
    }
  };
  walk(modelConfigSchema().top);
  return out;
}

/** The same description from protobufjs's reflection of the descriptor, with each field's resolved type. */
function describeProtobufjs(): { described: Record<string, string>; resolved: Record<string, string>; names: Record<string, Record<number, string>> } {
  const described: Record<string, string> = {};
  const resolved: Record<string, string> = {};
  const names: Record<string, Record<number, string>> = {};
  const walk = (ns: protobuf.NamespaceBase) => {
    for (const obj of ns.nestedArray) {
      const name = obj.fullName.slice(1);
      if (obj instanceof protobuf.Type) {
        const fields = obj.fieldsArray.map((f) => {
          const type = f.map ? `map<${(f as unknown as protobuf.MapField).keyType},${f.type}>` : `${f.repeated ? "repeated_" : ""}${f.type}`;
          if (f.resolvedType) resolved[`${name}.${f.name}`] = f.resolvedType.fullName.slice(1);
          return `${f.name}=${f.id}:${type}`;
        });
        described[name] = fields.join(" ");
        for (const o of obj.oneofsArray) described[`${name} oneof ${o.name}`] = o.oneof.join(" ");
        walk(obj);
      } else if (obj instanceof protobuf.Enum) {
        described[name] = Object.entries(obj.values)
          .map(([k, v]) => `${k}=${v}`)
          .join(" ");
        names[name] = { ...obj.valuesById };
      } else if (obj instanceof protobuf.Namespace) {
        walk(obj);
      }
    }
  };
  const root = protobuf.Root.fromJSON(MODEL_CONFIG_DESCRIPTOR);
  root.resolveAll();
  walk(root);
  return { described, resolved, names };
}

describe("model_config.proto", () => {
  it("has Triton's package, messages, enums, field names, numbers, types and oneofs, in Triton's order", () => {
    const ours = describeSchema();
    expect(ours).toEqual(TRITON_SCHEMA);
    expect(Object.keys(ours)).toEqual(Object.keys(TRITON_SCHEMA));
    expect(modelConfigType().fullName).toBe("inference.ModelConfig");
  });

  it("resolves every field's message or enum type as protobufjs does, and agrees with its reflection (#30: ours replaced it)", () => {
    const { described, resolved, names } = describeProtobufjs();
    expect(describeSchema()).toEqual(described);
    const ours: Record<string, string> = {};
    const ourNames: Record<string, Record<number, string>> = {};
    for (const t of modelConfigSchema().byName.values()) {
      if (t.kind === "enum") ourNames[t.fullName] = { ...t.valuesById };
      if (t.kind !== "message") continue;
      for (const f of t.fieldsArray) {
        if (f.resolvedType) ours[`${t.fullName}.${f.name}`] = f.resolvedType.fullName;
        if (f.resolvedType) expect(fieldKind(f)).toBe(f.resolvedType.kind);
        expect(f.partOf?.oneof.includes(f.name) ?? true).toBe(true);
      }
    }
    expect(ours).toEqual(resolved);
    expect(ourNames).toEqual(names);
    // Scoping: "Kind" means each message's own nested enum, "Shape" the GraphSpec's, "DataType" the package's.
    expect(ours["inference.ModelInstanceGroup.kind"]).toBe("inference.ModelInstanceGroup.Kind");
    expect(ours["inference.BatchInput.kind"]).toBe("inference.BatchInput.Kind");
    expect(ours["inference.ModelOptimizationPolicy.Cuda.GraphSpec.LowerBound.input"]).toBe("inference.ModelOptimizationPolicy.Cuda.GraphSpec.Shape");
    expect(ours["inference.ModelInput.data_type"]).toBe("inference.DataType");
    // Own properties only: an Object.prototype name is no field.
    expect(Object.hasOwn(modelConfigType().fields, "constructor")).toBe(false);
  });

  it("is embedded as generated text identical to the file (regenerate with `npx bun scripts/gen-proto.ts`)", () => {
    expect(MODEL_CONFIG_PROTO).toBe(readFileSync(join(root, "proto/model_config.proto"), "utf8"));
    const generated = readFileSync(join(root, "src/model-config/model-config-proto.generated.ts"), "utf8");
    expect(generated.startsWith("// Generated by scripts/gen-proto.ts from proto/model_config.proto; do not edit.\n")).toBe(true);
  });
});

describe("integerBounds", () => {
  it("gives 32-bit types their own range and 64-bit types the exact range of a JS number", () => {
    expect(integerBounds("int32")).toEqual([-2147483648, 2147483647]);
    expect(integerBounds("uint32")).toEqual([0, 4294967295]);
    expect(integerBounds("int64")).toEqual([-Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER]);
    expect(integerBounds("uint64")).toEqual([0, Number.MAX_SAFE_INTEGER]);
  });
});
