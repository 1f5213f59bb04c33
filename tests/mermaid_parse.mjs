// Parse mermaid texts with the real mermaid parser under node (tests/test_mermaid_parse.py).
// stdin: a JSON list of texts; stdout: a JSON list, "ok" or the parser's error, one per text.
// Run with the folder holding node_modules/mermaid as the working directory (node -e resolves
// bare imports from there); nothing is installed here.
import { readFileSync } from "node:fs";

const purify = (await import("dompurify")).default;
// no DOM under node: the sanitiser's hooks matter when rendering, not when parsing
for (const name of ["addHook", "removeHook", "removeHooks", "removeAllHooks", "setConfig", "clearConfig"]) {
  if (typeof purify[name] !== "function") purify[name] = () => {};
}
if (typeof purify.sanitize !== "function") purify.sanitize = (text) => text;
const mermaid = (await import("mermaid")).default;
const results = [];
for (const text of JSON.parse(readFileSync(0, "utf8"))) {
  try {
    await mermaid.parse(text);
    results.push("ok");
  } catch (error) {
    results.push(String(error.message || error).split("\n").slice(0, 4).join(" | "));
  }
}
console.log(JSON.stringify(results));
