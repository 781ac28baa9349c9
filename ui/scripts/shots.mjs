// Screenshots of the built UI (fake backend) in headless Chromium, served with the app's CSP.
// Usage: npm run build && node scripts/shots.mjs [outDir]   (needs /usr/bin/chromium)
import { createReadStream, existsSync, mkdirSync, statSync } from 'node:fs';
import { createServer } from 'node:http';
import { extname, join, normalize } from 'node:path';
import { chromium } from 'playwright-core';

const dist = new URL('../dist/', import.meta.url).pathname;
const out = process.argv[2] ?? '/tmp/ui-shots';
mkdirSync(out, { recursive: true });

const CSP =
  "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src ipc: http://ipc.localhost";
const TYPES = { '.html': 'text/html', '.js': 'text/javascript', '.css': 'text/css', '.svg': 'image/svg+xml', '.png': 'image/png' };

const server = createServer((req, res) => {
  const path = normalize(decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname)).replace(/^(\.\.[/\\])+/, '');
  let file = join(dist, path);
  if (!existsSync(file) || statSync(file).isDirectory()) file = join(dist, 'index.html');
  res.writeHead(200, { 'content-type': TYPES[extname(file)] ?? 'application/octet-stream', 'content-security-policy': CSP });
  createReadStream(file).pipe(res);
});
await new Promise((r) => server.listen(0, '127.0.0.1', r));
const base = `http://127.0.0.1:${server.address().port}/`;

const browser = await chromium.launch({
  executablePath: '/usr/bin/chromium',
  args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});
const problems = [];
async function newPage(query, colorScheme = 'dark') {
  const page = await browser.newPage({ viewport: { width: 1440, height: 880 }, colorScheme });
  page.on('console', (m) => (m.type() === 'error' || m.type() === 'warning') && problems.push(`${query}: console ${m.type()}: ${m.text()}`));
  page.on('pageerror', (e) => problems.push(`${query}: pageerror: ${e.message}`));
  await page.goto(base + query);
  return page;
}
const shot = (page, name) => page.screenshot({ path: join(out, name) });

// 1. Roster + open timeline of a session waiting for approval.
let page = await newPage('?still');
await page.waitForSelector('[data-testid=roster-row]');
const approval = page.locator('[data-testid=roster-row][data-status=waiting_for_approval]').first();
await approval.click();
await page.waitForSelector('[data-testid=timeline-item]');
await page.waitForTimeout(300);
await shot(page, 'roster-timeline.png');

// 2. An expanded tool call (with an error result if there is one on screen).
const tool = page.locator('[data-testid=timeline-item][data-kind=tool_call] button.head');
const errTool = page.locator('[data-testid=timeline-item][data-kind=tool_call] .tool.error button.head');
await ((await errTool.count()) ? errTool.last() : tool.nth(-2)).click();
await page.waitForTimeout(200);
await shot(page, 'tool-expanded.png');

// 3. Keyboard: j/k, Enter opens; '/' focuses search; hostile text stays text.
await page.keyboard.press('Escape');
await page.locator('[data-testid=roster-row]').first().click();
await page.keyboard.press('j');
await page.keyboard.press('j');
await page.keyboard.press('Enter');
await page.waitForTimeout(200);
const opened = await page.getAttribute('[data-testid=timeline], [data-testid=session-view]', 'data-session-id');
const selected = await page.getAttribute('[data-testid=roster-row][aria-selected=true]', 'data-session-id');
if (opened !== selected) problems.push(`keyboard: opened ${opened} but selected ${selected}`);
// Escape belongs to Claude Code inside a terminal: Ctrl+Shift+L is the way out there.
const inTerminal = await page.evaluate(() => !!document.activeElement?.closest('.xterm'));
await page.keyboard.press(inTerminal ? 'Control+Shift+L' : 'Escape');
await page.keyboard.press('/');
if ((await page.evaluate(() => document.activeElement?.getAttribute('data-testid'))) !== 'search') problems.push('/ did not focus search');
await page.keyboard.type('onerror');
await page.waitForTimeout(100);
await page.keyboard.press('Enter');
await page.keyboard.press('Enter');
await page.waitForSelector('[data-testid=timeline-item][data-kind=prompt]');
const injected = await page.evaluate(() => document.querySelectorAll('img, [data-testid=timeline] script, #app script').length);
if (injected) problems.push(`hostile text created ${injected} elements`);
await shot(page, 'hostile-text.png');

// 4. The 350,000-item transcript: opening time and scrolling far up.
await page.keyboard.press('Escape');
await page.fill('[data-testid=search]', '');
const bigId = await page.evaluate(() => {
  const rows = [...document.querySelectorAll('[data-testid=roster-row]')];
  return rows.map((r) => r.getAttribute('data-session-id'));
});
let bigOpen = -1;
for (const id of bigId) {
  const t0 = Date.now();
  await page.click(`[data-testid=roster-row][data-session-id="${id}"]`);
  await page.waitForSelector(`[data-testid=timeline][data-session-id="${id}"] [data-testid=timeline-item]`);
  const items = await page.locator('[data-testid=timeline] dd').nth(5).textContent();
  if (items && items.includes('350,000')) {
    bigOpen = Date.now() - t0;
    break;
  }
}
await page.evaluate(() => {
  const s = document.querySelector('[data-testid=timeline] .scroller');
  if (s) s.scrollTop = s.scrollHeight / 2;
});
await page.waitForTimeout(600);
const midItems = await page.locator('[data-testid=timeline-item]').count();
await shot(page, 'big-transcript-middle.png');

// 5. Live mode (timer on) for a few seconds: no errors, statuses change.
await page.close();
page = await newPage('');
await page.waitForSelector('[data-testid=roster-row]');
await page.locator('[data-testid=roster-row][data-status=working]:not([data-supervised])').first().click();
await page.waitForSelector('[data-testid=timeline-item]');
const scroller = '[data-testid=timeline] .scroller';
const metrics = () =>
  page.$eval(scroller, (s) => ({ gap: Math.round(s.scrollHeight - s.scrollTop - s.clientHeight), total: s.closest('[data-testid=timeline]')?.querySelector('dd:nth-of-type(1)') && 0 }));
const itemsText = () => page.locator('[data-testid=timeline] .meta div').filter({ hasText: 'items' }).textContent();
// While at the bottom, appended items keep the view at the bottom.
const before = await itemsText();
for (let i = 0; i < 40 && (await itemsText()) === before; i++) await page.waitForTimeout(500);
await page.waitForTimeout(300);
const followGap = (await metrics()).gap;
if (followGap > 4) problems.push(`live: not following the bottom after an append (gap ${followGap}px)`);
await shot(page, 'live.png');
// Scrolled up, new items show the "New activity" button instead of moving the view.
await page.$eval(scroller, (s) => (s.scrollTop = 0));
await page.waitForTimeout(300);
const top0 = await page.$eval(scroller, (s) => s.scrollTop);
const beforeUp = await itemsText();
for (let i = 0; i < 40 && (await itemsText()) === beforeUp; i++) await page.waitForTimeout(500);
await page.waitForTimeout(300);
const topAfter = await page.$eval(scroller, (s) => s.scrollTop);
if (Math.abs(topAfter - top0) > 1) problems.push(`live: view moved from ${top0} to ${topAfter} while scrolled up`);
if (!(await page.locator('text=New activity').count())) problems.push('live: no "New activity" button');
await shot(page, 'new-activity.png');
await page.click('text=New activity');
await page.waitForTimeout(300);
if ((await metrics()).gap > 4) problems.push('live: "New activity" did not go to the bottom');

// 6. Empty state, then the demo.
await page.close();
page = await newPage('?empty&still');
await page.waitForSelector('[data-testid=empty-state]');
await shot(page, 'empty-state.png');
await page.click('[data-testid=demo-button]');
await page.waitForSelector('[data-testid=roster-row]');
await page.locator('[data-testid=roster-row]').first().click();
await page.waitForTimeout(300);
await shot(page, 'demo.png');

// 7. Light theme.
await page.close();
page = await newPage('?still', 'light');
await page.waitForSelector('[data-testid=roster-row]');
await page.locator('[data-testid=roster-row][data-status=waiting_for_input]').first().click();
await page.waitForTimeout(300);
await shot(page, 'light.png');

// 8. 2,000 sessions, live.
await page.close();
const t0 = Date.now();
page = await newPage('?n=2000');
await page.waitForSelector('[data-testid=roster-row]');
const load2000 = Date.now() - t0;
const rowsInDom = await page.locator('[data-testid=roster-row]').count();
await page.locator('[data-testid=roster-row]').first().click();
// Time inside the page: a key press, Svelte's flush, and layout, 200 times.
const nav200 = await page.evaluate(async () => {
  const roster = document.querySelector('[role=listbox]');
  const t = performance.now();
  for (let i = 0; i < 200; i++) {
    roster.dispatchEvent(new KeyboardEvent('keydown', { key: 'j', bubbles: true }));
    await new Promise((r) => setTimeout(r, 0));
    void document.body.offsetHeight;
  }
  return Math.round(performance.now() - t);
});
// Live events on 2,000 sessions: count long tasks (> 50 ms) over 5 s.
const longTasks = await page.evaluate(
  () =>
    new Promise((resolve) => {
      let n = 0;
      new PerformanceObserver((l) => (n += l.getEntries().length)).observe({ type: 'longtask', buffered: false });
      setTimeout(() => resolve(n), 5000);
    }),
);
await shot(page, 'sessions-2000.png');

// 9. A supervised session: the terminal, typing, scrollback kept across switching away and back.
await page.close();
page = await newPage('?still&pty');
await page.waitForSelector('[data-testid=terminal][data-attached=true]');
const ptyId = await page.getAttribute('[data-testid=session-view]', 'data-session-id');
await page.click('[data-testid=terminal]');
await page.keyboard.type('explain why the tail loop drops partial lines');
await page.keyboard.press('Enter');
await page.waitForTimeout(900);
const screenText = () => page.$eval('[data-testid=terminal]', (e) => e.terminalText?.() ?? '');
if (!(await screenText()).includes('explain why the tail loop')) problems.push('terminal: typed text not echoed');
if (!(await screenText()).includes('●')) problems.push('terminal: no reply');
await shot(page, 'terminal.png');
// Leave with the chord, open another session, come back: the scrollback is replayed.
await page.keyboard.press('Control+Shift+L');
if (await page.evaluate(() => !!document.activeElement?.closest('.xterm'))) problems.push('terminal: Ctrl+Shift+L did not leave');
await page.locator('[data-testid=roster-row][data-status=waiting_for_approval]').first().click();
await page.waitForSelector('[data-testid=timeline]');
await page.click(`[data-testid=roster-row][data-session-id="${ptyId}"]`);
await page.waitForSelector('[data-testid=terminal][data-attached=true]');
await page.waitForTimeout(300);
if (!(await screenText()).includes('explain why the tail loop')) problems.push('terminal: scrollback lost after switching away and back');
await page.click('[data-testid=pane-split]');
await page.waitForTimeout(400);
await shot(page, 'terminal-split.png');

// 10. The supervision stories: banners, the terminated dialog, toasts, queued input.
for (const [story, sel, name] of [
  ['warning', '[data-testid=banner][data-kind=session_warning]', 'warning-banner.png'],
  ['terminated', '[data-testid=terminated-dialog]', 'terminated-dialog.png'],
  ['unhealthy', '[data-testid=banner][data-kind=session_unhealthy]', 'unhealthy-banner.png'],
  ['crash', '[data-testid=banner][data-kind=crash_detected]', 'crash-deferred.png'],
  ['toasts', '[data-testid=toast][data-kind=session_ready]', 'toasts.png'],
]) {
  await page.close();
  page = await newPage(`?still&${story}`);
  await page.waitForSelector('[data-testid=terminal][data-attached=true]');
  await page.waitForSelector(sel, { timeout: 5000 }).catch(() => problems.push(`${story}: ${sel} did not appear`));
  await page.waitForTimeout(350);
  await shot(page, name);
}
await page.close();
page = await newPage('?still&queued');
await page.waitForSelector('[data-testid=terminal][data-attached=true]');
await page.click('[data-testid=terminal]');
await page.keyboard.type('are the tests green?');
await page.waitForSelector('[data-testid=queued-note]', { timeout: 2000 }).catch(() => problems.push('queued: no note'));
await shot(page, 'queued-input.png');
await page.keyboard.press('Enter');
await page.waitForSelector('[data-testid=queued-note]', { state: 'detached', timeout: 4000 }).catch(() => problems.push('queued: note stayed after resume'));
await page.waitForTimeout(900);
if (!(await screenText()).includes('are the tests green?')) problems.push('queued: input not delivered after resume');
await shot(page, 'queued-delivered.png');

// 11. The new-session dialog, keyboard only.
await page.close();
page = await newPage('?still');
await page.waitForSelector('[data-testid=roster-row]');
await page.keyboard.press('c');
await page.waitForSelector('[data-testid=new-session-dialog]');
await page.keyboard.type('/home/dana/src/mimesis');
await page.waitForTimeout(200);
await shot(page, 'new-session.png');
await page.keyboard.press('Enter');
await page.waitForSelector('[data-testid=new-session-dialog]', { state: 'detached' });
await page.waitForSelector('[data-testid=terminal][data-attached=true]');
await page.waitForTimeout(300);
if (!(await page.evaluate(() => !!document.activeElement?.closest('.xterm')))) problems.push('new session: the terminal does not have the keyboard');

// 12. A /clear: the selection moves to the successor; the timeline shows the boundary.
await page.close();
page = await newPage('?still&chain');
await page.waitForSelector('[data-testid=session-view]');
const chainFirst = await page.getAttribute('[data-testid=session-view]', 'data-session-id');
await page.waitForFunction((id) => document.querySelector('[data-testid=session-view]')?.getAttribute('data-session-id') !== id, chainFirst, { timeout: 5000 }).catch(() => problems.push('chain: no switch'));
await page.click('[data-testid=pane-split]');
await page.waitForSelector('[data-testid=segment-boundary]', { timeout: 3000 }).catch(() => problems.push('chain: no segment boundary'));
await page.waitForTimeout(300);
await shot(page, 'chain-segment.png');

// 13. Resources and settings.
await page.click('[data-testid=page-resources]');
await page.waitForSelector('[data-testid=resource-row]');
await page.waitForTimeout(300);
await shot(page, 'resources.png');
await page.click('[data-testid=page-settings]');
await page.waitForSelector('[data-testid=doctor-report]');
await page.waitForTimeout(300);
await shot(page, 'settings.png');
await page.$eval('[data-testid=settings-view] .inner', (e) => (e.scrollTop = e.scrollHeight));
await page.waitForTimeout(200);
await shot(page, 'settings-hooks-doctor.png');
await page.$eval('[data-testid=settings-view] .inner', (e) => (e.scrollTop = 0));
await page.fill('[data-field="limits.idleTimeoutSecs"]', '30');
await page.fill('[data-field="agent.command"]', 'claud');
await page.click('[data-testid=settings-save]');
await page.waitForSelector('[data-testid=field-error]');
await page.evaluate(() => document.querySelector('[data-field="limits.idleTimeoutSecs"]')?.scrollIntoView({ block: 'center' }));
await shot(page, 'settings-errors.png');

// 14. Terminal throughput: 50 MB of coloured build log through the channel, batching and xterm.
await page.close();
page = await newPage('?still&flood=50');
await page.waitForSelector('[data-testid=terminal]');
const floodT0 = Date.now();
await page.evaluate(() => {
  globalThis.__longTasks = 0;
  new PerformanceObserver((l) => (globalThis.__longTasks += l.getEntries().length)).observe({ type: 'longtask', buffered: false });
});
await page.waitForFunction(() => document.querySelector('[data-testid=terminal]')?.terminalText?.(3)?.includes('FLOOD-DONE'), null, { timeout: 120_000, polling: 100 }).catch(() => problems.push('flood: did not finish'));
const floodMs = Date.now() - floodT0;
const floodLongTasks = await page.evaluate(() => globalThis.__longTasks);
const renderer = await page.getAttribute('[data-testid=terminal]', 'data-renderer');
await shot(page, 'terminal-flood.png');

// 15. The terminal in the light theme.
await page.close();
page = await newPage('?still&warning', 'light');
await page.waitForSelector('[data-testid=terminal][data-attached=true]');
await page.waitForSelector('[data-testid=banner]');
await page.waitForTimeout(300);
await shot(page, 'terminal-light.png');

await browser.close();
server.close();
console.log(
  JSON.stringify(
    { bigOpenMs: bigOpen, midItems, load2000Ms: load2000, rowsInDom, nav200Ms: nav200, longTasksIn5s: longTasks, terminalMBps: +(50 / (floodMs / 1000)).toFixed(1), terminalLongTasks: floodLongTasks, terminalRenderer: renderer },
    null,
    1,
  ),
);
if (problems.length) {
  console.log('PROBLEMS:\n' + problems.join('\n'));
  process.exitCode = 1;
}
