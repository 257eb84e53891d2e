// The live page: a board's top 10 and one player's neighbourhood, refetched whenever the
// leaderboardUpdates subscription (graphql-transport-ws over a native WebSocket) says they changed.
// "more" appends the next 10 below the top 10 (entries after the last page's cursor), as read then.
// The status line speaks to a player; its data-state (connecting, live, behind, reconnecting,
// unavailable, notfound) is for scripts and tests. A closing or closed board says so in its title
// (body data-board-status), and BoardStatusChanged (closed, corrected) refetches like any update.
// The friends box (?friends=a,b,c) ranks those players among themselves and on the board
// (players(userIds)); the subscription follows them too, so their changes refetch it.
"use strict";

const params = new URLSearchParams(location.search);
const board = params.get("board") || "";
const user = params.get("user") || "";
const friends = (params.get("friends") || "").split(",").map((id) => id.trim()).filter(Boolean).slice(0, 50);

const READ = `query Live($board: ID!, $user: ID!, $withUser: Boolean!, $friends: [ID!]!, $withFriends: Boolean!) {
  leaderboard(id: $board) {
    players(userIds: $friends) @include(if: $withFriends) {
      entries { userId rankAmong player { rank sharedRank userId score profile { displayName } } }
    }
    name playerCount status
    top(k: 10) { entries { rank userId score profile { displayName } } asOf { newestAcceptedAt stale region regions { region lagSeconds stale gap } } }
    context(userId: $user, range: 4) @include(if: $withUser) {
      above { rank userId score profile { displayName } }
      player { rank userId score profile { displayName } }
      below { rank userId score profile { displayName } }
    }
  }
}`;

const UPDATES = `subscription Updates($board: ID!, $user: ID, $friends: [ID!]) {
  leaderboardUpdates(leaderboardId: $board, userId: $user, userIds: $friends) {
    __typename
    ... on ScoreUpdated { score rank sequence }
    ... on RankChanged { oldRank newRank sequence }
    ... on TopKChanged { k sequence }
    ... on Resync { reason sequence }
    ... on BoardStatusChanged { status resultVersion period sequence }
  }
}`;

const MORE = `query More($board: ID!, $after: String, $from: Int) {
  leaderboard(id: $board) {
    entries(first: 10, after: $after, fromRank: $from) {
      entries { rank userId score profile { displayName } } pageInfo { endCursor hasNextPage }
    }
  }
}`;

const BOARD_STATUS = { OPEN: "", CLOSING: ", closing: final scores soon", CLOSED: ", final result" };

const more = { cursor: null };  // the end of the last page "more" loaded (none: rank 11 next)

const state = { connected: false, stale: false, lastUpdate: null, notFound: false, refreshing: false, again: false, timer: null };

const STATES = {
  connecting: ["Connecting…", "offline"],
  live: ["Live: scores update as they happen", "live"],
  behind: ["Live, catching up: scores may be a few seconds behind", "live"],
  reconnecting: ["Connection lost, reconnecting…", "offline"],
  unavailable: ["Scores can't be loaded right now, retrying…", "offline"],
  notfound: ["This leaderboard does not exist", "notfound"],
};

function setStatus(name) {
  const el = document.getElementById("status");
  const [text, cls] = STATES[name];
  const updated = state.lastUpdate && (name === "live" || name === "behind")
    ? ` (last change ${state.lastUpdate.toLocaleTimeString()})` : "";
  el.textContent = text + updated;
  el.className = cls;
  el.dataset.state = name;
}

function showConnected() {
  setStatus(state.stale ? "behind" : "live");
}

// Per region, in words: how fresh the answering projection is for the awards accepted there.
function regionWords(r) {
  if (r.gap) return "some scores were lost in transit and are missing";
  if (r.stale) return r.lagSeconds === null ? "no news yet, its scores may be missing"
    : `no news for ${Math.round(r.lagSeconds)} s (cut off or far behind), its newest scores may be missing`;
  return r.lagSeconds === null ? "up to date" : `up to date (${r.lagSeconds.toFixed(1)} s behind)`;
}

function showRegions(asOf) {
  const el = document.getElementById("regions");
  el.replaceChildren();
  if (asOf.regions.length < 2) return;  // one region: the status line says it all
  el.append(`Scores from ${asOf.region}'s copy of the board. `);
  for (const r of asOf.regions) {
    const span = document.createElement("span");
    span.dataset.region = r.region;
    span.dataset.stale = String(r.stale || r.gap);
    span.className = r.stale || r.gap ? "behind" : "fresh";
    span.textContent = `Region ${r.region}: ${regionWords(r)}. `;
    el.append(span);
  }
}

function notFound() {
  state.notFound = true;
  document.getElementById("title").textContent = `No leaderboard "${board}"`;
  setStatus("notfound");
}

function row(entry) {
  const tr = document.createElement("tr");
  tr.dataset.user = entry.userId;
  tr.dataset.score = String(entry.score);
  tr.dataset.rank = String(entry.rank);
  if (entry.userId === user) tr.className = "me";
  const name = entry.profile ? entry.profile.displayName : entry.userId;
  for (const [text, cls] of [[entry.rank, "num"], [name, ""], [entry.score, "num"]]) {
    const td = document.createElement("td");
    td.textContent = String(text);
    if (cls) td.className = cls;
    tr.appendChild(td);
  }
  return tr;
}

// A friend: its rank among the friends, name, score and rank on the board (shared when tied).
function friendRow(listed) {
  const p = listed.player;
  const tr = p ? row({ ...p, rank: listed.rankAmong }) : row({ userId: listed.userId, rank: "-", score: "no score" });
  const td = document.createElement("td");
  td.className = "num";
  td.textContent = p ? (p.sharedRank === p.rank ? String(p.rank) : `${p.sharedRank} (tied)`) : "-";
  tr.appendChild(td);
  return tr;
}

function fillFriends(listed) {
  const body = document.getElementById("friends");
  body.replaceChildren(...(listed ? listed.entries.map(friendRow) : []));
}

function fill(id, entries, emptyText) {
  const body = document.getElementById(id);
  body.replaceChildren(...entries.map(row));
  if (!entries.length) {
    const tr = document.createElement("tr");
    const td = document.createElement("td");
    td.colSpan = 3; td.className = "empty"; td.textContent = emptyText;
    tr.appendChild(td); body.appendChild(tr);
  }
}

async function refresh() {
  if (state.refreshing) { state.again = true; return; }
  state.refreshing = true;
  try {
    const response = await fetch("/graphql", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ query: READ, variables: {
        board, user: user || "-", withUser: !!user, friends, withFriends: friends.length > 0 } }),
    });
    const body = await response.json();
    const lb = body.data && body.data.leaderboard;
    const codes = (body.errors || []).map((e) => e.extensions && e.extensions.code);
    if (!lb) {
      if (!body.errors || codes.includes("BAD_USER_INPUT") || codes.includes("NOT_FOUND")) notFound();
      else setStatus("unavailable");
      return;
    }
    state.stale = lb.top.asOf.stale;
    showRegions(lb.top.asOf);
    if (state.connected) showConnected();
    document.getElementById("title").textContent = `${lb.name} (${lb.playerCount} players${BOARD_STATUS[lb.status]})`;
    document.body.dataset.boardStatus = lb.status;
    fill("top", lb.top.entries, "no scores yet");
    if (!more.cursor) document.getElementById("more").hidden = lb.playerCount <= 10;
    const ctx = lb.context;
    document.getElementById("around-title").textContent = user ? `Around ${user}` : "Around you";
    fill("around", ctx ? [...ctx.above, ctx.player, ...ctx.below] : [], user ? "no score yet" : "no player chosen");
    fillFriends(lb.players);
    document.body.dataset.refreshed = String(Date.now());
  } catch (err) {
    console.error(`refresh failed: ${err}`);
    setStatus("unavailable");
  } finally {
    state.refreshing = false;
    if (state.again) { state.again = false; refresh(); }
  }
}

async function loadMore() {
  const button = document.getElementById("more");
  button.disabled = true;
  try {
    const variables = more.cursor ? { board, after: more.cursor } : { board, from: 11 };
    const response = await fetch("/graphql", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ query: MORE, variables }),
    });
    const body = await response.json();
    const page = body.data && body.data.leaderboard && body.data.leaderboard.entries;
    if (!page) { setStatus("unavailable"); return; }
    document.getElementById("more-rows").append(...page.entries.map(row));
    more.cursor = page.pageInfo.endCursor || more.cursor;
    button.hidden = !page.pageInfo.hasNextPage;
  } catch (err) {
    console.error(`more failed: ${err}`);
  } finally {
    button.disabled = false;
  }
}

function scheduleRefresh() {
  if (state.timer) return;
  state.timer = setTimeout(() => { state.timer = null; refresh(); }, 100);
}

function connect(delay) {
  if (state.notFound) return;
  const scheme = location.protocol === "https:" ? "wss" : "ws";
  const ws = new WebSocket(`${scheme}://${location.host}/graphql`, "graphql-transport-ws");
  ws.onopen = () => ws.send(JSON.stringify({ type: "connection_init", payload: {} }));
  ws.onmessage = (event) => {
    const msg = JSON.parse(event.data);
    if (msg.type === "connection_ack") {
      ws.send(JSON.stringify({ id: "live", type: "subscribe",
        payload: { query: UPDATES, variables: { board, user: user || null, friends: friends.length ? friends : null } } }));
      state.connected = true;
      showConnected();
      delay = 500;
      refresh();
    } else if (msg.type === "ping") {
      ws.send(JSON.stringify({ type: "pong" }));
    } else if (msg.type === "next") {
      const update = msg.payload.data && msg.payload.data.leaderboardUpdates;
      const errors = (msg.payload.errors || []).map((e) => e.extensions && e.extensions.code);
      if (errors.includes("NOT_FOUND") || errors.includes("BAD_USER_INPUT")) { notFound(); ws.close(); return; }
      if (!update) return;
      state.lastUpdate = new Date();
      showConnected();
      scheduleRefresh();
    } else if (msg.type === "error") {
      console.error(`subscription error: ${JSON.stringify(msg.payload)}`);
      setStatus("unavailable");
    }
  };
  ws.onclose = () => {
    state.connected = false;
    if (state.notFound) return;
    setStatus("reconnecting");
    setTimeout(() => connect(Math.min(delay * 2, 10000)), delay);
  };
}

document.getElementById("friends-input").value = friends.join(", ");
document.getElementById("friends-form").addEventListener("submit", (event) => {
  event.preventDefault();
  params.set("friends", document.getElementById("friends-input").value.replace(/\s+/g, ""));
  location.search = params.toString();  // a new list: read and subscribe again
});

document.getElementById("more").addEventListener("click", loadMore);
setStatus("connecting");
refresh().then(() => connect(500));
