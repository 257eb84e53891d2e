// Drives the TypeScript intake client (clients/typescript, built to dist/) against a real intake and
// prints one JSON line per send: {"ok": Accepted, "endpoint"} or {"error": name, "status", "code", "fields"}.
//   node typescript_client.mjs '<json: {endpoints, keyId, secret, timeoutMs, policy, sends: [{award, waitAppliedMs}]}>'
import { IntakeClient } from "../../../clients/typescript/dist/index.js";

const plan = JSON.parse(process.argv[2]);
const client = new IntakeClient(plan);
for (const send of plan.sends) {
  try {
    const options = send.waitAppliedMs === undefined ? {} : { waitAppliedMs: send.waitAppliedMs };
    const accepted = await client.send(send.award, options);
    console.log(JSON.stringify({ ok: accepted, endpoint: client.currentEndpoint }));
  } catch (err) {
    console.log(JSON.stringify({ error: err.name, status: err.status, code: err.code, fields: err.fields, attempts: err.attempts }));
  }
}
