// The veritrain explorer: a read-only single page over the node's JSON-RPC
// (same origin, POST). Routes live in the URL hash (#/block/12, #/game/0);
// a page that shows something still moving (the tip, an open bounty, a game
// in progress) is redrawn every 2 s. Everything from the chain is inserted as
// text (never as HTML), and nothing is loaded from anywhere else.
"use strict";

const POLL_MS = 2000;
let rpcId = 0;
let pollTimer = null;
let renderSeq = 0;

async function rpc(method, params) {
  const res = await fetch("/", {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", id: ++rpcId, method, params: params || [] }),
  });
  const j = await res.json();
  if (j.error) {
    const why = j.error.data && j.error.data.reason ? j.error.data.reason : j.error.message;
    throw new Error(method + ": " + why + (j.error.data && j.error.data.detail ? " (" + j.error.data.detail + ")" : ""));
  }
  return j.result;
}

// ---- DOM helpers -------------------------------------------------------------

function h(tag, attrs, ...kids) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") el.className = v;
    else el.setAttribute(k, v);
  }
  for (const k of kids.flat(Infinity)) {
    if (k === undefined || k === null || k === false) continue;
    el.append(k instanceof Node ? k : String(k));
  }
  return el;
}
const SVGNS = "http://www.w3.org/2000/svg";
function s(tag, attrs, ...kids) {
  const el = document.createElementNS(SVGNS, tag);
  for (const [k, v] of Object.entries(attrs || {})) el.setAttribute(k, v);
  for (const k of kids) el.append(k instanceof Node ? k : String(k));
  return el;
}
const short = (hex, n) => (hex && hex.length > 2 * (n || 6) ? hex.slice(0, n || 6) + "…" + hex.slice(-4) : hex || "");
const hashEl = (hex, n) => h("span", { class: "hash", title: hex }, short(hex, n));
const link = (href, text, cls) => h("a", { href, class: cls }, text);
const blockLink = (height) => link("#/block/" + height, "#" + height);
const txLink = (id) => h("a", { href: "#/tx/" + id, class: "hash", title: id }, short(id));
const names = {};  // address -> genesis name, filled from list_accounts
function addrLink(addr) {
  if (!addr) return "";
  const label = names[addr] ? names[addr] + " " : "";
  return h("a", { href: "#/account/" + addr, title: addr }, label, h("span", { class: "hash" }, short(addr, 5)));
}
const pill = (text) => h("span", { class: "pill " + text }, text);
const amount = (n) => Number(n).toLocaleString("en-US");
function kv(pairs) {
  return h("dl", { class: "kv" }, pairs.filter((p) => p).map(([k, v]) => [h("dt", {}, k), h("dd", {}, v)]));
}
const card = (...kids) => h("div", { class: "card" }, kids);
function table(head, rows, numeric) {
  numeric = numeric || [];
  return h("table", {},
    h("thead", {}, h("tr", {}, head.map((c, i) => h("th", { class: numeric.includes(i) ? "num" : null }, c)))),
    h("tbody", {}, rows.map((r) => h("tr", {}, r.map((c, i) => h("td", { class: numeric.includes(i) ? "num" : null }, c))))));
}
function ago(ms) {
  if (!ms) return "";
  const d = Math.max(0, Date.now() - ms) / 1000;
  return d < 90 ? d.toFixed(0) + " s ago" : d < 5400 ? (d / 60).toFixed(0) + " min ago" : new Date(ms).toISOString();
}

// ---- pages -------------------------------------------------------------------

async function loadNames() {
  if (Object.keys(names).length) return;
  try {
    const r = await rpc("list_accounts", { from: 0 });
    for (const a of r.accounts) names[a.address] = a.name;
  } catch (e) { /* names are a nicety */ }
}

function blocksTable(blocks) {
  return table(["height", "hash", "time", "txs", "proposer"],
    blocks.map((b) => [blockLink(b.height), hashEl(b.hash), ago(b.time), String(b.tx_count), hashEl(b.proposer, 5)]), [3]);
}

function bountiesTable(bounties) {
  return table(["bounty", "state", "mode", "steps", "reward", "client", "solver", "games"],
    bounties.map((b) => [link("#/bounty/" + b.id, "bounty " + b.id), pill(b.state), b.mode, String(b.num_steps),
      amount(b.reward), addrLink(b.client), addrLink(b.solver),
      b.games.map((g) => [link("#/game/" + g, "game " + g), " "])]), [3, 4]);
}

async function pageHome() {
  const [st, blocks, bounties, accounts] = await Promise.all([
    rpc("chain_status"), rpc("list_blocks", { limit: 12 }), rpc("list_bounties", { from: 0, limit: 100 }),
    rpc("list_accounts", { from: 0 })]);
  return {
    live: true,
    body: [
      h("h1", {}, st.chain_name, " ", h("span", { class: "muted" }, "height " + st.height)),
      h("div", { class: "grid" },
        card(h("h2", {}, "head"), kv([["height", blockLink(st.height)], ["hash", hashEl(st.hash, 10)], ["time", ago(st.time)],
          ["chain id", String(st.chain_id)], ["block interval", st.block_interval_ms + " ms"],
          ["validators", st.validators.map((v) => v.name).join(", ")], ["peers", String(st.peers)],
          ["mempool", String(st.mempool)], ["this node", st.name]])),
        card(h("h2", {}, "accounts"), table(["name", "address", "balance"],
          accounts.accounts.map((a) => [a.name, addrLink(a.address), amount(a.balance)]), [2]))),
      card(h("h2", {}, "bounties"), bounties.bounties.length ? bountiesTable(bounties.bounties.slice().reverse())
        : h("p", { class: "muted" }, "no bounty posted yet")),
      card(h("h2", {}, "latest blocks ", link("#/blocks", "all")), blocksTable(blocks.blocks)),
    ],
  };
}

async function pageBlocks(q) {
  const before = q.before ? Number(q.before) : undefined;
  const r = await rpc("list_blocks", before === undefined ? { limit: 50 } : { before, limit: 50 });
  return {
    live: before === undefined,
    body: [h("h1", {}, "blocks"), card(blocksTable(r.blocks),
      r.next_before ? h("p", {}, link("#/blocks?before=" + r.next_before, "older →")) : null)],
  };
}

function txRow(t) {
  let what;
  if (t.kind === "transfer") what = ["transfer ", amount(t.amount), " to ", addrLink(t.to)];
  else what = ["call ", t.method_name || "contract " + t.contract + "/" + t.method, " (" + t.args_bytes + " bytes)"];
  return [txLink(t.id), addrLink(t.from), what, String(t.nonce)];
}

async function pageBlock(height) {
  const b = await rpc("get_block", { height: Number(height), full: true });
  const txs = b.txs || [];
  return {
    live: false,
    body: [
      h("h1", {}, "block #" + b.height),
      card(kv([["hash", hashEl(b.hash, 32)], ["parent", b.parent ? link("#/block/" + (b.height - 1), short(b.parent)) : "—"],
        ["time", b.time ? new Date(b.time).toISOString() + " (" + ago(b.time) + ")" : "genesis"],
        ["proposer", b.proposer ? hashEl(b.proposer, 32) : "—"], ["state root", hashEl(b.state_root, 32)],
        ["transactions", String(b.tx_count)]]),
        h("p", {}, b.height > 0 ? link("#/block/" + (b.height - 1), "← previous") : "", " ", link("#/block/" + (b.height + 1), "next →"))),
      card(h("h2", {}, "transactions"), txs.length ? table(["tx", "from", "what", "nonce"], txs.map(txRow), [3])
        : h("p", { class: "muted" }, "none")),
    ],
  };
}

function eventText(e) {
  const d = e.decoded || {};
  const parts = [e.topic];
  if (d.bounty_id !== undefined) parts.push(" ", link("#/bounty/" + d.bounty_id, "bounty " + d.bounty_id));
  if (d.game_id !== undefined) parts.push(" ", link("#/game/" + d.game_id, "game " + d.game_id));
  if (d.level !== undefined) parts.push(" · " + d.level + " " + d.index);
  if (d.result !== undefined) parts.push(" · " + d.result + " by " + d.reason);
  return h("div", {}, parts);
}

async function pageTx(id) {
  const tx = await rpc("get_tx", { tx_id: id });
  let receipt = null;
  if (tx.status === "included") receipt = await rpc("get_receipt", { tx_id: id });
  return {
    live: tx.status !== "included",
    body: [
      h("h1", {}, "transaction"),
      card(kv([["id", hashEl(tx.tx_id || tx.id, 32)], ["status", pill(tx.status)],
        tx.height !== undefined && ["block", blockLink(tx.height)], tx.from && ["from", addrLink(tx.from)],
        tx.kind && ["kind", tx.kind], tx.to && ["to", addrLink(tx.to)], tx.amount !== undefined && ["amount", amount(tx.amount)],
        tx.method_name && ["referee call", tx.method_name], tx.nonce !== undefined && ["nonce", String(tx.nonce)],
        tx.gas_limit !== undefined && ["gas limit · price", tx.gas_limit + " · " + tx.gas_price]])),
      receipt && card(h("h2", {}, "receipt"), kv([["result", receipt.success ? pill("ok") : [pill("bad"), " ", receipt.reason]],
        ["gas used", String(receipt.gas_used)], ["fee", amount(receipt.fee)],
        ["events", receipt.events.length ? receipt.events.map(eventText) : "none"]])),
    ],
  };
}

async function pageAccounts() {
  const r = await rpc("list_accounts", { from: 0 });
  return {
    live: true,
    body: [h("h1", {}, "accounts"), card(h("p", { class: "muted" }, "named in the genesis file; any other address: search it or follow a link"),
      table(["name", "address", "balance", "nonce"], r.accounts.map((a) => [a.name, addrLink(a.address), amount(a.balance), String(a.nonce)]), [2, 3]))],
  };
}

async function pageAccount(addr) {
  const a = await rpc("get_account", { address: addr });
  const bounties = (await rpc("list_bounties", { from: 0, limit: 100 })).bounties
    .filter((b) => b.client === a.address || b.solver === a.address);
  return {
    live: true,
    body: [
      h("h1", {}, "account ", names[a.address] || ""),
      card(kv([["address", hashEl(a.address, 40)], ["balance", amount(a.balance)], ["nonce", String(a.nonce)],
        ["next nonce", String(a.next_nonce)], ["as of block", blockLink(a.height)]])),
      bounties.length ? card(h("h2", {}, "bounties as client or solver"), bountiesTable(bounties)) : null,
    ],
  };
}

async function pageBounties() {
  const r = await rpc("list_bounties", { from: 0, limit: 100 });
  return { live: true, body: [h("h1", {}, "bounties"), card(r.bounties.length ? bountiesTable(r.bounties.slice().reverse()) : "none yet")] };
}

const TERMINAL = ["finalized", "failed", "refunded"];

async function bountyTimeline(b) {
  const entries = [];
  let from = b.posted_height;
  for (let page = 0; page < 20; page++) {
    const r = await rpc("get_bounty_timeline", { bounty_id: b.id, from_height: from });
    entries.push(...r.entries);
    from = r.next_height;
    if (from > r.height) break;
  }
  return entries;
}

function lossChart(curve, highlightStep) {
  if (!curve.available) return h("p", { class: "muted" }, "no loss curve: " + curve.why);
  const W = 760, H = 220, L = 52, R = 12, T = 12, B = 30;
  const xs = curve.steps, ys = curve.losses.map((v) => (v === null ? NaN : v));
  const finite = ys.filter((v) => Number.isFinite(v));
  const lo = Math.min(...finite), hi = Math.max(...finite);
  const span = hi > lo ? hi - lo : 1;
  const maxX = Math.max(1, xs[xs.length - 1]);
  const X = (x) => L + (x / maxX) * (W - L - R);
  const Y = (y) => T + (1 - (y - lo) / span) * (H - T - B);
  const pts = xs.map((x, i) => (Number.isFinite(ys[i]) ? X(x).toFixed(1) + "," + Y(ys[i]).toFixed(1) : null)).filter((p) => p);
  const svg = s("svg", { class: "chart", viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": "training loss by step" },
    s("line", { class: "axis", x1: L, y1: H - B, x2: W - R, y2: H - B }),
    s("line", { class: "axis", x1: L, y1: T, x2: L, y2: H - B }),
    s("text", { x: 4, y: T + 10 }, hi.toPrecision(4)), s("text", { x: 4, y: H - B }, lo.toPrecision(4)),
    s("text", { x: L, y: H - 8 }, "step 0"), s("text", { x: W - R - 60, y: H - 8 }, "step " + maxX),
    s("polyline", { class: "line", points: pts.join(" ") }));
  if (highlightStep !== undefined && highlightStep <= maxX) {
    svg.append(s("line", { class: "mark", x1: X(highlightStep), y1: T, x2: X(highlightStep), y2: H - B }),
      s("text", { x: X(highlightStep) + 4, y: T + 22 }, "disputed step " + highlightStep));
  }
  return h("div", {}, svg, h("p", { class: "muted" },
    `${curve.num_steps} steps, reported by the solver in its published run manifest (log bundle ${short(curve.log_bundle)}); ` +
    "not committed and not checked by the referee"));
}

async function pageBounty(id) {
  const b = await rpc("get_bounty", { bounty_id: Number(id) });
  const [entries, curve, games] = await Promise.all([bountyTimeline(b), rpc("get_loss_curve", { bounty_id: b.id }),
    Promise.all(b.games.map((g) => rpc("get_dispute", { game_id: g })))]);
  const disputed = games.find((g) => g.step !== undefined);
  const c = b.commitment || {};
  return {
    live: !TERMINAL.includes(b.state) || games.some((g) => g.phase !== "resolved") || Boolean(curve.pending),
    body: [
      h("h1", {}, "bounty " + b.id, " ", pill(b.state)),
      h("div", { class: "grid" },
        card(h("h2", {}, "terms"), kv([["client", addrLink(b.client)], ["solver", b.solver ? addrLink(b.solver) : "—"],
          ["reward", amount(b.reward)], ["solver bond", amount(b.solver_bond)], ["challenger bond", amount(b.challenger_bond)],
          ["job", hashEl(b.job_hash, 10)], ["mode", b.mode], ["steps · checkpoint every", b.num_steps + " · " + b.checkpoint_interval],
          ["posted at", blockLink(b.posted_height)], ["solve by", "#" + b.solve_deadline],
          ["challenge window", b.challenge_window + " blocks" + (b.challenge_deadline ? " (until #" + b.challenge_deadline + ")" : "")],
          ["chess clock", b.clock_budget + " blocks per party per game"]])),
        card(h("h2", {}, "commitment"), b.commitment ? kv([["checkpoint root", hashEl(c.checkpoint_root, 10)],
          ["final state", hashEl(c.final_state_hash, 10)], ["log root", hashEl(c.log_root, 10)],
          c.log_bundle && ["log bundle", hashEl(c.log_bundle, 10)], b.state_blob && ["state blob", hashEl(b.state_blob, 10)]])
          : h("p", { class: "muted" }, "not committed yet"))),
      card(h("h2", {}, "training loss"), lossChart(curve, disputed ? disputed.step : undefined)),
      games.length ? card(h("h2", {}, "disputes"), table(["game", "challenger", "phase", "result", "pinned to"],
        games.map((g) => [link("#/game/" + g.id, "game " + g.id), addrLink(g.challenger), g.phase, pill(g.result),
          g.step !== undefined ? "step " + g.step + (g.node_index !== undefined ? ", node " + g.node_index : "") : "—"]))) : null,
      card(h("h2", {}, "timeline"), h("ol", { class: "timeline", id: "timeline" }, entries.map((e) =>
        h("li", { class: e.success ? null : "failed-call" }, blockLink(e.height),
          h("span", {}, e.method, e.success ? "" : " ✗"),
          h("span", {}, addrLink(e.from), " ", txLink(e.tx_id), e.success ? "" : " rejected: " + e.reason,
            e.events.map(eventText)))))),
    ],
  };
}

// ---- the dispute game -------------------------------------------------------

const LEVEL_TITLE = {
  checkpoint: "Level 1 · checkpoint interval",
  step: "Level 2 · step",
  node: "Level 3 · operator node",
  chunk: "Level 4 · values of the node's output",
  partials: "Level 5b · partial results of the disputed value",
};
const CHUNK_VALUES = 256;  // values per chunk of a tensor's commitment (docs/formats.md "Tensors")

function clockCard(who, c, budget, height) {
  const ticking = c.owes;
  const frac = budget ? Math.max(0, Math.min(1, c.left_now / budget)) : 0;
  const bar = h("div", { class: "bar" }, h("div", {}));
  bar.firstChild.style.width = (frac * 100).toFixed(1) + "%";
  return h("div", { class: "clock " + (ticking ? "ticking" : ""), id: "clock-" + who },
    h("div", { class: who }, who, ticking ? " · to move" : " · waiting"),
    h("div", { class: "time" }, c.left_now + " / " + budget, h("span", { class: "muted" }, " blocks left")),
    bar, ticking ? h("div", { class: "muted" }, "owes since #" + c.owes_since + " (now #" + height + ")") : null);
}

function spanBar(range, total, hit) {
  const bar = h("div", { class: "span" }, h("div", { class: hit ? "hit" : null }));
  bar.firstChild.style.left = ((range[0] / total) * 100).toFixed(2) + "%";
  bar.firstChild.style.width = (((range[1] - range[0]) / total) * 100).toFixed(2) + "%";
  return bar;
}

// The assemble node's element level walks h_{t+1}'s leaves, not an output's chunks.
const isStateWalk = (element) => element && element.rule === "state";

function rangeText(level, r, element) {
  const [lo, hi] = r.range;
  if (level.level === "checkpoint") return `checkpoints ${lo}–${hi - 1} (steps ${r.steps[0]}–${r.steps[1]})`;
  if (level.level === "step") return `states h${r.steps[0]}–h${r.steps[1]}`;
  if (level.level === "chunk") {
    if (isStateWalk(element)) return `leaves ${lo}–${hi - 1} of the next state`;
    return `chunks ${lo}–${hi - 1} (values ${lo * CHUNK_VALUES}–${hi * CHUNK_VALUES - 1})`;
  }
  if (level.level === "partials") return `partial results ${lo}–${hi - 1}`;
  return `nodes ${lo}–${hi - 1}`;
}

function revealCell(mine, theirs) {
  if (!mine) return h("span", { class: "muted" }, "not yet");
  const cmp = (a, b) => h("span", { class: !b ? null : a === b ? "same" : "diff", title: a }, short(a, 5));
  return h("span", { class: "reveal hash" }, "L ", cmp(mine.left, theirs && theirs.left), "  R ", cmp(mine.right, theirs && theirs.right),
    " ", h("span", { class: "muted" }, "#" + mine.height));
}

function levelFound(level, game, element) {
  if (level.agreed) {
    return h("div", { class: "found", id: "agreed-" + level.level }, "→ both parties' roots are equal: they agree on every partial result, ",
      "so the value is decided by its last step (the epilogue) from the agreed final partial result");
  }
  if (level.disputed === undefined) return null;
  if (level.level === "chunk" && isStateWalk(element)) {
    return h("div", { class: "found", id: "disputed-chunk" }, "→ the next states first differ at leaf ",
      h("span", { class: "target" }, String(level.disputed)), " of h", String(game.step + 1),
      ": one final move opens what that leaf must be");
  }
  if (level.level === "chunk") {
    const at = element && element.value >= 0
      ? [": the outputs first differ at value ", h("span", { class: "target" }, String(element.value)), ` of output ${element.slot}`,
        element.y ? ` (solver ${element.y.solver}, challenger ${element.y.challenger})` : ""]
      : [` of output ${element ? element.slot : "?"}: both reveal it`];
    return h("div", { class: "found", id: "disputed-chunk" }, "→ disputed chunk ", h("span", { class: "target" }, String(level.disputed)), at);
  }
  if (level.level === "partials") {
    const m = level.disputed - 1;
    return h("div", { class: "found", id: "disputed-partial" }, "→ disputed arithmetic step ", h("span", { class: "target" }, String(m)),
      `: both agree on partial result ${m}, they differ on ${m + 1}; the referee checks that one step`);
  }
  if (level.level === "checkpoint") {
    return h("div", { class: "found" }, "→ disagreement first at checkpoint ", h("span", { class: "target" }, String(level.disputed)),
      ` (state after step ${level.disputed_step}): the interval ending there goes to level 2`);
  }
  if (level.level === "step") {
    return h("div", { class: "found", id: "disputed-step" }, "→ disputed step ", h("span", { class: "target" }, String(level.disputed_step)),
      `: both agree on the state before it (h${level.disputed_step}), they differ on the state after it (h${level.disputed_step + 1})`);
  }
  const rec = game.solver_record || game.challenger_record;
  return h("div", { class: "found", id: "disputed-node" }, "→ disputed operator node ", h("span", { class: "target" }, String(level.disputed)),
    rec && rec.op ? " (" + rec.op + ")" : "", ` of ${level.leaf_count} nodes in step ${game.step}`);
}

function levelCard(level, game, element) {
  const total = Math.max(1, level.leaf_count);
  const unit = { checkpoint: "checkpoints", step: "step states", node: "operator nodes",
    chunk: isStateWalk(element) ? "leaves of the next state" : "chunks of " + CHUNK_VALUES + " values",
    partials: "partial results" }[level.level];
  const rangeOf = (r) => rangeText(level, r, element);
  const rows = level.rounds.map((r, i) => h("div", { class: "round" },
    h("span", {}, "round " + (i + 1)), h("div", {}, spanBar(r.range, total, false), h("span", { class: "muted" }, rangeOf(r))),
    revealCell(r.solver, r.challenger), revealCell(r.challenger, r.solver), h("span", {}, "→ " + r.went)));
  if (level.round_in_progress) {
    const r = level.round_in_progress;
    rows.push(h("div", { class: "round" }, h("span", {}, "round " + (level.rounds.length + 1)),
      h("div", {}, spanBar(r.range, total, false), h("span", { class: "muted" }, rangeOf(r))),
      revealCell(r.solver, null), revealCell(r.challenger, null), pill("live")));
  } else if (level.current) {
    rows.push(h("div", { class: "round" }, h("span", {}, "round " + (level.rounds.length + 1)),
      h("div", {}, spanBar(level.current.range, total, false), h("span", { class: "muted" }, rangeOf(level.current))),
      h("span", { class: "muted" }, "waiting"), h("span", { class: "muted" }, "waiting"), pill("live")));
  }
  if (level.disputed !== undefined) {
    const leafRange = [level.disputed, level.disputed + 1];
    rows.push(h("div", { class: "round" }, h("span", {}, "leaf"), spanBar(leafRange, total, true),
      h("span", { class: "hash solver", title: level.leaf_hashes.solver }, short(level.leaf_hashes.solver, 5)),
      h("span", { class: "hash challenger", title: level.leaf_hashes.challenger }, short(level.leaf_hashes.challenger, 5)),
      h("span", {}, "≠")));
  }
  const posts = level.posts.map((p) => h("div", {}, h("span", { class: p.party }, p.party), " posted its root ",
    hashEl(p.root), " at ", blockLink(p.height), " (gas " + p.gas_used + ")"));
  return h("div", { class: "card level " + (level.disputed !== undefined ? "done" : ""), "data-level": level.level },
    h("h3", {}, LEVEL_TITLE[level.level], h("span", { class: "muted" }, ` · ${level.leaf_count} ${unit}` +
      (level.level === "step" ? ` from step ${level.first_step}` : ""))),
    posts,
    level.roots ? h("div", { class: "muted" }, "roots: ", h("span", { class: "solver" }, "solver "), hashEl(level.roots.solver),
      "  ", h("span", { class: "challenger" }, "challenger "), hashEl(level.roots.challenger)) : null,
    level.agreed ? null : h("div", { class: "round head" }, h("span", {}, ""), h("span", {}, "in dispute"),
      h("span", { class: "solver" }, "solver reveals"), h("span", { class: "challenger" }, "challenger reveals"), h("span", {}, "walk")),
    rows, levelFound(level, game, element),
    level.inconsistent ? h("p", { class: "error" }, "replay stopped: " + level.inconsistent) : null);
}

function verdict(g, bonds, element) {
  if (g.phase !== "resolved") {
    return h("div", { class: "verdict open", id: "verdict" }, "in progress · phase ", g.phase,
      ` · solver bond ${amount(bonds.solver)} and challenger bond ${amount(bonds.challenger)} at stake`);
  }
  const who = { "challenger-won": "the challenger won", "solver-won": "the solver won", "both-lost": "both lost",
    "no-contest": "no contest" }[g.result] || g.result;
  const bondText = g.result === "challenger-won" ? `the solver's bond (${amount(bonds.solver)}) is slashed`
    : g.result === "solver-won" ? `the challenger's bond (${amount(bonds.challenger)}) is slashed`
    : g.result === "both-lost" ? "both bonds are slashed" : "bonds returned";
  const value = element && element.value >= 0 ? `, output ${element.slot} value ${element.value}` : "";
  const where = g.step !== undefined ? ` — pinned to step ${g.step}` + (g.node_index !== undefined ? `, operator node ${g.node_index}` : "") + value : "";
  return h("div", { class: "verdict " + g.result, id: "verdict" }, who, " by ", g.reason, where, " at ", blockLink(g.resolved_height), "; ", bondText);
}

async function pageGame(id) {
  const r = await rpc("get_game_moves", { game_id: Number(id) });
  const g = r.game;
  const live = g.phase !== "resolved";
  const records = r.records.map((x) => h("div", {}, h("span", { class: x.party }, x.party), ` revealed node ${g.node_index}: `,
    h("b", {}, x.op), " with " + x.outputs.length + " output(s) ", x.outputs.map((o) => [hashEl(o, 5), " "]), " at ", blockLink(x.height)));
  return {
    live,
    body: [
      h("h1", {}, "dispute game " + g.id, " ", pill(live ? "live" : g.result), " ",
        h("span", { class: "muted" }, "over ", link("#/bounty/" + g.bounty_id, "bounty " + g.bounty_id))),
      verdict(g, r.bonds, r.element),
      h("div", { class: "grid" },
        card(h("h2", {}, "parties and bonds"), kv([["solver", [addrLink(r.solver), " · bond ", amount(r.bonds.solver)]],
          ["challenger", [addrLink(g.challenger), " · bond ", amount(r.bonds.challenger)]],
          ["opened", blockLink(g.opened_height)], ["resolved", g.resolved_height ? blockLink(g.resolved_height) : "—"],
          ["rounds per level", g.rounds.concat(r.element ? r.element.rounds : []).join(" · ")]])),
        card(h("h2", {}, "chess clocks"), h("div", { class: "clocks" },
          clockCard("solver", g.clocks.solver, r.bounty.clock_budget, r.height),
          clockCard("challenger", g.clocks.challenger, r.bounty.clock_budget, r.height)))),
      h("h2", {}, "the walk, level by level"),
      r.levels.map((l, i) => [i ? h("div", { class: "arrow" }, "↓") : null, levelCard(l, g, r.element)]),
      records.length ? card(h("h2", {}, "node records and arbitration"), records) : null,
      r.truncated ? h("p", { class: "error" }, "history shown up to block #" + (g.opened_height + 4095) + " only") : null,
      card(h("h2", {}, "moves"), table(["block", "party", "move", "gas", "fee", "tx"],
        r.moves.map((m) => [blockLink(m.height), h("span", { class: m.party }, m.party),
          [m.method, m.success ? "" : " ✗ " + m.reason], String(m.gas_used), amount(m.fee), txLink(m.tx_id)]), [3, 4])),
    ],
  };
}

// ---- search and routing ----------------------------------------------------------

async function search(text) {
  const t = text.trim().toLowerCase();
  let m;
  if ((m = t.match(/^(?:block\s*)?#?(\d+)$/))) return "#/block/" + m[1];
  if ((m = t.match(/^bounty\s*(\d+)$/))) return "#/bounty/" + m[1];
  if ((m = t.match(/^(?:game|dispute)\s*(\d+)$/))) return "#/game/" + m[1];
  if (/^[0-9a-f]{40}$/.test(t)) return "#/account/" + t;
  if (/^[0-9a-f]{64}$/.test(t)) return "#/tx/" + t;
  for (const [addr, name] of Object.entries(names)) if (name === t) return "#/account/" + addr;
  return null;
}

const ROUTES = [
  [/^#?\/?$/, () => pageHome()],
  [/^#\/blocks$/, (m, q) => pageBlocks(q)],
  [/^#\/block\/(\d+)$/, (m) => pageBlock(m[1])],
  [/^#\/tx\/([0-9a-f]{64})$/, (m) => pageTx(m[1])],
  [/^#\/accounts$/, () => pageAccounts()],
  [/^#\/account\/([0-9a-f]{40})$/, (m) => pageAccount(m[1])],
  [/^#\/bounties$/, () => pageBounties()],
  [/^#\/bounty\/(\d+)$/, (m) => pageBounty(m[1])],
  [/^#\/game\/(\d+)$/, (m) => pageGame(m[1])],
];

async function render() {
  const seq = ++renderSeq;
  clearTimeout(pollTimer);
  const [path, query] = (location.hash || "#/").split("?");
  const q = Object.fromEntries(new URLSearchParams(query || ""));
  const app = document.getElementById("app");
  const status = document.getElementById("status");
  let page;
  try {
    await loadNames();
    const route = ROUTES.find(([re]) => re.test(path));
    page = route ? await route[1](path.match(route[0]), q) : { body: [h("p", { class: "error" }, "no such page: " + path)] };
    status.textContent = "live · updated " + new Date().toLocaleTimeString();
    status.className = "status";
  } catch (e) {
    page = { live: true, body: [h("p", { class: "error" }, String(e.message || e))] };
    status.textContent = "node unreachable?";
    status.className = "status down";
  }
  if (seq !== renderSeq) return;  // a newer render started meanwhile
  app.replaceChildren(...[page.body].flat(Infinity).filter((x) => x));
  document.body.dataset.ready = "1";
  if (page.live) pollTimer = setTimeout(render, POLL_MS);
}

document.getElementById("search").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  const target = await search(document.getElementById("search-box").value);
  if (target) location.hash = target;
});
window.addEventListener("hashchange", render);
render();
