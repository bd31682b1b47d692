/**
 * A POST through node:http whose answer is read as text, on a connection of its own
 * (agent false) or an agent's (keep-alive: one frontend worker thread serves them all);
 * `cancel` destroys the request, as a client that goes away (S-20).
 */
import { request as httpRequest, type Agent } from "node:http";

export type TextAnswer = { status: number; text: string } | { error: string };

export function postText(url: string, body: string, agent: Agent | false = false): { result: Promise<TextAnswer>; cancel(): void } {
  let cancel = () => {};
  const result = new Promise<TextAnswer>((resolve) => {
    const req = httpRequest(url, { method: "POST", agent }, (res) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (c) => (text += c));
      res.on("end", () => resolve({ status: res.statusCode!, text }));
    });
    req.on("error", (e: NodeJS.ErrnoException) => resolve({ error: e.code ?? e.message }));
    req.end(body);
    cancel = () => req.destroy();
  });
  return { result, cancel: () => cancel() };
}

/** An answer as one line: "<status> <body>", or "client: <error code>". */
export const answerText = (a: TextAnswer): string => ("error" in a ? `client: ${a.error}` : `${a.status} ${a.text}`);
