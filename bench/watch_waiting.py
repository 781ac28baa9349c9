#!/usr/bin/env python3
"""What a directly launched window costs around and after a change that needs the user.

Launches the desktop app on a display (a second launch: a first one fills the data dir if it
is empty), then at the given seconds writes a session whose last record is a pending `Bash`
tool call into a new project folder of the corpus (the window shows it as waiting for
approval; the folders are removed at the end), and prints every 10 s each process's CPU
(utime + stime, which counts threads that ended) and every thread that switched more than
100 times in those 10 s. With `--gc-log` JavaScriptCore logs its collections (`JSC_logGC=2`,
inherited by the web process) among the app's own stderr lines.

    bench/watch_waiting.py APP CORPUS [--secs 420] [--ask 60,180] [--data DIR] [--gc-log]

A display must be there (DISPLAY, or run it under xvfb-run). The figures of record are the
window bench's (tests/window_bench.rs); this is for looking at one change closely.
"""

import argparse
import datetime
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import uuid

CWD = "/home/dev/src/mimesis-watch-waiting-"


def children(pid: int) -> list[int]:
    out = [pid]
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                ppid = int(open(f"/proc/{d}/stat").read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            if ppid == pid:
                out += children(int(d))
    return out


def cpu_ms(pid: int) -> float:
    try:
        f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
        return (int(f[11]) + int(f[12])) * 1000.0 / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return 0.0


def comm(path: str) -> str:
    try:
        return open(f"{path}/comm").read().strip()
    except OSError:
        return "?"


def write_waiting(corpus: str, k: int) -> str:
    cwd = f"{CWD}{k}"
    folder = os.path.join(corpus, "projects", cwd.replace("/", "-"))
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)
    sid = f"0c0c0c0c-0000-4000-8000-{k:012x}"
    now = datetime.datetime.now(datetime.timezone.utc)

    def record(kind: str, at: datetime.datetime) -> dict:
        ts = at.strftime("%Y-%m-%dT%H:%M:%S.") + f"{at.microsecond // 1000:03d}Z"
        return {"type": kind, "uuid": str(uuid.uuid4()), "timestamp": ts, "sessionId": sid, "cwd": cwd,
                "gitBranch": "main", "version": "2.1.197"}

    prompt = record("user", now - datetime.timedelta(seconds=3))
    prompt["message"] = {"role": "user", "content": "Tidy the parser"}
    call = record("assistant", now)
    call["requestId"] = f"req_{uuid.uuid4()}"
    call["message"] = {
        "id": f"msg_{uuid.uuid4()}", "model": "claude-opus-4-8", "stop_reason": "tool_use",
        "content": [{"type": "tool_use", "id": f"toolu_watch_{k}", "name": "Bash",
                     "input": {"command": "rm -rf build", "description": "Clean the build"}}],
        "usage": {"input_tokens": 12, "output_tokens": 40}}
    with open(os.path.join(folder, sid + ".jsonl"), "w") as f:
        f.write(json.dumps(prompt) + "\n" + json.dumps(call) + "\n")
    return folder


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("app")
    ap.add_argument("corpus")
    ap.add_argument("--secs", type=int, default=420)
    ap.add_argument("--ask", default="60", help="seconds after the launch at which a session starts waiting")
    ap.add_argument("--data", default=None, help="the app's data dir (default: a new temporary one)")
    ap.add_argument("--gc-log", action="store_true")
    a = ap.parse_args()
    if not os.environ.get("DISPLAY"):
        print("no DISPLAY: run it under xvfb-run", file=sys.stderr)
        return 2
    asks = sorted(int(x) for x in a.ask.split(",") if x)
    data = a.data or os.path.join("/tmp", f"mimesis-watch-waiting-{os.getpid()}")
    os.makedirs(data, exist_ok=True)
    t0 = time.monotonic()

    def say(line: str) -> None:
        print(f"{time.monotonic() - t0:7.1f} {line}", flush=True)

    env = dict(os.environ, MIMESIS_DATA_DIR=data)

    def start(extra: dict, stderr: int) -> subprocess.Popen:
        return subprocess.Popen([a.app, "--config-dir", a.corpus], env=dict(env, **extra), stdout=subprocess.DEVNULL,
                                stderr=stderr, text=True, errors="replace")

    if not os.listdir(data):
        say("a first launch fills the data dir (20 s)")
        # (Its stderr unread: a pipe nobody drains would stop it once full.)
        first = start({}, subprocess.DEVNULL)
        time.sleep(20)
        first.send_signal(signal.SIGTERM)
        first.wait(60)
    app = start({"JSC_logGC": "2"} if a.gc_log else {}, subprocess.PIPE)

    def stderr() -> None:
        for line in app.stderr:
            if a.gc_log and "GC" in line:
                say("stderr " + line.rstrip()[:300])

    threading.Thread(target=stderr, daemon=True).start()
    folders: list[str] = []
    threads: dict[tuple[int, int], list] = {}
    before: dict[int, float] = {}
    launched = time.monotonic()
    try:
        while time.monotonic() - launched < a.secs:
            for _ in range(10):
                time.sleep(1)
                for pid in children(app.pid):
                    try:
                        tids = os.listdir(f"/proc/{pid}/task")
                    except OSError:
                        continue
                    for tid in tids:
                        path = f"/proc/{pid}/task/{tid}"
                        try:
                            status = open(f"{path}/status").read()
                        except OSError:
                            continue
                        switches = sum(int(l.split()[1]) for l in status.splitlines() if "ctxt_switches" in l)
                        seen = threads.setdefault((pid, int(tid)), [comm(path), switches, switches])
                        seen[2] = switches
            while asks and time.monotonic() - launched >= asks[0]:
                asks.pop(0)
                folders.append(write_waiting(a.corpus, len(folders) + 1))
                say(f"a session waits for approval ({folders[-1]})")
            pids = children(app.pid)
            parts = []
            for pid in pids:
                now = cpu_ms(pid)
                # (A process's first reading counts from its start.)
                parts.append(f"{comm(f'/proc/{pid}')} {now - before.get(pid, 0.0):.0f} ms")
                before[pid] = now
            say("cpu " + ", ".join(parts))
            busy = [f"{comm(f'/proc/{p}')}/{v[0] or '(unnamed)'} {v[2] - v[1]}"
                    for (p, _), v in threads.items() if v[2] - v[1] > 100]
            if busy:
                say("switches " + ", ".join(busy))
            for v in threads.values():
                v[1] = v[2]
    finally:
        app.send_signal(signal.SIGTERM)
        try:
            app.wait(60)
        except subprocess.TimeoutExpired:
            app.kill()
        for folder in folders:
            shutil.rmtree(folder, ignore_errors=True)
        if not a.data:
            shutil.rmtree(data, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
