// Frames: User Timing marks of the window's milestones, read by the window benchmark
// (`scripts/bench window`) through `performance.getEntriesByName` (each set once), and the
// next frame as a scheduler.

export const ROSTER_FIRST = 'mimesis:roster-first';
export const ROSTER_COMPLETE = 'mimesis:roster-complete';
/** Each roster snapshot the page received (the first is the one of the launch). */
export const SNAPSHOT = 'mimesis:snapshot';

/**
 * Marks `name` once per page, at the frame after the next: the next frame's callbacks run
 * before its style, layout and paint, so only the one after it comes once the rows are on
 * screen. WebKit's own floor (`bench/webkit_floor.py`) marks its page the same way: two frames.
 */
export function markOnce(name: string): void {
  if (performance.getEntriesByName(name, 'mark').length > 0 || pending.has(name)) return;
  pending.add(name);
  requestAnimationFrame(() =>
    requestAnimationFrame(() => {
      performance.mark(name);
      pending.delete(name);
    }),
  );
}

const pending = new Set<string>();

/** Runs `fn` at the next frame, or within 100 ms when no frame comes (a hidden window). */
export function nextFrame(fn: () => void): void {
  const run = once(fn);
  requestAnimationFrame(run);
  setTimeout(run, 100);
}

/**
 * Runs `fn` once the next frame is painted and the one after it has begun (a task after that
 * frame's callbacks), or after a second when no frame comes (a hidden window). A task queued
 * just after the paint would run before the next frame's callbacks, and the rows under the
 * view, the parts preloaded and the stores' listeners (what waits for the roster's paint)
 * came to 40-100 ms: the frame after the roster's, which WebKit's floor also waits for
 * (`markOnce`), waited for them.
 */
export function afterPaint(fn: () => void): void {
  const run = once(fn);
  requestAnimationFrame(() => requestAnimationFrame(() => setTimeout(run, 0)));
  setTimeout(run, 1000);
}

/** `fn`, run at the first of several calls only. */
function once(fn: () => void): () => void {
  let done = false;
  return () => {
    if (done) return;
    done = true;
    fn();
  };
}
