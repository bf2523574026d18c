// The phase view, fed by GET /v1/phase-events (one event per engine step):
// one lane per slot, a column per step, coloured by what the slot did
// (prefill, waiting its prefill turn, ready at the barrier, decode,
// parked), and a lane for the queue (queued, or blocked by the phase);
// the phase, cohort and queue now; each request's TTFT and inter-token
// gaps, in a table and a chart.
//
// Each lane holds segments: runs of steps in which its slot did the same
// thing for the same request. A segment is a <span class="seg st-STATE">
// with data-request, data-state and data-from / data-to (the first and
// last frame's seq), so that what the view showed can be read back from
// the page.
"use strict";

const phase = {
  colWidth: 6,        // px per step
  maxCols: 600,       // steps kept on screen
  col: 0,             // columns drawn so far
  lanes: [],          // [{strip, segs, key}] slots, then the queue lane last
  requests: new Map(),  // id -> {row, slot, n_prompt, state, n_generated, ttft, lastGap, gapSum, nGaps}
  gaps: [],           // [{col, ms, slot, first}] for the chart
  retry: null,
};

function phaseEl(id) { return document.getElementById(id); }

function makeLane(name) {
  const lane = el("div", "lane");
  lane.appendChild(el("span", "lane-name", name));
  const track = el("div", "track");
  const strip = el("div", "strip");
  track.appendChild(strip);
  lane.appendChild(track);
  phaseEl("lanes").appendChild(lane);
  return { track, strip, segs: [], key: "" };
}

function setupLanes(nSlots) {
  phaseEl("lanes").textContent = "";
  phase.lanes = [];
  for (let i = 0; i < nSlots; ++i) phase.lanes.push(makeLane("slot " + i));
  phase.lanes.push(makeLane("queue"));
  phase.col = 0;
}

// Extends the lane's segment or starts a new one for this column.
function paint(lane, state, request, seq, title) {
  const key = state + ":" + request;
  const last = lane.segs[lane.segs.length - 1];
  if (last && lane.key === key && last.end === phase.col - 1) {
    last.end = phase.col;
    last.el.dataset.to = seq;
    last.el.style.width = (last.end - last.start + 1) * phase.colWidth + "px";
    return;
  }
  lane.key = key;
  if (state === "idle") return;
  const s = el("span", "seg st-" + state);
  s.dataset.state = state;
  s.dataset.request = request;
  s.dataset.from = seq;
  s.dataset.to = seq;
  s.title = title;
  s.style.left = phase.col * phase.colWidth + "px";
  s.style.width = phase.colWidth + "px";
  lane.strip.appendChild(s);
  lane.segs.push({ el: s, start: phase.col, end: phase.col });
}

// Keeps the newest columns in view: the strips slide left, and segments
// older than maxCols columns go.
function scrollLanes() {
  const width = phase.lanes.length ? phase.lanes[0].track.clientWidth : 0;
  const visible = Math.min(phase.maxCols, Math.max(1, Math.floor(width / phase.colWidth)));
  const shift = Math.max(0, phase.col - visible);
  for (const lane of phase.lanes) {
    while (lane.segs.length && lane.segs[0].end < phase.col - phase.maxCols) lane.segs.shift().el.remove();
    lane.strip.style.transform = "translateX(" + -shift * phase.colWidth + "px)";
  }
}

function requestInfo(id) {
  let r = phase.requests.get(id);
  if (!r) {
    const row = el("tr");
    row.dataset.request = id;
    for (let i = 0; i < 8; ++i) row.appendChild(el("td", i === 3 ? "state" : ""));
    row.children[0].textContent = id;
    const body = document.querySelector("#requests tbody");
    body.insertBefore(row, body.firstChild);
    while (body.children.length > 50) body.lastChild.remove();
    r = { row, slot: "", n_prompt: 0, state: "queued", n_generated: 0, ttft: null, lastGap: null, gapSum: 0, nGaps: 0 };
    phase.requests.set(id, r);
  }
  return r;
}

function showRequest(r) {
  const c = r.row.children;
  r.row.dataset.nPrompt = r.n_prompt;
  r.row.dataset.state = r.state;
  c[1].textContent = r.slot;
  c[2].textContent = r.n_prompt || "";
  c[3].textContent = r.state + (r.reason && r.reason !== r.state ? " (" + r.reason + ")" : "");
  c[4].textContent = r.n_generated;
  c[5].textContent = r.ttft === null ? "" : r.ttft.toFixed(1);
  c[6].textContent = r.lastGap === null ? "" : r.lastGap.toFixed(1);
  c[7].textContent = r.nGaps ? (r.gapSum / r.nGaps).toFixed(1) : "";
}

function onStep(f) {
  phaseEl("phase-name").textContent = f.phase;
  phaseEl("phase-name").className = "phase-badge " + f.phase;
  const members = f.slots.filter((s) => s.id >= 0).map((s) => s.id);
  phaseEl("phase-cohort").textContent = f.cohort + (members.length ? " (" + members.join(", ") + ")" : "");
  phaseEl("phase-queued").textContent = f.queued;
  phaseEl("phase-blocked").textContent = f.blocked;
  phaseEl("phase-step").textContent = f.step >= 0 ? f.step : "–";
  phaseEl("phase-step-ms").textContent = f.step_ms.toFixed(1) + " ms";
  for (const s of f.slots) {
    const title = s.id >= 0
      ? "request " + s.id + " · " + s.state + (s.n ? " · " + s.n + " tokens" : "") + " · step " + f.step
      : "";
    paint(phase.lanes[s.slot], s.state, s.id, f.seq, title);
    if (s.id < 0) continue;
    const r = requestInfo(s.id);
    r.slot = s.slot;
    r.n_prompt = s.n_prompt;
    r.state = s.ended ? "finished" : s.state;
    r.n_generated = s.n_generated;
    if (s.ttft_ms >= 0) {
      r.ttft = s.ttft_ms;
      phase.gaps.push({ col: phase.col, ms: s.ttft_ms, slot: s.slot, first: true });
    }
    if (s.gap_ms >= 0) {
      r.lastGap = s.gap_ms;
      r.gapSum += s.gap_ms;
      r.nGaps += 1;
      phase.gaps.push({ col: phase.col, ms: s.gap_ms, slot: s.slot, first: false });
    }
    showRequest(r);
  }
  for (const id of f.queue) {
    const r = requestInfo(id);
    r.state = "queued";
    showRequest(r);
  }
  for (const e of f.ended) {
    const r = phase.requests.get(e.id);
    if (!r) continue;
    r.state = e.reason === "stop" || e.reason === "length" ? "finished" : e.reason;
    r.reason = e.reason;
    showRequest(r);
  }
  const queueState = f.blocked > 0 ? "blocked" : f.queued > 0 ? "queued" : "idle";
  paint(phase.lanes[phase.lanes.length - 1], queueState, f.queued + "/" + f.blocked, f.seq,
        f.queued + " queued, " + f.blocked + " blocked by the phase");
  phase.col += 1;
  scrollLanes();
  drawGaps();
}

const slotColors = ["#0a84ff", "#30d158", "#ff9f0a", "#bf5af2", "#ff375f", "#64d2ff", "#a2845e", "#5e5ce6"];

function drawGaps() {
  const canvas = phaseEl("gaps");
  if (canvas.clientWidth && canvas.width !== canvas.clientWidth) canvas.width = canvas.clientWidth;
  const ctx = canvas.getContext("2d");
  const w = canvas.width, h = canvas.height;
  ctx.clearRect(0, 0, w, h);
  const first = phase.col - phase.maxCols;
  phase.gaps = phase.gaps.filter((g) => g.col >= first);
  if (!phase.gaps.length) return;
  const top = Math.max(1, ...phase.gaps.filter((g) => !g.first).map((g) => g.ms), 1);
  const lo = Math.max(0, phase.col - Math.floor(w / 3));
  ctx.fillStyle = "#6b6b70";
  ctx.font = "10px sans-serif";
  ctx.fillText(top.toFixed(0) + " ms (a TTFT above it is drawn at the top)", 4, 11);
  for (const g of phase.gaps) {
    if (g.col < lo) continue;
    const x = (g.col - lo) * 3 + 2;
    const y = h - 4 - Math.min(1, g.ms / top) * (h - 16);
    ctx.fillStyle = slotColors[g.slot % slotColors.length];
    if (g.first) {
      ctx.beginPath();
      ctx.arc(x, y, 3, 0, 2 * Math.PI);
      ctx.fill();
    } else {
      ctx.fillRect(x - 1, y - 1, 2, 2);
    }
  }
}

function onHello(h) {
  setupLanes(h.n_slots);
  phaseEl("phase-off").hidden = true;
  phaseEl("phase-name").textContent = h.phase;
  phaseEl("phase-name").className = "phase-badge " + h.phase;
  phaseEl("phase-queued").textContent = h.queued;
  phaseEl("phase-blocked").textContent = h.blocked;
  phaseEl("phase-cohort").textContent = h.cohort;
  phaseEl("lanes").dataset.policy = h.policy;
  phaseEl("phase-policy").textContent = "phase policy " + h.policy +
      (h.tg_quantum ? ", --tg-quantum " + h.tg_quantum : "") + " · -b " + h.n_batch;
}

function showOff(text) {
  const off = phaseEl("phase-off");
  off.textContent = text;
  off.hidden = false;
}

async function watchPhases() {
  try {
    const r = await fetch("/v1/phase-events", { headers: api.headers() });
    if (r.status === 501) {
      showOff("The phase view is off: the server was started with --no-slots.");
      return;
    }
    if (!r.ok) throw api.error(r.status, await r.json().catch(() => ({})));
    phaseEl("lanes").dataset.connected = "true";
    await api.readEvents(r, (ev) => {
      if (ev.type === "hello") onHello(ev);
      else if (ev.type === "step") onStep(ev);
      else if (ev.type === "lost") showOff(ev.frames + " steps came faster than this page read them and are not shown.");
      return true;
    });
  } catch (e) {
    if (e.status !== 503) showOff("Phase view: " + e.message + "; reconnecting…");
  }
  phaseEl("lanes").dataset.connected = "false";
  phase.retry = setTimeout(watchPhases, 1000);
}

document.addEventListener("DOMContentLoaded", watchPhases);
