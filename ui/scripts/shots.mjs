// Screenshots of the built UI (replaying recordings of the app) in headless Chromium, served with
// the app's CSP.
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

// The preview replays recordings of the real app (src/lib/preview.ts): ?rec= picks one, ?still
// plays nothing by itself, ?fast plays without the recorded pauses.

// 1. Roster + an open timeline (the demo, recorded).
let page = await newPage('?still');
await page.waitForSelector('[data-testid=roster-row]');
await page.locator('[data-testid=roster-row]').first().click();
await page.waitForSelector('[data-testid=timeline-item]');
await page.waitForTimeout(300);
await shot(page, 'roster-timeline.png');

// 2. An expanded tool call.
const tools = page.locator('[data-testid=timeline-item][data-kind=tool_call] button.head');
if (await tools.count()) {
  await tools.last().click();
  await page.waitForTimeout(200);
  await shot(page, 'tool-expanded.png');
}

// 3. Keyboard: j/k, Enter opens; '/' focuses search.
await page.keyboard.press('Escape');
await page.locator('[data-testid=roster-row]').first().click();
await page.keyboard.press('j');
await page.keyboard.press('j');
await page.keyboard.press('Enter');
await page.waitForTimeout(200);
const opened = await page.getAttribute('[data-testid=timeline], [data-testid=session-view]', 'data-session-id');
const selected = await page.getAttribute('[data-testid=roster-row][aria-selected=true]', 'data-session-id');
if (opened !== selected) problems.push(`keyboard: opened ${opened} but selected ${selected}`);
await page.keyboard.press('Escape');
await page.keyboard.press('/');
if ((await page.evaluate(() => document.activeElement?.getAttribute('data-testid'))) !== 'search') problems.push('/ did not focus search');

// 4. Live: the demo's recorded updates, played as fast as they come.
await page.close();
page = await newPage('?fast');
await page.waitForSelector('[data-testid=roster-row]');
await page.locator('[data-testid=roster-row]').first().click();
await page.waitForSelector('[data-testid=timeline-item]');
await page.waitForTimeout(1000);
await shot(page, 'live.png');

// 5. Empty state, then the demo.
await page.close();
page = await newPage('?load=1&fast');
await page.waitForSelector('[data-testid=empty-state]');
await shot(page, 'empty-state.png');
await page.click('[data-testid=demo-button]');
await page.waitForSelector('[data-testid=roster-row]');
await page.locator('[data-testid=roster-row]').first().click();
await page.waitForTimeout(300);
await shot(page, 'demo.png');

// 6. Light theme.
await page.close();
page = await newPage('?still', 'light');
await page.waitForSelector('[data-testid=roster-row]');
await page.locator('[data-testid=roster-row]').first().click();
await page.waitForTimeout(300);
await shot(page, 'light.png');

/** New session › the recordings' folder › Start, keyboard only; resolves when the terminal is there. */
async function startSession(p) {
  await p.waitForSelector('[data-testid=new-session-button]');
  await p.keyboard.press('c');
  await p.waitForSelector('[data-testid=new-session-dialog]');
  await p.keyboard.type('/home/user/src/shop');
  await p.waitForSelector('[data-testid=new-session-start]:not([disabled])');
  await p.keyboard.press('Enter');
  await p.waitForSelector('[data-testid=new-session-dialog]', { state: 'detached' });
  await p.waitForSelector('[data-testid=terminal][data-attached=true]');
}

// 7. A supervised session (recorded): the terminal, its permission dialog, the duration
//    limit's warning and end, Resources and Settings.
await page.close();
page = await newPage('?rec=pty&fast');
await startSession(page);
if (!(await page.evaluate(() => !!document.activeElement?.closest('.xterm')))) problems.push('new session: the terminal does not have the keyboard');
await page.waitForSelector('[data-testid=approval-bar]');
await shot(page, 'terminal-approval.png');
await page.click('[data-testid=approve-once]');
await page.waitForSelector('[data-testid=terminated-dialog]', { timeout: 5000 }).catch(() => problems.push('pty: no terminated dialog'));
await shot(page, 'terminated-dialog.png');
await page.click('[data-testid=terminated-resume]');
await page.waitForSelector('[data-testid=banner][data-kind=session_warning]', { timeout: 5000 }).catch(() => problems.push('pty: no warning banner'));
await shot(page, 'warning-banner.png');
await page.click('[data-testid=page-resources]');
await page.waitForSelector('[data-testid=resource-view]');
await page.waitForTimeout(300);
await shot(page, 'resources.png');
await page.click('[data-testid=page-settings]');
await page.waitForSelector('[data-testid=doctor-report]');
await page.waitForTimeout(300);
await shot(page, 'settings.png');
await page.$eval('[data-testid=settings-view] .inner', (e) => (e.scrollTop = e.scrollHeight));
await page.waitForTimeout(200);
await shot(page, 'settings-hooks-doctor.png');

// 8. Faults (recorded): a crash while working, the memory limit's restart, unhealthy.
for (const [sel, name] of [
  ['[data-testid=banner][data-kind=crash_detected]', 'crash-deferred.png'],
  ['[data-testid=toast][data-kind=session_ready]', 'toasts.png'],
  ['[data-testid=banner][data-kind=session_unhealthy]', 'unhealthy-banner.png'],
]) {
  await page.close();
  page = await newPage('?rec=faults');
  await startSession(page);
  await page.waitForSelector(sel, { timeout: 60_000 }).catch(() => problems.push(`faults: ${sel} did not appear`));
  await page.waitForTimeout(350);
  await shot(page, name);
}

// 9. Terminal throughput: 50 MB of coloured build log through the channel, batching and xterm.
await page.close();
page = await newPage('?rec=pty&fast&flood=50');
const floodT0 = Date.now();
await startSession(page);
await page.evaluate(() => {
  globalThis.__longTasks = 0;
  new PerformanceObserver((l) => (globalThis.__longTasks += l.getEntries().length)).observe({ type: 'longtask', buffered: false });
});
await page.waitForFunction(() => document.querySelector('[data-testid=terminal]')?.terminalText?.(3)?.includes('FLOOD-DONE'), null, { timeout: 120_000, polling: 100 }).catch(() => problems.push('flood: did not finish'));
const floodMs = Date.now() - floodT0;
const floodLongTasks = await page.evaluate(() => globalThis.__longTasks);
const renderer = await page.getAttribute('[data-testid=terminal]', 'data-renderer');
await shot(page, 'terminal-flood.png');

await browser.close();
server.close();
console.log(
  JSON.stringify(
    { terminalMBps: +(50 / (floodMs / 1000)).toFixed(1), terminalLongTasks: floodLongTasks, terminalRenderer: renderer },
    null,
    1,
  ),
);
if (problems.length) {
  console.log('PROBLEMS:\n' + problems.join('\n'));
  process.exitCode = 1;
}
