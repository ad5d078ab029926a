// npm run generate -- <document URL or file>, e.g.
// npm run generate -- http://localhost:8080/api/v1/openapi.json
// writes oja.ts: the partner API's types (openapi-typescript), every
// format: decimal member (amounts, rates, percentages) typed string, and
// decimalMembers, the names of those members, for oja-json.ts.
import fs from "node:fs";
import ts from "typescript";
import openapiTS, { astToString } from "openapi-typescript";

const src = process.argv[2];
const doc = JSON.parse(src.startsWith("http") ? await (await fetch(src)).text() : fs.readFileSync(src, "utf8"));
const STRING = ts.factory.createKeywordTypeNode(ts.SyntaxKind.StringKeyword);
const NULL = ts.factory.createLiteralTypeNode(ts.factory.createNull());
const ast = await openapiTS(doc, {
  transform(schema) {
    if (schema.format !== "decimal") return undefined;
    return [schema.type].flat().includes("null") ? ts.factory.createUnionTypeNode([STRING, NULL]) : STRING;
  },
});
const names = new Set();
const isDecimal = (s) => {
  for (let i = 0; s && s.$ref && i < 16; i++) s = doc.components.schemas[s.$ref.split("/").pop()];
  return s && s.format === "decimal";
};
(function walk(v) {
  if (Array.isArray(v)) return v.forEach(walk);
  if (!v || typeof v !== "object") return;
  for (const [k, p] of Object.entries(v.properties ?? {})) if (isDecimal(p)) names.add(k);
  Object.values(v).forEach(walk);
})(doc);
fs.writeFileSync("oja.ts", astToString(ast) +
  `\nexport const decimalMembers: ReadonlySet<string> = new Set(${JSON.stringify([...names].sort())});\n`);
