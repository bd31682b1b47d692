/**
 * Test models for the OpenAI-compatible frontend (#35), written to Triton's OpenAI
 * frontend convention (docs/openai.md): a decoupled TypeScript model that answers with
 * the words of its prompt in reverse order, one response a word when `stream` is true.
 *
 * - `words`: an input per sampling field (Triton's TensorRT-LLM format): `max_tokens`
 *   ends the answer after that many words, `stop_words` before a word that is one of
 *   them, `temperature` given starts the answer with the word `[temperature=<t>]`;
 *   `exclude_input_in_output` false puts the prompt first. Its folder has a
 *   tokenizer.json (one token a whitespace-separated word) and tokenizer_config.json
 *   with the chat template `<s>role: content\n...assistant:`.
 * - `vllm_words`: the same model with one `sampling_parameters` JSON input (Triton's
 *   vLLM format) and the `num_input_tokens`/`num_output_tokens` outputs, which it
 *   reports as ten times the word counts, so that a test can tell them from the
 *   tokenizer's; its chat template is 1/chat_template.jinja (`[role] content ... [assistant]`);
 *   it ends a stream with a flag-only final.
 * - `no_template`: `words` with no tokenizer or chat template.
 *
 * A prompt with the word `forever` answers `tick ` every 5 ms until cancelled (then
 * an error, as a model that honours cancellation does); the prompt `active` answers how
 * many such answers are still running; `utf8` answers "café" with the bytes of "é" split
 * across two responses; `fail` answers `partial`, then fails.
 */
const MODEL = `
const state = (globalThis.__openaiWords ??= { active: 0 });
const text = (r, name) => {
  const t = r.input(name);
  return t ? t.data.map((b) => new TextDecoder().decode(b)) : undefined;
};
const scalar = (r, name) => {
  const t = r.input(name);
  return t ? Number(t.data[0]) : undefined;
};
export default class Words {
  execute(requests) {
    for (const r of requests) {
      const sender = r.getResponseSender();
      const vllm = r.input("sampling_parameters") !== undefined;
      const params = vllm
        ? JSON.parse(text(r, "sampling_parameters")[0])
        : { max_tokens: scalar(r, "max_tokens"), temperature: scalar(r, "temperature"), stop: text(r, "stop_words") };
      const prompt = text(r, "text_input")[0];
      const stream = scalar(r, "stream") === 1;
      const exclude = r.input("exclude_input_in_output") ? scalar(r, "exclude_input_in_output") === 1 : true;
      const words = prompt.split(/\\s+/).filter((w) => w !== "");
      const out = (s, final, counted) => {
        const outputs = [{ name: "text_output", datatype: "BYTES", shape: [1, 1], data: [s] }];
        if (vllm)
          outputs.push(
            { name: "num_input_tokens", datatype: "UINT32", shape: [1], data: [words.length] },
            { name: "num_output_tokens", datatype: "UINT32", shape: [1], data: [counted] },
          );
        sender.send({ outputs }, { final: final && !vllm });
      };
      if (words.includes("forever")) {
        state.active++;
        const tick = () => {
          if (r.isCancelled()) {
            state.active--;
            return sender.send({ error: { message: "stopped: the client cancelled", code: "CANCELLED" } }, { final: true });
          }
          out("tick ", false, 1);
          setTimeout(tick, 5);
        };
        tick();
        continue;
      }
      if (prompt === "utf8") {
        // "é" (C3 A9) split across two responses.
        sender.send({ outputs: [{ name: "text_output", datatype: "BYTES", shape: [1, 1], data: [new Uint8Array([0x63, 0x61, 0x66, 0xc3])] }] });
        sender.send({ outputs: [{ name: "text_output", datatype: "BYTES", shape: [1, 1], data: [new Uint8Array([0xa9])] }] }, { final: true });
        continue;
      }
      if (prompt === "fail") {
        out("partial", false, 1);
        sender.send({ error: { message: "the model failed", code: "INTERNAL" } }, { final: true });
        continue;
      }
      if (prompt === "active") {
        out(String(state.active), true, 1);
        if (vllm) sender.send(undefined, { final: true });
        continue;
      }
      const reply = params.temperature !== undefined && params.temperature !== null ? ["[temperature=" + params.temperature + "]"] : [];
      for (const w of [...words].reverse()) {
        if (params.stop?.includes(w)) break;
        if (params.max_tokens !== undefined && reply.length >= params.max_tokens) break;
        reply.push(w);
      }
      const pieces = reply.map((w, i) => (i === 0 ? w : " " + w));
      if (!exclude) pieces.unshift(prompt + " ");
      if (!stream) out(pieces.join(""), true, reply.length);
      else if (pieces.length === 0) out("", true, 0);
      else pieces.forEach((p, i) => out(p, i === pieces.length - 1, 1));
      if (vllm) sender.send(undefined, { final: true });
    }
  }
}
`;

const io = (dims: string, inputs: string, outputs = "") => `
max_batch_size: 0
model_transaction_policy { decoupled: true }
instance_group [{ count: 1 kind: KIND_CPU }]
input [
  { name: "text_input" data_type: TYPE_STRING dims: ${dims} },
  { name: "stream" data_type: TYPE_BOOL dims: ${dims} },
  { name: "exclude_input_in_output" data_type: TYPE_BOOL dims: ${dims} optional: true }${inputs}
]
output [
  { name: "text_output" data_type: TYPE_STRING dims: [ -1, -1 ] }${outputs}
]
`;

const WORDS_CONFIG = io(
  "[ 1, 1 ]",
  `,
  { name: "max_tokens" data_type: TYPE_INT32 dims: [ 1, 1 ] optional: true },
  { name: "temperature" data_type: TYPE_FP32 dims: [ 1, 1 ] optional: true },
  { name: "stop_words" data_type: TYPE_STRING dims: [ 1, -1 ] optional: true }`,
);

const VLLM_CONFIG = io(
  "[ 1 ]",
  `,
  { name: "sampling_parameters" data_type: TYPE_STRING dims: [ 1 ] },
  { name: "return_num_input_tokens" data_type: TYPE_BOOL dims: [ 1 ] optional: true },
  { name: "return_num_output_tokens" data_type: TYPE_BOOL dims: [ 1 ] optional: true }`,
  `,
  { name: "num_input_tokens" data_type: TYPE_UINT32 dims: [ 1 ] },
  { name: "num_output_tokens" data_type: TYPE_UINT32 dims: [ 1 ] }`,
);

/** A tokenizer.json whose tokens are the whitespace-separated words (all of them [UNK] but `hello`). */
export const WORD_TOKENIZER = JSON.stringify({
  version: "1.0",
  truncation: null,
  padding: null,
  added_tokens: [{ id: 0, content: "[UNK]", single_word: false, lstrip: false, rstrip: false, normalized: false, special: true }],
  normalizer: null,
  pre_tokenizer: { type: "WhitespaceSplit" },
  post_processor: null,
  decoder: null,
  model: { type: "WordPiece", unk_token: "[UNK]", continuing_subword_prefix: "##", max_input_chars_per_word: 100, vocab: { "[UNK]": 0, hello: 1 } },
});

export const WORDS_TEMPLATE =
  "{{ bos_token }}{% for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}{% if add_generation_prompt %}assistant:{% endif %}";
export const VLLM_TEMPLATE = "{% for m in messages %}[{{ m.role }}] {{ m.content }} {% endfor %}[assistant]";

/** Adds `words`, `vllm_words` and `no_template` to a test repository. */
export function addOpenAiModels(repo: { add(path: string, content: string): void }): void {
  repo.add("words/config.pbtxt", `name: "words"\nbackend: "typescript"\n${WORDS_CONFIG}`);
  repo.add("words/1/model.js", MODEL);
  repo.add("words/tokenizer.json", WORD_TOKENIZER);
  repo.add("words/tokenizer_config.json", JSON.stringify({ bos_token: "<s>", eos_token: "</s>", chat_template: WORDS_TEMPLATE }));
  repo.add("vllm_words/config.pbtxt", `name: "vllm_words"\nbackend: "typescript"\n${VLLM_CONFIG}`);
  repo.add("vllm_words/1/model.js", MODEL);
  repo.add("vllm_words/1/chat_template.jinja", VLLM_TEMPLATE);
  repo.add("no_template/config.pbtxt", `name: "no_template"\nbackend: "typescript"\n${WORDS_CONFIG}`);
  repo.add("no_template/1/model.js", MODEL);
}
