// Validates every object in the YAML files given (deploy/kubernetes*/**.yaml) against the
// official schemas, strictly (a field the schema does not declare is an error, as under
// kubectl apply's strict field validation); prints each error and exits 1 when any is invalid.
import fs from "node:fs";
import { parseAllDocuments } from "yaml";
import { schemaErrors } from "./schemas.mjs";

let failed = 0, checked = 0;
for (const file of process.argv.slice(2)) {
  for (const doc of parseAllDocuments(fs.readFileSync(file, "utf8"))) {
    // Not YAML, or a key given twice (kubectl would take one silently): refused as invalid.
    if (doc.errors.length) {
      checked++, failed++;
      console.log(`${file}: ${doc.errors.map((e) => e.message.split("\n")[0]).join("; ")}`);
      continue;
    }
    const object = doc.toJSON();
    if (!object) continue;
    checked++;
    const errors = schemaErrors(object, undefined, { strict: true });
    if (errors) { failed++; console.log(`${file}: ${object.kind} ${object.metadata?.name}: ${errors}`); }
  }
}
console.log(`${checked} objects checked, ${failed} invalid`);
if (checked === 0 || failed > 0) process.exit(1);
