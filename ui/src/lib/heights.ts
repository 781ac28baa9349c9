// Item heights for a variable-height virtual list: measured where known, estimated
// elsewhere, held in a Fenwick tree so offsets and "which item is at y" are O(log n)
// even for hundreds of thousands of items.

/**
 * What the virtual list (components/VirtualList.svelte) asks of its item heights. `Heights`
 * keeps one per item; a list whose items are of a few fixed kinds can keep one per kind
 * (lib/rosterLines.ts), so that moving items costs nothing here.
 */
export interface Sizes {
  readonly count: number;
  /** Sum of the heights of items [0, index). */
  offset(index: number): number;
  total(): number;
  /** The item covering pixel `y` (clamped to [0, count-1]); 0 when empty. */
  indexAt(y: number): number;
  /** Records a measured height; returns how much the total changed (0: nothing moved). */
  set(index: number, height: number): number;
}

export class Heights implements Sizes {
  #n = 0;
  #values = new Float64Array(0);
  #tree = new Float64Array(1);
  #measured = new Uint8Array(0);

  constructor(
    count: number,
    readonly estimate: number,
  ) {
    this.resize(count);
  }

  get count(): number {
    return this.#n;
  }

  /** Grows or shrinks to `count` items; new items get the estimate. O(n) when it reallocates or shrinks. */
  resize(count: number): void {
    if (count === this.#n) return;
    if (count > this.#values.length || count < this.#n) {
      const cap = count > this.#values.length ? Math.max(count, Math.ceil(this.#values.length * 1.5), 64) : this.#values.length;
      const values = new Float64Array(cap);
      const measured = new Uint8Array(cap);
      const keep = Math.min(count, this.#n);
      values.set(this.#values.subarray(0, keep));
      measured.set(this.#measured.subarray(0, keep));
      values.fill(this.estimate, keep, count);
      this.#values = values;
      this.#measured = measured;
      this.#n = count;
      this.#rebuild();
      return;
    }
    for (let i = this.#n; i < count; i++) {
      this.#values[i] = this.estimate;
      this.#measured[i] = 0;
      this.#add(i, this.estimate);
    }
    this.#n = count;
  }

  #rebuild(): void {
    const cap = this.#values.length;
    const tree = new Float64Array(cap + 1);
    for (let i = 0; i < this.#n; i++) tree[i + 1] = this.#values[i];
    for (let i = 1; i <= cap; i++) {
      const parent = i + (i & -i);
      if (parent <= cap) tree[parent] += tree[i];
    }
    this.#tree = tree;
  }

  #add(index: number, delta: number): void {
    for (let i = index + 1; i < this.#tree.length; i += i & -i) this.#tree[i] += delta;
  }

  get(index: number): number {
    return this.#values[index];
  }

  isMeasured(index: number): boolean {
    return this.#measured[index] === 1;
  }

  /** Records a measured height; returns how much it changed. */
  set(index: number, height: number): number {
    if (index < 0 || index >= this.#n) return 0;
    this.#measured[index] = 1;
    const delta = height - this.#values[index];
    if (delta === 0) return 0;
    this.#values[index] = height;
    this.#add(index, delta);
    return delta;
  }

  /** Sum of the heights of items [0, index). */
  offset(index: number): number {
    let sum = 0;
    for (let i = Math.min(index, this.#n); i > 0; i -= i & -i) sum += this.#tree[i];
    return sum;
  }

  total(): number {
    return this.offset(this.#n);
  }

  /** The item covering pixel `y` (clamped to [0, count-1]); 0 when empty. */
  indexAt(y: number): number {
    if (this.#n === 0 || y <= 0) return 0;
    let pos = 0;
    let rest = y;
    let step = 1;
    while (step * 2 < this.#tree.length) step *= 2;
    for (; step > 0; step >>= 1) {
      const next = pos + step;
      if (next < this.#tree.length && this.#tree[next] <= rest) {
        pos = next;
        rest -= this.#tree[next];
      }
    }
    return Math.min(pos, this.#n - 1);
  }
}
