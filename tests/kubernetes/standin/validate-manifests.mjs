// Validates every object in the YAML files given (deploy/kubernetes/*.yaml) against the
// official schemas; prints each error and exits 1 when any is invalid.
import fs from "node:fs";
import { parseAllDocuments } from "yaml";
import { schemaErrors } from "./schemas.mjs";

let failed = 0, checked = 0;
for (const file of process.argv.slice(2)) {
  for (const doc of parseAllDocuments(fs.readFileSync(file, "utf8"))) {
    const object = doc.toJSON();
    if (!object) continue;
    checked++;
    const errors = schemaErrors(object);
    if (errors) { failed++; console.log(`${file}: ${object.kind} ${object.metadata?.name}: ${errors}`); }
  }
}
console.log(`${checked} objects checked, ${failed} invalid`);
if (checked === 0 || failed > 0) process.exit(1);
