/**
 * @module What a `typescript` model's execute is given and how its answers are checked,
 * wherever the request came from: the main thread's instance (backend.ts) and a frontend
 * worker that reaches a worker-thread instance directly (direct.ts, #30) build the same
 * request fields and judge the responses with the same words.
 */
import { ServerError, internal } from "../../core/errors.ts";
import { modelParameters } from "../../core/request.ts";
import type { PreparedRequest } from "../../core/request-validate.ts";
import type { ModelConfig, ModelOutput } from "../../core/model-config-types.ts";
import type { Tensor } from "../../core/tensor.ts";
import type { RequestOutcome } from "../backend.ts";
import { responseParameters } from "../response-parameters.ts";
import { TRITON_CODES, type InferenceRequest, type InferenceResponse, type Tensor as ModelTensor } from "./api.ts";
import { checkOutput, fromModelTensor, modelError, toModelTensor } from "./tensors.ts";

/** The plain-data part of the request a model's execute gets (what crosses to a worker as is). */
export type RequestFields = Pick<InferenceRequest, "id" | "inputs" | "requestedOutputNames" | "parameters" | "correlationId" | "flags">;

export function requestFields(p: PreparedRequest): RequestFields {
  const inputs = p.inputs.map(toModelTensor);
  const parameters: Record<string, string | number | boolean> = {};
  for (const [k, v] of Object.entries(modelParameters(p.request.parameters))) parameters[k] = typeof v === "bigint" ? Number(v) : v;
  const sid = p.control.sequenceId;
  return {
    id: p.request.id ?? "",
    inputs,
    requestedOutputNames: p.request.outputs?.length ? p.request.outputs.map((o) => o.name) : [],
    parameters,
    correlationId: sid === undefined ? undefined : typeof sid === "number" ? BigInt(sid) : sid,
    flags: { sequenceStart: p.control.sequenceStart, sequenceEnd: p.control.sequenceEnd },
  };
}

/** Judges one model's responses against its config. */
export class OutcomeChecker {
  readonly #model: string;
  readonly #outputs: Map<string, ModelOutput>;
  readonly #batched: boolean;

  constructor(model: string, config: ModelConfig) {
    this.#model = model;
    this.#outputs = new Map((config.output ?? []).map((o) => [o.name!, o]));
    this.#batched = (config.max_batch_size ?? 0) > 0;
  }

  /** What execute threw (or its worker posted as thrown), as the error of every request. */
  thrown(err: unknown): ServerError {
    return modelError(this.#model, err, TRITON_CODES);
  }

  /** The outcome of each request from what execute returned. */
  outcomes(requests: readonly PreparedRequest[], responses: unknown): RequestOutcome[] {
    if (!Array.isArray(responses) || responses.length !== requests.length) {
      const got = Array.isArray(responses) ? `${responses.length} responses` : `${typeof responses} instead of an array of responses`;
      const error = internal(`model '${this.#model}' execute() returned ${got} for ${requests.length} request(s)`);
      return requests.map(() => ({ error }));
    }
    return requests.map((p, i) => this.outcome(p, responses[i] as InferenceResponse | undefined));
  }

  outcome(p: PreparedRequest, r: InferenceResponse | undefined): RequestOutcome {
    const model = this.#model;
    if (!r || typeof r !== "object") return { error: internal(`model '${model}' returned no response object for a request`) };
    if ("error" in r && r.error !== undefined) {
      const e = r.error;
      return { error: this.thrown(typeof e === "string" ? new Error(e) : Object.assign(new Error(e.message), { code: e.code })) };
    }
    const list = (r as { outputs?: ModelTensor[] }).outputs;
    if (!Array.isArray(list)) return { error: internal(`model '${model}' returned a response without 'outputs'`) };
    try {
      const parameters = responseParameters(model, (r as { parameters?: unknown }).parameters);
      const wanted = new Set(p.outputNames);
      const outputs: Tensor[] = [];
      for (const mt of list) {
        let t: Tensor;
        try {
          t = fromModelTensor(mt, "output");
        } catch (err) {
          throw internal(`model '${model}' returned a bad ${(err as Error).message}`);
        }
        const spec = this.#outputs.get(t.name);
        // An implicit-state output the sequence batcher asked for is not in the config's outputs.
        if (spec || !wanted.has(t.name)) checkOutput(model, t, spec, this.#batched ? p.batchSize : undefined);
        if (wanted.size === 0 || wanted.has(t.name)) outputs.push(t);
      }
      const asked = p.request.outputs?.map((o) => o.name) ?? [];
      for (const n of asked) if (!outputs.some((t) => t.name === n)) throw internal(`model '${model}' returned no output '${n}', which the request asked for`);
      // Outputs in the order the request expects them.
      outputs.sort((a, b) => p.outputNames.indexOf(a.name) - p.outputNames.indexOf(b.name));
      return parameters ? { outputs, parameters } : { outputs };
    } catch (err) {
      return { error: ServerError.from(err) };
    }
  }
}
