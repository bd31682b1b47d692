/**
 * tiny_lm's tokenizer files are the real Hugging Face formats (#35 item 2): Hugging Face's
 * own Rust `tokenizers` (the PyPI wheel, pinned) loads the generated tokenizer.json and
 * splits text into the same ids as @huggingface/tokenizers, which the model uses, and
 * decodes them back the same; the chat template renders the same under jinja2 set up as
 * transformers' apply_chat_template sets it up as under @huggingface/jinja.
 */
import { describe, it, expect, beforeAll, afterAll } from "vitest";
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { Tokenizer } from "@huggingface/tokenizers";
import { Template } from "@huggingface/jinja";
import { venvPython } from "../../helpers/python-venv.ts";
import { makeRepository } from "../../helpers/repo.ts";
import { CORPUS } from "../../../scripts/lib/tiny-lm.ts";

let repo: ReturnType<typeof makeRepository>;
let python: string;

beforeAll(() => {
  repo = makeRepository(["tiny_lm"]);
  python = venvPython({ name: "hf-tokenizers", packages: ["tokenizers==0.22.1", "jinja2==3.1.6"], imports: ["tokenizers", "jinja2"] });
}, 900_000);
afterAll(() => repo?.remove());

const SCRIPT = `
import json, sys
from tokenizers import Tokenizer
from jinja2.sandbox import ImmutableSandboxedEnvironment
folder, texts, messages = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3])
tok = Tokenizer.from_file(folder + "/tokenizer.json")
config = json.load(open(folder + "/tokenizer_config.json"))
ids = [tok.encode(t, add_special_tokens=False).ids for t in texts]
env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
chat = env.from_string(config["chat_template"]).render(messages=messages, add_generation_prompt=True)
print(json.dumps({"ids": ids, "decoded": [tok.decode(i, skip_special_tokens=False) for i in ids], "vocab": tok.get_vocab_size(), "chat": chat}))
`;

describe("tiny_lm's tokenizer.json and chat template under Hugging Face's Python libraries", () => {
  it("the same ids, text and chat prompt as the JavaScript packages the model and a frontend use", () => {
    const dir = join(repo.dir, "tiny_lm");
    const texts = [CORPUS, "héllo wörld ✓ 日本", "  two  spaces\tand a tab\n", "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"];
    const messages = [
      { role: "system", content: "Be brief." },
      { role: "user", content: "What is Nereid?" },
    ];
    const r = spawnSync(python, ["-c", SCRIPT, dir, JSON.stringify(texts), JSON.stringify(messages)], { encoding: "utf8", timeout: 120_000 });
    expect(r.status, r.stderr).toBe(0);
    const py = JSON.parse(r.stdout);
    const config = JSON.parse(readFileSync(join(dir, "tokenizer_config.json"), "utf8"));
    const js = new Tokenizer(JSON.parse(readFileSync(join(dir, "tokenizer.json"), "utf8")), config);
    const ids = texts.map((t) => js.encode(t, { add_special_tokens: false }).ids);
    expect(py.ids).toEqual(ids);
    expect(py.decoded).toEqual(texts);
    expect(py.vocab).toBe(379);
    const chat = new Template(config.chat_template).render({ messages, add_generation_prompt: true });
    expect(py.chat).toBe(chat);
    expect(chat).toBe("<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nWhat is Nereid?<|im_end|>\n<|im_start|>assistant\n");
  });
});
