// /second-brain/graph: memories, persons and goals as a force-directed graph on a
// canvas. Zoom (wheel, pinch, buttons), pan (drag the background), drag a node, click
// a node for its detail in the side panel. The node finder and the zoom buttons make
// the same things possible from the keyboard.
//
// Built for thousands of nodes: the layout (force-layout.js) uses a Barnes–Hut
// quadtree and runs in slices of a few milliseconds per animation frame; drawing
// batches one path per kind and skips whatever lies outside the view. When the first
// layout has settled the canvas carries data-layout-ms (wall time, from the start of
// the layout to settled), data-layout-ticks and data-nodes.

import { api } from '../api.js';
import { ForceLayout, nextFrame } from '../force-layout.js';
import { memoryCard } from '../memory-item.js';
import { badge, errorLine, field, h, plural, render, showError, timeAgo } from '../ui.js';

const page = document.getElementById('page');

// Node kinds: how each is drawn (radius in layout units, shape) and named.
const KINDS = {
  memory: { radius: 5, shape: 'circle', one: 'memory', many: 'memories', colour: '--node-memory' },
  goal: { radius: 7, shape: 'diamond', one: 'goal', many: 'goals', colour: '--node-goal' },
  person: { radius: 7, shape: 'square', one: 'person', many: 'persons', colour: '--node-person' },
};
// Drawn in this order, so persons and goals lie on top of the many memories.
const DRAW_ORDER = ['memory', 'goal', 'person'];
const EDGE_KINDS = {
  person_memory: { name: 'person – memory', colour: '--edge-person-memory', width: 1, dash: [] },
  person_person: { name: 'person – person', colour: '--edge-person-person', width: 2, dash: [] },
  memory_goal: { name: 'memory – goal', colour: '--edge-memory-goal', width: 1.2, dash: [4, 3] },
};
const MIN_ZOOM = 0.02;
const MAX_ZOOM = 8;
const ZOOM_STEP = 1.5;
const SLICE_MS = 12; // layout work per task during the first layout
const PROGRESS_MS = 250; // how often the first layout's progress is drawn
const MAX_LABELS = 250;
const MAX_NEIGHBOURS = 100;
const DRAG_THRESHOLD = 4; // px a press may move and still count as a click

// The graph, once loaded.
let nodes = []; // {id, kind, label, type}
let byId = new Map();
let edges = []; // {source, target, kind, label} with node indices
let edgesByKind = {};
let adjacency = []; // per node: edge indices
let hidden = new Uint8Array(0); // deleted from the detail panel
let layout = null;
let selected = -1;
let hovered = -1;
let running = false;
let firstLayout = null; // {start} while the first layout runs
const view = { k: 1, tx: 0, ty: 0, moved: false };
let colours = {};

const summary = h('p', { class: 'list-summary graph-summary', role: 'status' }, 'Loading the graph…');
const canvas = h('canvas', { role: 'img', 'aria-label': 'Graph (loading)', class: 'graph-canvas' },
  'The graph of memories, persons and goals. Use “Find a node” to explore it.');
const ctx = canvas.getContext('2d');
const wrap = h('div', { class: 'graph-canvas-wrap' }, canvas);

const filter = h('input', { type: 'search', name: 'filter', placeholder: 'Words in a name or summary', autocomplete: 'off' });
const finder = h('select', { name: 'node' });
const finderForm = h('form', { class: 'graph-find', role: 'search', 'aria-label': 'Find a node' },
  field('Filter nodes', filter), field('Find a node', finder));
finderForm.addEventListener('submit', (event) => event.preventDefault());

const zoomIn = h('button', { type: 'button', 'aria-label': 'Zoom in', title: 'Zoom in', class: 'zoom-in' }, '+');
const zoomOut = h('button', { type: 'button', 'aria-label': 'Zoom out', title: 'Zoom out', class: 'zoom-out' }, '−');
const zoomReset = h('button', { type: 'button', class: 'zoom-reset', title: 'Fit the whole graph in view' }, 'Reset view');
const zoomGroup = h('div', { class: 'graph-zoom', role: 'group', 'aria-label': 'Zoom' }, zoomOut, zoomIn, zoomReset);

const legend = h('ul', { class: 'graph-legend', 'aria-label': 'Legend' },
  DRAW_ORDER.slice().reverse().map((kind) =>
    h('li', {}, h('span', { class: `swatch swatch-${kind}`, 'aria-hidden': 'true' }), KINDS[kind].many)),
  Object.entries(EDGE_KINDS).map(([kind, style]) =>
    h('li', {}, h('span', { class: `swatch swatch-edge swatch-${kind}`, 'aria-hidden': 'true' }), style.name)));

const detailTitle = h('h2', { id: 'graph-detail-title' }, 'Details');
const detailBody = h('div', { class: 'graph-detail-body' },
  h('p', { class: 'hint' }, 'Click a node, or choose one in “Find a node”, to see it here.'));
const detailStatus = h('p', { class: 'visually-hidden', role: 'status' });
const detail = h('aside', { class: 'graph-detail card', 'aria-labelledby': 'graph-detail-title' },
  detailTitle, detailStatus, detailBody);

render(page,
  h('div', { class: 'graph-toolbar' }, finderForm, zoomGroup),
  legend,
  summary,
  h('div', { class: 'graph-layout' }, wrap, detail),
  h('p', { class: 'hint graph-hint' },
    'Drag the background to pan, drag a node to move it, scroll or pinch to zoom, click a node for its detail.'));

// ---- colours (from app.css, so dark mode applies) ----

function readColours() {
  const style = getComputedStyle(document.documentElement);
  const get = (name, fallback) => style.getPropertyValue(name).trim() || fallback;
  colours = {
    '--node-memory': get('--node-memory', '#3b5bdb'),
    '--node-person': get('--node-person', '#d9480f'),
    '--node-goal': get('--node-goal', '#2b8a3e'),
    '--edge-person-memory': get('--edge-person-memory', 'rgba(110,120,140,.45)'),
    '--edge-person-person': get('--edge-person-person', '#e8590c'),
    '--edge-memory-goal': get('--edge-memory-goal', '#37b24d'),
    '--focus': get('--focus', '#f59f00'),
    '--fg': get('--fg', '#1d2330'),
    '--card': get('--card', '#fff'),
  };
}
readColours();
matchMedia('(prefers-color-scheme: dark)').addEventListener('change', () => {
  readColours();
  requestDraw();
});

// ---- loading ----

async function load() {
  let graph;
  try {
    graph = await api('GET', '/api/brain/graph');
  } catch (error) {
    summary.replaceChildren(errorLine(error, 'Could not load the graph'));
    canvas.setAttribute('aria-label', 'Graph (not loaded)');
    showError(error, 'Could not load the graph');
    return;
  }
  const start = performance.now();
  nodes = graph.nodes.filter((node) => KINDS[node.kind]);
  byId = new Map(nodes.map((node, i) => [node.id, i]));
  edges = [];
  edgesByKind = { person_memory: [], person_person: [], memory_goal: [] };
  adjacency = nodes.map(() => []);
  const links = [];
  for (const edge of graph.edges) {
    const source = byId.get(edge.source);
    const target = byId.get(edge.target);
    if (source === undefined || target === undefined || source === target) continue;
    const e = edges.length;
    edges.push({ source, target, kind: edge.kind, label: edge.label || null });
    (edgesByKind[edge.kind] || (edgesByKind[edge.kind] = [])).push(e);
    adjacency[source].push(e);
    adjacency[target].push(e);
    links.push(source, target);
  }
  hidden = new Uint8Array(nodes.length);
  canvas.dataset.nodes = String(nodes.length);
  canvas.dataset.edges = String(edges.length);
  describe();
  fillFinder();
  resize();
  if (nodes.length === 0) {
    canvas.dataset.layoutMs = '0';
    canvas.dataset.layoutTicks = '0';
    summary.textContent = 'The graph is empty: memories, persons and goals appear here as Engram learns them.';
    requestDraw();
    return;
  }
  layout = new ForceLayout(nodes.length, Int32Array.from(links), {
    linkDistance: 30,
    charge: -30,
  });
  firstLayout = { start, computeMs: 0, drawMs: 0, frames: 0, slices: 0, drawnAt: start };
  ensureRunning();
}

function counts() {
  const count = { memory: 0, person: 0, goal: 0, total: 0 };
  nodes.forEach((node, i) => {
    if (hidden[i]) return;
    count[node.kind] += 1;
    count.total += 1;
  });
  let relationships = 0;
  for (const edge of edges) if (!hidden[edge.source] && !hidden[edge.target]) relationships += 1;
  return { ...count, relationships };
}

function describe(layoutMs) {
  const c = counts();
  const parts = `${plural(c.memory, 'memory', 'memories')}, ${plural(c.person, 'person', 'persons')}, ${plural(c.goal, 'goal', 'goals')}`;
  const text = `${plural(c.total, 'node', 'nodes')} (${parts}) and ${plural(c.relationships, 'relationship', 'relationships')}`;
  canvas.setAttribute('aria-label', `Graph of ${text}. Use “Find a node” to explore it with the keyboard.`);
  if (c.total === 0) return;
  const timing = layoutMs === undefined
    ? (canvas.dataset.layoutMs ? ` · laid out in ${formatMs(Number(canvas.dataset.layoutMs))}` : ' · laying out…')
    : ` · laid out in ${formatMs(layoutMs)}`;
  summary.textContent = `${text}${timing}`;
}

function formatMs(ms) {
  return ms >= 1000 ? `${(ms / 1000).toFixed(2)} s` : `${Math.round(ms)} ms`;
}

// ---- the node finder ----

function short(text, max) {
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

function fillFinder() {
  const words = filter.value.trim().toLowerCase();
  const groups = { person: [], goal: [], memory: [] };
  nodes.forEach((node, i) => {
    if (hidden[i]) return;
    if (words && !node.label.toLowerCase().includes(words)) return;
    groups[node.kind].push(i);
  });
  const total = groups.person.length + groups.goal.length + groups.memory.length;
  const collator = new Intl.Collator(undefined, { sensitivity: 'base', numeric: true });
  const options = [h('option', { value: '' },
    total === 0 ? (nodes.length ? 'No node matches' : 'No nodes')
      : `Choose one of ${plural(total, 'node', 'nodes')}${words ? ' matching' : ''}`)];
  for (const kind of ['person', 'goal', 'memory']) {
    const list = groups[kind];
    if (list.length === 0) continue;
    list.sort((a, b) => collator.compare(nodes[a].label, nodes[b].label));
    options.push(h('optgroup', { label: `${KINDS[kind].many} (${list.length})` },
      list.map((i) => h('option', { value: nodes[i].id, selected: i === selected }, short(nodes[i].label, 80)))));
  }
  finder.replaceChildren(...options);
  if (selected >= 0 && finder.value !== nodes[selected].id) finder.value = '';
}

let filterTimer = null;
filter.addEventListener('input', () => {
  clearTimeout(filterTimer);
  filterTimer = setTimeout(fillFinder, 150);
});
finder.addEventListener('change', () => {
  const i = byId.get(finder.value);
  if (i !== undefined) select(i, { centre: true });
});

// ---- the view ----

function size() {
  return { w: canvas.clientWidth, h: canvas.clientHeight };
}

function viewChanged() {
  canvas.dataset.zoom = view.k.toFixed(4);
  canvas.dataset.pan = `${view.tx.toFixed(1)},${view.ty.toFixed(1)}`;
  requestDraw();
}

// Fits every visible node in the canvas.
function fit() {
  const { w, h: height } = size();
  if (!layout || w === 0 || height === 0) {
    view.k = 1;
    view.tx = w / 2;
    view.ty = height / 2;
    viewChanged();
    return;
  }
  let x0 = Infinity;
  let y0 = Infinity;
  let x1 = -Infinity;
  let y1 = -Infinity;
  for (let i = 0; i < nodes.length; i += 1) {
    if (hidden[i]) continue;
    const r = KINDS[nodes[i].kind].radius;
    x0 = Math.min(x0, layout.x[i] - r);
    x1 = Math.max(x1, layout.x[i] + r);
    y0 = Math.min(y0, layout.y[i] - r);
    y1 = Math.max(y1, layout.y[i] + r);
  }
  if (x0 === Infinity) {
    x0 = -1; x1 = 1; y0 = -1; y1 = 1;
  }
  const pad = 24;
  const k = clamp(Math.min((w - 2 * pad) / Math.max(x1 - x0, 1), (height - 2 * pad) / Math.max(y1 - y0, 1)), MIN_ZOOM, 2);
  view.k = k;
  view.tx = w / 2 - ((x0 + x1) / 2) * k;
  view.ty = height / 2 - ((y0 + y1) / 2) * k;
  viewChanged();
}

function clamp(value, low, high) {
  return Math.max(low, Math.min(high, value));
}

// Zooms by `factor` keeping the screen point (sx, sy) where it is.
function zoomAt(sx, sy, factor) {
  const k = clamp(view.k * factor, MIN_ZOOM, MAX_ZOOM);
  view.tx = sx - ((sx - view.tx) * k) / view.k;
  view.ty = sy - ((sy - view.ty) * k) / view.k;
  view.k = k;
  view.moved = true;
  viewChanged();
}

function centreOn(i) {
  const { w, h: height } = size();
  view.k = Math.max(view.k, 1.5);
  view.tx = w / 2 - layout.x[i] * view.k;
  view.ty = height / 2 - layout.y[i] * view.k;
  view.moved = true;
  viewChanged();
}

zoomIn.addEventListener('click', () => {
  const { w, h: height } = size();
  zoomAt(w / 2, height / 2, ZOOM_STEP);
});
zoomOut.addEventListener('click', () => {
  const { w, h: height } = size();
  zoomAt(w / 2, height / 2, 1 / ZOOM_STEP);
});
zoomReset.addEventListener('click', () => {
  view.moved = false;
  fit();
});

function resize() {
  const dpr = window.devicePixelRatio || 1;
  const { w, h: height } = size();
  const width = Math.max(1, Math.round(w * dpr));
  const tall = Math.max(1, Math.round(height * dpr));
  if (canvas.width !== width || canvas.height !== tall) {
    canvas.width = width;
    canvas.height = tall;
  }
  if (!view.moved) fit();
  else requestDraw();
}
new ResizeObserver(() => resize()).observe(wrap);

// ---- the layout loop ----

// The first layout runs in slices of SLICE_MS, each its own task (a MessageChannel
// message: not tied to the frame rate, not clamped like timers), so the page handles
// input and draws between slices; drawing happens at most once a frame. Later (after a
// drag) the graph moves one tick a frame, so the motion stays smooth.
const slices = new MessageChannel();
slices.port1.onmessage = () => layoutSlice();

function ensureRunning() {
  if (running || !layout) return;
  running = true;
  if (firstLayout) slices.port2.postMessage(0);
  else nextFrame(animate);
}

function layoutSlice() {
  const sliceStart = performance.now();
  do {
    layout.tick();
  } while (!layout.settled && performance.now() - sliceStart < SLICE_MS);
  firstLayout.computeMs += performance.now() - sliceStart;
  firstLayout.slices += 1;
  // Progress is drawn a few times a second: drawing thousands of shapes every frame
  // would cost the layout more time than it shows.
  if (layout.settled || sliceStart - firstLayout.drawnAt >= PROGRESS_MS) {
    firstLayout.drawnAt = sliceStart;
    if (!view.moved) fit();
    else requestDraw();
  }
  if (!layout.settled) {
    slices.port2.postMessage(0);
    return;
  }
  running = false;
  const ms = performance.now() - firstLayout.start;
  canvas.dataset.layoutTicks = String(layout.ticks);
  canvas.dataset.layoutSlices = String(firstLayout.slices);
  canvas.dataset.layoutComputeMs = String(Math.round(firstLayout.computeMs));
  canvas.dataset.layoutDrawMs = String(Math.round(firstLayout.drawMs));
  canvas.dataset.layoutFrames = String(firstLayout.frames);
  canvas.dataset.layoutMs = String(Math.round(ms));
  firstLayout = null;
  describe(ms);
}

function animate() {
  layout.tick();
  if (!view.moved) fit();
  draw();
  if (layout.settled) {
    running = false;
    return;
  }
  nextFrame(animate);
}

// ---- drawing ----

let drawPending = false;
function requestDraw() {
  if (drawPending) return;
  drawPending = true;
  nextFrame(draw);
}

function screenRadius(i) {
  return Math.max(2, KINDS[nodes[i].kind].radius * view.k);
}

function shapePath(shape, x, y, r) {
  if (shape === 'circle') {
    ctx.moveTo(x + r, y);
    ctx.arc(x, y, r, 0, 2 * Math.PI);
  } else if (shape === 'square') {
    const s = r * 0.9;
    ctx.rect(x - s, y - s, 2 * s, 2 * s);
  } else {
    const s = r * 1.2;
    ctx.moveTo(x, y - s);
    ctx.lineTo(x + s, y);
    ctx.lineTo(x, y + s);
    ctx.lineTo(x - s, y);
    ctx.closePath();
  }
}

function draw() {
  drawPending = false;
  if (firstLayout) {
    const drawStart = performance.now();
    paint();
    firstLayout.drawMs += performance.now() - drawStart;
    firstLayout.frames += 1;
  } else {
    paint();
  }
}

function paint() {
  const dpr = window.devicePixelRatio || 1;
  const { w, h: height } = size();
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  ctx.clearRect(0, 0, w, height);
  if (!layout) {
    if (nodes.length === 0 && canvas.dataset.layoutMs) {
      ctx.fillStyle = colours['--fg'];
      ctx.font = '14px system-ui, sans-serif';
      ctx.textAlign = 'center';
      ctx.fillText('Nothing to draw yet', w / 2, height / 2);
    }
    return;
  }
  const { k, tx, ty } = view;
  const { x, y } = layout;
  const margin = 12;
  const sx = (i) => x[i] * k + tx;
  const sy = (i) => y[i] * k + ty;
  const visible = (px, py, r) => px + r >= -margin && px - r <= w + margin && py + r >= -margin && py - r <= height + margin;

  // Edges: one path per kind; a segment whose box misses the view is skipped.
  for (const [kind, list] of Object.entries(edgesByKind)) {
    if (list.length === 0) continue;
    const style = EDGE_KINDS[kind] || EDGE_KINDS.person_memory; // a kind this page does not know yet
    ctx.beginPath();
    for (const e of list) {
      const { source, target } = edges[e];
      if (hidden[source] || hidden[target]) continue;
      const x0 = sx(source);
      const y0 = sy(source);
      const x1 = sx(target);
      const y1 = sy(target);
      if (Math.max(x0, x1) < 0 || Math.min(x0, x1) > w || Math.max(y0, y1) < 0 || Math.min(y0, y1) > height) continue;
      ctx.moveTo(x0, y0);
      ctx.lineTo(x1, y1);
    }
    ctx.strokeStyle = colours[style.colour];
    ctx.lineWidth = style.width;
    ctx.setLineDash(style.dash);
    ctx.stroke();
  }
  ctx.setLineDash([]);

  // The selected node's edges, highlighted.
  if (selected >= 0) {
    ctx.beginPath();
    for (const e of adjacency[selected]) {
      const { source, target } = edges[e];
      if (hidden[source] || hidden[target]) continue;
      ctx.moveTo(sx(source), sy(source));
      ctx.lineTo(sx(target), sy(target));
    }
    ctx.strokeStyle = colours['--focus'];
    ctx.lineWidth = 2.5;
    ctx.stroke();
  }

  // Nodes: one path per kind, outlined when large enough to tell apart.
  const labelled = [];
  for (const kind of DRAW_ORDER) {
    const { shape, colour } = KINDS[kind];
    ctx.beginPath();
    let outline = false;
    for (let i = 0; i < nodes.length; i += 1) {
      if (hidden[i] || nodes[i].kind !== kind) continue;
      const px = sx(i);
      const py = sy(i);
      const r = screenRadius(i);
      if (!visible(px, py, r)) continue;
      shapePath(shape, px, py, r);
      if (r >= 4) outline = true;
      if (r >= 7 && labelled.length < MAX_LABELS) labelled.push(i);
    }
    ctx.fillStyle = colours[colour];
    ctx.fill();
    if (outline) {
      ctx.strokeStyle = colours['--card'];
      ctx.lineWidth = 1;
      ctx.stroke();
    }
  }

  // Rings around the hovered and the selected node.
  for (const [i, width] of [[hovered, 2], [selected, 3]]) {
    if (i < 0 || hidden[i]) continue;
    ctx.beginPath();
    shapePath(KINDS[nodes[i].kind].shape, sx(i), sy(i), screenRadius(i) + 3);
    ctx.strokeStyle = i === selected ? colours['--focus'] : colours['--fg'];
    ctx.lineWidth = width;
    ctx.stroke();
  }

  // Labels: nodes drawn large enough, then the hovered and selected ones.
  for (const i of [hovered, selected]) if (i >= 0 && !hidden[i] && !labelled.includes(i)) labelled.push(i);
  if (labelled.length) {
    ctx.font = '12px system-ui, sans-serif';
    ctx.textAlign = 'left';
    ctx.textBaseline = 'middle';
    ctx.lineJoin = 'round';
    for (const i of labelled) {
      const text = short(nodes[i].label, 40);
      const px = sx(i) + screenRadius(i) + 4;
      const py = sy(i);
      ctx.strokeStyle = colours['--card'];
      ctx.lineWidth = 3;
      ctx.strokeText(text, px, py);
      ctx.fillStyle = colours['--fg'];
      ctx.fillText(text, px, py);
    }
  }
}

// ---- pointer: pan, drag a node, click, wheel and pinch zoom ----

// The node under the screen point (sx, sy), or -1; persons and goals win over
// memories, as they are drawn on top.
function nodeAt(px, py) {
  if (!layout) return -1;
  let best = -1;
  let bestScore = Infinity;
  const rank = { person: 0, goal: 1, memory: 2 };
  for (let i = 0; i < nodes.length; i += 1) {
    if (hidden[i]) continue;
    const dx = layout.x[i] * view.k + view.tx - px;
    const dy = layout.y[i] * view.k + view.ty - py;
    const reach = screenRadius(i) + 3;
    const d2 = dx * dx + dy * dy;
    if (d2 > reach * reach) continue;
    const score = rank[nodes[i].kind] * 1e6 + d2;
    if (score < bestScore) {
      bestScore = score;
      best = i;
    }
  }
  return best;
}

function point(event) {
  const box = canvas.getBoundingClientRect();
  return { x: event.clientX - box.left, y: event.clientY - box.top };
}

const pointers = new Map();
let gesture = null; // {node, startX, startY, lastX, lastY, moved} or {pinch, distance}

canvas.addEventListener('pointerdown', (event) => {
  if (!layout) return;
  canvas.setPointerCapture(event.pointerId);
  const p = point(event);
  pointers.set(event.pointerId, p);
  if (pointers.size === 2) {
    const [a, b] = [...pointers.values()];
    endNodeDrag();
    gesture = { pinch: true, distance: Math.hypot(a.x - b.x, a.y - b.y) || 1 };
    return;
  }
  gesture = { node: nodeAt(p.x, p.y), startX: p.x, startY: p.y, lastX: p.x, lastY: p.y, moved: false };
  canvas.classList.add('grabbing');
});

canvas.addEventListener('pointermove', (event) => {
  if (!layout) return;
  const p = point(event);
  if (pointers.has(event.pointerId)) pointers.set(event.pointerId, p);
  if (!gesture) {
    const over = nodeAt(p.x, p.y);
    if (over !== hovered) {
      hovered = over;
      canvas.classList.toggle('over-node', over >= 0);
      requestDraw();
    }
    return;
  }
  if (gesture.pinch) {
    if (pointers.size < 2) return;
    const [a, b] = [...pointers.values()];
    const distance = Math.hypot(a.x - b.x, a.y - b.y) || 1;
    zoomAt((a.x + b.x) / 2, (a.y + b.y) / 2, distance / gesture.distance);
    gesture.distance = distance;
    return;
  }
  if (!gesture.moved && Math.hypot(p.x - gesture.startX, p.y - gesture.startY) < DRAG_THRESHOLD) return;
  gesture.moved = true;
  if (gesture.node >= 0) {
    const i = gesture.node;
    layout.pin(i, (p.x - view.tx) / view.k, (p.y - view.ty) / view.k);
    layout.alphaTarget = 0.3;
    layout.reheat(0.3);
    ensureRunning();
    requestDraw();
  } else {
    view.tx += p.x - gesture.lastX;
    view.ty += p.y - gesture.lastY;
    view.moved = true;
    viewChanged();
  }
  gesture.lastX = p.x;
  gesture.lastY = p.y;
});

function endNodeDrag() {
  if (gesture && !gesture.pinch && gesture.node >= 0 && gesture.moved) {
    layout.unpin(gesture.node);
    layout.alphaTarget = 0;
  }
}

function pointerEnd(event, cancelled) {
  pointers.delete(event.pointerId);
  if (!gesture) return;
  if (gesture.pinch) {
    if (pointers.size === 0) gesture = null;
    return;
  }
  if (!gesture.moved && !cancelled) {
    if (gesture.node >= 0) select(gesture.node, { centre: false });
    else select(-1);
  }
  endNodeDrag();
  gesture = null;
  canvas.classList.remove('grabbing');
}
canvas.addEventListener('pointerup', (event) => pointerEnd(event, false));
canvas.addEventListener('pointercancel', (event) => pointerEnd(event, true));
canvas.addEventListener('pointerleave', () => {
  if (hovered >= 0 && !gesture) {
    hovered = -1;
    canvas.classList.remove('over-node');
    requestDraw();
  }
});

canvas.addEventListener('wheel', (event) => {
  if (!layout) return;
  event.preventDefault();
  const p = point(event);
  const unit = event.deltaMode === 1 ? 0.05 : event.deltaMode === 2 ? 1 : 0.0015;
  zoomAt(p.x, p.y, Math.exp(-event.deltaY * unit));
}, { passive: false });

// ---- selection and the detail panel ----

let detailRequest = 0;

function select(i, { centre = false } = {}) {
  selected = i;
  if (i >= 0) {
    canvas.dataset.selected = nodes[i].id;
    if (finder.value !== nodes[i].id) {
      finder.value = nodes[i].id;
      if (finder.value !== nodes[i].id) finder.value = ''; // filtered out of the finder
    }
    if (centre) centreOn(i);
  } else {
    delete canvas.dataset.selected;
    finder.value = '';
  }
  requestDraw();
  showDetail(i);
}

function neighbours(i) {
  const seen = new Map();
  for (const e of adjacency[i]) {
    const { source, target, label } = edges[e];
    const other = source === i ? target : source;
    if (hidden[other]) continue;
    if (!seen.has(other)) seen.set(other, new Set());
    if (label && !label.startsWith('mem_')) seen.get(other).add(label);
  }
  return [...seen.entries()];
}

function neighbourList(i) {
  const list = neighbours(i);
  if (list.length === 0) return h('p', { class: 'hint' }, 'No relationships.');
  const rank = { person: 0, goal: 1, memory: 2 };
  list.sort((a, b) => rank[nodes[a[0]].kind] - rank[nodes[b[0]].kind]);
  const shown = list.slice(0, MAX_NEIGHBOURS);
  return [
    h('ul', { class: 'graph-neighbours' },
      shown.map(([j, labels]) => h('li', {},
        h('span', { class: `swatch swatch-${nodes[j].kind}`, 'aria-hidden': 'true' }),
        h('button', { type: 'button', class: 'link-button', onclick: () => select(j, { centre: true }) },
          short(nodes[j].label, 80),
          h('span', { class: 'visually-hidden' }, ` (${KINDS[nodes[j].kind].one}; show in the graph)`)),
        labels.size ? h('span', { class: 'relation' }, ` · ${[...labels].join(', ')}`) : null))),
    list.length > shown.length ? h('p', { class: 'hint' }, `and ${list.length - shown.length} more`) : null,
  ];
}

async function showDetail(i) {
  const request = ++detailRequest;
  if (i < 0) {
    detailStatus.textContent = '';
    detailTitle.textContent = 'Details';
    render(detailBody, h('p', { class: 'hint' }, 'Click a node, or choose one in “Find a node”, to see it here.'));
    return;
  }
  const node = nodes[i];
  detailStatus.textContent = `Selected ${KINDS[node.kind].one}: ${short(node.label, 80)}`;
  detailTitle.textContent = node.kind === 'person' ? 'Person' : node.kind === 'goal' ? 'Goal' : 'Memory';
  render(detailBody, h('p', { class: 'hint' }, `Loading “${short(node.label, 60)}”…`));
  try {
    if (node.kind === 'person') {
      const person = await api('GET', `/api/brain/persons/${encodeURIComponent(node.id)}`);
      if (request !== detailRequest) return;
      render(detailBody,
        h('p', { class: 'graph-detail-name' },
          h('a', { href: `/second-brain/persons/${encodeURIComponent(person.id)}` }, person.name)),
        person.aliases.length ? h('p', {}, `Also called ${person.aliases.join(', ')}`) : null,
        h('p', { class: 'meta' }, `${plural(person.memory_count, 'memory', 'memories')} · last seen `, timeAgo(person.last_seen)),
        h('p', {}, h('a', { href: `/second-brain/persons/${encodeURIComponent(person.id)}` }, `Open ${person.name}’s page`)),
        h('h3', {}, 'Connected'),
        neighbourList(i));
    } else {
      const memory = await api('GET', `/api/brain/memory/${encodeURIComponent(node.id)}`);
      if (request !== detailRequest) return;
      render(detailBody,
        h('ul', { class: 'memories' }, memoryCard(memory, { onDeleted: () => removeNode(i) })),
        h('h3', {}, 'Connected'),
        neighbourList(i));
    }
  } catch (error) {
    if (request !== detailRequest) return;
    if (error.status === 404) {
      render(detailBody, h('p', { class: 'error', role: 'alert' },
        `This ${KINDS[node.kind].one} no longer exists (${error.message}).`));
    } else {
      render(detailBody, errorLine(error, `Could not load this ${KINDS[node.kind].one}`));
      showError(error, `Could not load this ${KINDS[node.kind].one}`);
    }
  }
}

// A memory deleted from the detail panel leaves the graph.
function removeNode(i) {
  hidden[i] = 1;
  if (selected === i) select(-1);
  if (hovered === i) hovered = -1;
  fillFinder();
  describe();
  requestDraw();
}

// An edited memory keeps its node; its label follows the new summary.
document.addEventListener('engram:changed', async () => {
  const i = selected;
  if (i < 0 || nodes[i].kind === 'person' || hidden[i]) return;
  try {
    const memory = await api('GET', `/api/brain/memory/${encodeURIComponent(nodes[i].id)}`);
    if (memory.summary !== nodes[i].label) {
      nodes[i].label = memory.summary;
      fillFinder();
      requestDraw();
    }
  } catch (error) {
    if (error.status !== 404) showError(error, 'Could not refresh the graph');
  }
});

// Where node `id` is drawn, in CSS pixels from the canvas's top left corner (for the
// browser tests, which click and drag nodes as a user does, and for debugging).
canvas.nodePosition = (id) => {
  const i = byId.get(id);
  if (i === undefined || !layout || hidden[i]) return null;
  return { x: layout.x[i] * view.k + view.tx, y: layout.y[i] * view.k + view.ty, running };
};

load();
