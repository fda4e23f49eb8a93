// The graph page's layout (../force-layout.js) against the same layout with exact
// O(n²) repulsion, in one run: 300 ticks over a random graph of 2,000 nodes and
// 3,700 edges, three rounds. Needs only Node (`node host/dashboard/bench/force-layout.mjs`);
// it is not part of the build or the tests. The browser's own timing of the whole
// first layout is printed by `cargo test -p engram-e2e --test dashboard -- two_thousand --nocapture`.

import { readFileSync } from 'node:fs';

const source = readFileSync(new URL('../force-layout.js', import.meta.url), 'utf8');
const { ForceLayout } = await import(`data:text/javascript,${encodeURIComponent(source)}`);

const NODES = 2000;
const EDGES = 3700;
const TICKS = 300;

let seed = 7;
const random = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
const links = new Int32Array(EDGES * 2);
for (let e = 0; e < EDGES; e += 1) {
  const s = Math.floor(random() * NODES);
  const t = (s + 1 + Math.floor(random() * (NODES - 1))) % NODES;
  links[2 * e] = s;
  links[2 * e + 1] = t;
}

// The baseline: every pair, with the layout's own force formula.
class ExactRepulsion extends ForceLayout {
  buildTree() {}

  applyCharge() {
    const { n, x, y, vx, vy } = this;
    const strength = this.charge * this.alpha;
    for (let i = 0; i < n; i += 1) {
      for (let j = 0; j < n; j += 1) {
        if (i === j) continue;
        const dx = x[j] - x[i];
        const dy = y[j] - y[i];
        let l = dx * dx + dy * dy;
        if (l < 1) l = Math.sqrt(l);
        const f = strength / l;
        vx[i] += dx * f;
        vy[i] += dy * f;
      }
    }
  }
}

function time(Layout) {
  const layout = new Layout(NODES, links);
  const start = performance.now();
  for (let k = 0; k < TICKS; k += 1) layout.tick();
  return performance.now() - start;
}

for (let round = 1; round <= 3; round += 1) {
  const barnesHut = time(ForceLayout);
  const exact = time(ExactRepulsion);
  console.log(`${TICKS} ticks, ${NODES} nodes, ${EDGES} edges: Barnes-Hut ${barnesHut.toFixed(0)} ms, `
    + `exact ${exact.toFixed(0)} ms (${(exact / barnesHut).toFixed(1)}x)`);
}
