// A force-directed layout for the graph page, built for thousands of nodes: repulsion
// between every pair of nodes through a Barnes–Hut quadtree (O(n log n) a tick
// instead of O(n²)), springs along the edges, a weak pull towards the centre so
// unconnected nodes stay near, and a cooling `alpha` that ends the layout after a
// fixed number of ticks (about 300 from a cold start). The forces follow d3-force's
// well-tried formulas; positions live in typed arrays so a tick allocates nothing.
//
// The caller runs the ticks (see the graph page: a slice of a few milliseconds per
// animation frame, so the page stays responsive and draws the progress meanwhile).

const THETA2 = 0.81; // Barnes–Hut opening criterion θ = 0.9, squared
const DISTANCE_MIN2 = 1;
const MAX_DEPTH = 48; // coincident points below this depth share one leaf

export class ForceLayout {
  // `count` nodes; `links` is a flat Int32Array [source0, target0, source1, ...] of
  // node indices; `radius[i]` (optional) spaces larger nodes further apart.
  constructor(count, links, options = {}) {
    this.n = count;
    this.links = links;
    this.linkCount = links.length / 2;
    this.charge = options.charge ?? -30;
    this.linkDistance = options.linkDistance ?? 30;
    this.gravity = options.gravity ?? 0.06;
    this.velocityDecay = 0.6; // the velocity kept each tick (d3's 1 - 0.4)
    this.alpha = 1;
    this.alphaMin = options.alphaMin ?? 0.002;
    this.alphaTarget = 0;
    this.alphaDecay = 1 - Math.pow(this.alphaMin, 1 / (options.ticks ?? 300));
    this.ticks = 0;

    this.x = new Float64Array(count);
    this.y = new Float64Array(count);
    this.vx = new Float64Array(count);
    this.vy = new Float64Array(count);
    this.pinned = new Uint8Array(count);
    this.px = new Float64Array(count);
    this.py = new Float64Array(count);

    // Link strength and bias by degree, as d3: hubs move less than leaves.
    const degree = new Float64Array(count);
    for (let k = 0; k < links.length; k += 1) degree[links[k]] += 1;
    this.linkStrength = new Float64Array(this.linkCount);
    this.linkBias = new Float64Array(this.linkCount);
    for (let e = 0; e < this.linkCount; e += 1) {
      const s = links[2 * e];
      const t = links[2 * e + 1];
      this.linkStrength[e] = 1 / Math.max(1, Math.min(degree[s], degree[t]));
      this.linkBias[e] = degree[s] / (degree[s] + degree[t]);
    }

    // Phyllotaxis start, as d3: an even disc, deterministic, settles quickly.
    const angle = Math.PI * (3 - Math.sqrt(5));
    for (let i = 0; i < count; i += 1) {
      const r = 10 * Math.sqrt(0.5 + i);
      this.x[i] = r * Math.cos(i * angle);
      this.y[i] = r * Math.sin(i * angle);
    }

    // The quadtree, rebuilt every tick into preallocated arrays. A cell is empty
    // (kind 0), a leaf holding a chain of coincident points (1), or internal (2).
    const cells = Math.max(64, 4 * count + 16);
    this.cellCap = cells;
    this.kind = new Uint8Array(cells);
    this.child = new Int32Array(cells * 4);
    this.point = new Int32Array(cells);
    this.size = new Float64Array(cells);
    this.mass = new Float64Array(cells);
    this.cx = new Float64Array(cells);
    this.cy = new Float64Array(cells);
    this.nextPoint = new Int32Array(count);
    this.cellCount = 0;
    this.stack = new Int32Array(4 * MAX_DEPTH + 8);
    this.random = lcg(1);
  }

  get settled() {
    return this.alpha < this.alphaMin && this.alphaTarget < this.alphaMin;
  }

  // Warms the layout up again (after a drag), from `alpha` at least.
  reheat(alpha = 0.3) {
    this.alpha = Math.max(this.alpha, alpha);
  }

  pin(i, x, y) {
    this.pinned[i] = 1;
    this.px[i] = x;
    this.py[i] = y;
    this.x[i] = x;
    this.y[i] = y;
  }

  unpin(i) {
    this.pinned[i] = 0;
  }

  tick() {
    this.alpha += (this.alphaTarget - this.alpha) * this.alphaDecay;
    this.ticks += 1;
    const { n, x, y, vx, vy, alpha } = this;
    if (n === 0) return;
    this.applyLinks();
    this.buildTree();
    this.applyCharge();
    const g = this.gravity * alpha;
    for (let i = 0; i < n; i += 1) {
      if (this.pinned[i]) {
        x[i] = this.px[i];
        y[i] = this.py[i];
        vx[i] = 0;
        vy[i] = 0;
        continue;
      }
      vx[i] = (vx[i] - x[i] * g) * this.velocityDecay;
      vy[i] = (vy[i] - y[i] * g) * this.velocityDecay;
      x[i] += vx[i];
      y[i] += vy[i];
    }
  }

  applyLinks() {
    const { links, x, y, vx, vy, alpha, linkDistance } = this;
    for (let e = 0; e < this.linkCount; e += 1) {
      const s = links[2 * e];
      const t = links[2 * e + 1];
      let dx = x[t] + vx[t] - x[s] - vx[s];
      let dy = y[t] + vy[t] - y[s] - vy[s];
      if (dx === 0) dx = this.jiggle();
      if (dy === 0) dy = this.jiggle();
      let l = Math.sqrt(dx * dx + dy * dy);
      l = ((l - linkDistance) / l) * alpha * this.linkStrength[e];
      dx *= l;
      dy *= l;
      const b = this.linkBias[e];
      vx[t] -= dx * b;
      vy[t] -= dy * b;
      vx[s] += dx * (1 - b);
      vy[s] += dy * (1 - b);
    }
  }

  jiggle() {
    return (this.random() - 0.5) * 1e-6;
  }

  newCell(size) {
    const c = this.cellCount;
    if (c >= this.cellCap) this.grow();
    this.cellCount += 1;
    this.kind[c] = 0;
    this.size[c] = size;
    this.mass[c] = 0;
    return c;
  }

  grow() {
    const cap = this.cellCap * 2;
    const resize = (Type, old, factor = 1) => {
      const next = new Type(cap * factor);
      next.set(old);
      return next;
    };
    this.kind = resize(Uint8Array, this.kind);
    this.child = resize(Int32Array, this.child, 4);
    this.point = resize(Int32Array, this.point);
    this.size = resize(Float64Array, this.size);
    this.mass = resize(Float64Array, this.mass);
    this.cx = resize(Float64Array, this.cx);
    this.cy = resize(Float64Array, this.cy);
    this.cellCap = cap;
  }

  // Every point into a square quadtree over the current bounds, then each cell's mass
  // and centre of mass, children before parents (a child's index is always higher).
  buildTree() {
    const { n, x, y } = this;
    let x0 = Infinity;
    let y0 = Infinity;
    let x1 = -Infinity;
    let y1 = -Infinity;
    for (let i = 0; i < n; i += 1) {
      if (x[i] < x0) x0 = x[i];
      if (x[i] > x1) x1 = x[i];
      if (y[i] < y0) y0 = y[i];
      if (y[i] > y1) y1 = y[i];
    }
    const side = Math.max(x1 - x0, y1 - y0, 1) * 1.0001;
    this.cellCount = 0;
    this.rootX = x0;
    this.rootY = y0;
    this.newCell(side);
    for (let i = 0; i < n; i += 1) this.insert(i, x0, y0, side);

    const { kind, child, point, mass, cx, cy, nextPoint } = this;
    for (let c = this.cellCount - 1; c >= 0; c -= 1) {
      if (kind[c] === 1) {
        let m = 0;
        let sx = 0;
        let sy = 0;
        for (let p = point[c]; p !== -1; p = nextPoint[p]) {
          m += 1;
          sx += x[p];
          sy += y[p];
        }
        mass[c] = m;
        cx[c] = sx / m;
        cy[c] = sy / m;
      } else if (kind[c] === 2) {
        let m = 0;
        let sx = 0;
        let sy = 0;
        for (let q = 0; q < 4; q += 1) {
          const k = child[4 * c + q];
          if (k === -1) continue;
          m += mass[k];
          sx += cx[k] * mass[k];
          sy += cy[k] * mass[k];
        }
        mass[c] = m;
        cx[c] = m ? sx / m : 0;
        cy[c] = m ? sy / m : 0;
      }
    }
  }

  insert(i, x0, y0, side) {
    const { x, y } = this;
    let c = 0;
    let depth = 0;
    for (;;) {
      const kind = this.kind[c];
      if (kind === 0) {
        this.kind[c] = 1;
        this.point[c] = i;
        this.nextPoint[i] = -1;
        return;
      }
      if (kind === 1) {
        const p = this.point[c];
        if ((x[p] === x[i] && y[p] === y[i]) || depth >= MAX_DEPTH) {
          this.nextPoint[i] = p;
          this.point[c] = i;
          return;
        }
        // Split: the existing chain moves down into its quadrant, then `i` goes on.
        this.kind[c] = 2;
        this.child.fill(-1, 4 * c, 4 * c + 4);
        const half = side / 2;
        const q = (x[p] >= x0 + half ? 1 : 0) + (y[p] >= y0 + half ? 2 : 0);
        const k = this.newCell(half);
        this.kind[k] = 1;
        this.point[k] = p;
        this.child[4 * c + q] = k;
      }
      // Internal: descend into the quadrant of `i`, creating it if empty.
      const half = side / 2;
      const right = x[i] >= x0 + half;
      const below = y[i] >= y0 + half;
      const q = (right ? 1 : 0) + (below ? 2 : 0);
      if (right) x0 += half;
      if (below) y0 += half;
      side = half;
      depth += 1;
      let k = this.child[4 * c + q];
      if (k === -1) {
        k = this.newCell(half);
        this.child[4 * c + q] = k;
      }
      c = k;
    }
  }

  applyCharge() {
    const { n, x, y, vx, vy, kind, child, point, size, mass, cx, cy, nextPoint, stack } = this;
    const strength = this.charge * this.alpha;
    for (let i = 0; i < n; i += 1) {
      const xi = x[i];
      const yi = y[i];
      let fx = 0;
      let fy = 0;
      let top = 0;
      stack[top++] = 0;
      while (top > 0) {
        const c = stack[--top];
        if (mass[c] === 0) continue;
        if (kind[c] === 2) {
          let dx = cx[c] - xi;
          let dy = cy[c] - yi;
          let l = dx * dx + dy * dy;
          const w = size[c];
          if ((w * w) / THETA2 < l) {
            // Far enough: the whole cell acts as one body at its centre of mass.
            if (l < DISTANCE_MIN2) l = Math.sqrt(DISTANCE_MIN2 * l);
            const f = (strength * mass[c]) / l;
            fx += dx * f;
            fy += dy * f;
            continue;
          }
          for (let q = 0; q < 4; q += 1) {
            const k = child[4 * c + q];
            if (k !== -1) stack[top++] = k;
          }
          continue;
        }
        for (let p = point[c]; p !== -1; p = nextPoint[p]) {
          if (p === i) continue;
          let dx = x[p] - xi;
          let dy = y[p] - yi;
          let l = dx * dx + dy * dy;
          if (dx === 0) {
            dx = this.jiggle();
            l += dx * dx;
          }
          if (dy === 0) {
            dy = this.jiggle();
            l += dy * dy;
          }
          if (l < DISTANCE_MIN2) l = Math.sqrt(DISTANCE_MIN2 * l);
          const f = strength / l;
          fx += dx * f;
          fy += dy * f;
        }
      }
      vx[i] += fx;
      vy[i] += fy;
    }
  }
}

// A small deterministic generator, so the same graph lays out the same way.
function lcg(seed) {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(1664525, s) + 1013904223) >>> 0;
    return s / 4294967296;
  };
}

// An animation frame, or a short timeout when the page is hidden (hidden pages get
// no frames, and the layout should still finish).
export function nextFrame(callback) {
  if (document.hidden) setTimeout(callback, 16);
  else requestAnimationFrame(callback);
}
