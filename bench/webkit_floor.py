#!/usr/bin/env python3
"""The floor of any WebKitGTK window on this machine: WebKit's own MiniBrowser (C, a few
hundred lines over the same libwebkit2gtk-4.1 the app uses) opening a page of one line,
from its spawn to the page's creation (`performance.timeOrigin`) and to its first paint (two
animation frames later), on the wall clock. The page reports both to a server on loopback.

MiniBrowser gets what the app gives WebKit on such a machine: no compositing and no GL
without a GPU, and no session bus when there is none (src-tauri/src/toolkit.rs), each unless
already set. The window bench's second launch starts at the same point (the app's process
start), so the two compare: what the app adds to this floor is its own page's work.

    bench/webkit_floor.py [RUNS]        (a display must be there: scripts/bench webkit-floor)
"""

import http.server
import os
import statistics
import sys
import tempfile
import threading
import time
import urllib.parse

import minibrowser

PAGE = """<!doctype html><html><head><meta charset="utf-8"><title>floor</title></head>
<body><p>One line.</p><script>
requestAnimationFrame(() => requestAnimationFrame(() => {
  const painted = performance.timeOrigin + performance.now();
  fetch('http://127.0.0.1:%d/?origin=' + performance.timeOrigin + '&painted=' + painted).catch(() => {});
}));
</script></body></html>
"""


def main() -> int:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    why = minibrowser.missing("webkit_floor", "webkit-floor")
    if why:
        return minibrowser.fail(why)

    heard: dict[str, float] = {}
    done = threading.Event()

    class Report(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            q = urllib.parse.parse_qs(urllib.parse.urlparse(self.path).query)
            try:
                heard["origin"] = float(q["origin"][0])
                heard["painted"] = float(q["painted"][0])
                done.set()
            except (KeyError, ValueError):
                pass
            self.send_response(204)
            self.send_header("Access-Control-Allow-Origin", "*")
            self.end_headers()

        def log_message(self, *_args: object) -> None:
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Report)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    env = minibrowser.environment()

    created, painted = [], []
    with tempfile.TemporaryDirectory(prefix="mimesis-webkit-floor-") as tmp:
        page = os.path.join(tmp, "page.html")
        with open(page, "w") as f:
            f.write(PAGE % server.server_address[1])
        for run in range(runs):
            heard.clear()
            done.clear()
            spawned = time.time() * 1000
            if not minibrowser.open_until("file://" + page, env, done):
                print(f"run {run}: no paint within 30 s", file=sys.stderr)
                return 1
            created.append(heard["origin"] - spawned)
            painted.append(heard["painted"] - spawned)
            print(f"run {run}: page created {created[-1]:.0f} ms, painted {painted[-1]:.0f} ms", flush=True)
            # (Its processes gone before the next one starts.)
            time.sleep(0.5)
    print(f"WebKitGTK floor (MiniBrowser, one line), medians of {runs}: page created "
          f"{statistics.median(created):.0f} ms, painted {statistics.median(painted):.0f} ms after spawn")
    return 0


if __name__ == "__main__":
    sys.exit(main())
