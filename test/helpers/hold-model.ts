/**
 * A TypeScript model's source that holds the thread it runs on: its execute writes `held`,
 * then spins until `release` exists (20 s at most) and echoes A as SUM. Given
 * execution_thread "main", it holds the main thread's event loop: what is answered
 * meanwhile was answered without it (the frontend worker tests, #30).
 */
export const holdModel = (held: string, release: string) => `
import { existsSync, writeFileSync } from "node:fs";
export default class Hold {
  execute(requests) {
    writeFileSync(${JSON.stringify(held)}, "held");
    const until = Date.now() + 20000;
    while (!existsSync(${JSON.stringify(release)}) && Date.now() < until) {}
    return requests.map((r) => ({ outputs: [{ name: "SUM", datatype: "INT32", shape: [16], data: r.input("A").data }] }));
  }
}
`;
