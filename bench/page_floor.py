#!/usr/bin/env python3
"""The window's page without the app: WebKit's MiniBrowser opens a built `ui/dist` over http
on loopback (the UI's preview backend, a recording: `?rec=demo&still&fast`), alternating with
WebKit's one-line floor page (as bench/webkit_floor.py), and reports the medians of the page's
marks after its creation (`performance.timeOrigin`): its module, its first rows, its complete
roster two frames later. A change to the page alone (its CSS, its first screen, its code) is
measured here in seconds, without building the desktop app, against other builds of the
page in the same run:

    bench/page_floor.py [--runs N] [--query Q] DIST [DIST...]     (a display: scripts/bench page-floor)

A DIST may hold an `extra.html`: inserted before `</head>` (a style to try, say). What the app
adds on top (its IPC, its early snapshot, WebDriver) is the window bench's to measure.
"""

import argparse
import http.server
import json
import os
import statistics
import sys
import threading
import time
import urllib.parse

import minibrowser

# Sends the marks once the roster is complete (or the floor painted): polled, so that the
# page's own scheduling is not changed.
REPORTER = """<script>
(() => {
  const send = (why) => {
    const marks = {};
    for (const m of performance.getEntriesByType('mark')) marks[m.name] = m.startTime;
    for (const p of performance.getEntriesByType('paint')) marks['paint:' + p.name] = p.startTime;
    fetch('/report', { method: 'POST', body: JSON.stringify({ origin: performance.timeOrigin, why, marks, size: innerWidth + 'x' + innerHeight }) });
  };
  const poll = () => {
    if (performance.getEntriesByName('mimesis:roster-complete').length ||
        performance.getEntriesByName('floor:painted').length) return send('done');
    setTimeout(poll, 20);
  };
  setTimeout(poll, 0);
  setTimeout(() => send('timeout'), 15000);
})();
</script>"""
FLOOR = (
    '<!doctype html><html><head><meta charset="utf-8"><title>floor</title></head><body><p>One line.</p>'
    "<script>requestAnimationFrame(() => requestAnimationFrame(() => performance.mark('floor:painted')));</script>"
    + REPORTER
    + "</body></html>"
)
MARKS = ["mimesis:module", "mimesis:mounted", "mimesis:connected", "mimesis:applied", "mimesis:rendered",
         "paint:first-contentful-paint", "mimesis:roster-first", "mimesis:roster-complete", "floor:painted"]


class Heard:
    def __init__(self) -> None:
        self.report: dict = {}
        self.done = threading.Event()


def serve(root: str | None, heard: Heard) -> int:
    class Handler(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *a, **k):
            super().__init__(*a, directory=root or os.devnull, **k)

        def do_POST(self) -> None:
            n = int(self.headers.get("Content-Length", 0))
            try:
                heard.report = json.loads(self.rfile.read(n))
                heard.done.set()
            except ValueError:
                pass
            self.send_response(204)
            self.end_headers()

        def do_GET(self) -> None:
            if urllib.parse.urlparse(self.path).path in ("/", "/index.html"):
                if root is None:
                    body = FLOOR
                else:
                    with open(os.path.join(root, "index.html")) as f:
                        html = f.read()
                    extra_path = os.path.join(root, "extra.html")
                    extra = open(extra_path).read() if os.path.exists(extra_path) else ""
                    body = html.replace("<head>", "<head>" + REPORTER, 1).replace("</head>", extra + "</head>", 1)
                data = body.encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                return
            super().do_GET()

        def log_message(self, *_args: object) -> None:
            pass

    class Server(http.server.ThreadingHTTPServer):
        def handle_error(self, *_args: object) -> None:
            # (A page closed while a file was sent: nothing to report.)
            pass

    server = Server(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server.server_address[1]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--query", default="?rec=demo&still&fast")
    ap.add_argument("dists", nargs="+")
    args = ap.parse_args()
    why = minibrowser.missing("page_floor", "page-floor")
    if why:
        return minibrowser.fail(why)
    for d in args.dists:
        if not os.path.exists(os.path.join(d, "index.html")):
            print(f"page_floor: {d} has no index.html (cd ui && npm run build)", file=sys.stderr)
            return 2
    env = minibrowser.environment()
    heard = Heard()
    targets = [("floor", serve(None, heard))] + [(d, serve(os.path.abspath(d), heard)) for d in args.dists]
    results: dict[str, list[dict]] = {name: [] for name, _ in targets}
    for run in range(args.runs):
        for name, port in targets:
            heard.report = {}
            heard.done.clear()
            spawned = time.time() * 1000
            url = f"http://127.0.0.1:{port}/index.html" + ("" if name == "floor" else args.query)
            ok = minibrowser.open_until(url, env, heard.done)
            if not ok or heard.report.get("why") != "done":
                print(f"run {run} {name}: no complete roster ({heard.report.get('why', 'nothing heard')})", file=sys.stderr)
                continue
            marks = dict(heard.report["marks"])
            marks["created"] = heard.report["origin"] - spawned
            marks["size"] = heard.report.get("size")
            results[name].append(marks)
            # (Its processes gone before the next one starts.)
            time.sleep(0.4)
    for name, runs in results.items():
        if not runs:
            print(f"{name}: no run completed")
            continue
        parts = [f"page created {statistics.median(m['created'] for m in runs):.0f} ms after spawn ({runs[0]['size']} px)"]
        for k in MARKS:
            values = [m[k] for m in runs if k in m]
            if values:
                parts.append(f"{k.split(':')[-1]} {statistics.median(values):.0f}")
        print(f"{name}, medians of {len(runs)} (ms after the page's creation): " + " · ".join(parts))
    return 0


if __name__ == "__main__":
    sys.exit(main())
