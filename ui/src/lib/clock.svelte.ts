// One shared ticking "now" for every relative time on screen, so rows re-render once a
// second together instead of each keeping its own timer.

class Clock {
  now = $state(Date.now());
  #timer: ReturnType<typeof setInterval> | null = null;

  start(): void {
    this.#timer ??= setInterval(() => (this.now = Date.now()), 1000);
  }

  stop(): void {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = null;
  }
}

export const clock = new Clock();
