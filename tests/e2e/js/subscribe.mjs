// A black-box graphql-ws (graphql-transport-ws) client: subscribes to leaderboardUpdates and prints
// each update as one JSON line; exits 0 after COUNT updates, or after one matching ScoreUpdated.
//   node subscribe.mjs <ws-url> <board> <user> <count> [expected-score]
import { createClient } from "graphql-ws";
import WebSocket from "ws";

const [url, board, user, count, expected] = process.argv.slice(2);
const client = createClient({ url, webSocketImpl: WebSocket, retryAttempts: 0, lazy: false });
const query = `subscription($board: ID!, $user: ID) {
  leaderboardUpdates(leaderboardId: $board, userId: $user) {
    __typename
    ... on ScoreUpdated { userId score rank version sequence asOf { positions { partition offset } } }
    ... on RankChanged { userId oldRank newRank sequence }
    ... on TopKChanged { k sequence }
    ... on Resync { reason sequence }
  }
}`;

const timer = setTimeout(() => { console.error("timed out"); process.exit(2); }, 60_000);
let seen = 0;
const done = (code) => { clearTimeout(timer); client.dispose(); process.exit(code); };
client.on("connected", () => console.log(JSON.stringify({ event: "connected" })));
client.subscribe(
  { query, variables: { board, user } },
  {
    next: (result) => {
      if (result.errors) { console.log(JSON.stringify({ errors: result.errors })); done(3); }
      const update = result.data.leaderboardUpdates;
      console.log(JSON.stringify(update));
      seen += 1;
      const matched = expected !== undefined && update.__typename === "ScoreUpdated" && String(update.score) === expected;
      if (matched || seen >= Number(count)) done(0);
    },
    error: (err) => { console.error("subscription error", err); done(4); },
    complete: () => done(5),
  },
);
