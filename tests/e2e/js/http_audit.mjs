// The GraphQL over HTTP audit suite (graphql-http's serverAudits) against a running gateway:
//   node http_audit.mjs URL
// prints one JSON line per audit: {"id", "name", "status": "ok" | "warn" | "error", "reason"}.
import { serverAudits } from "graphql-http";

const url = process.argv[2];
if (!url) {
  console.error("usage: node http_audit.mjs URL");
  process.exit(2);
}
for (const audit of serverAudits({ url, fetchFn: fetch })) {
  const result = await audit.fn();
  const line = { id: audit.id, name: audit.name, status: result.status };
  if (result.status !== "ok") line.reason = result.reason;
  console.log(JSON.stringify(line));
}
