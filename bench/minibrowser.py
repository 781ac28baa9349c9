"""WebKit's own MiniBrowser as the window benchmarks' floor runs it (bench/webkit_floor.py,
bench/page_floor.py): where it is, whether it can run here, and the environment the app gives
WebKit on a machine without a GPU or a session bus (src-tauri/src/toolkit.rs)."""

import glob
import os
import shutil
import subprocess
import sys
import threading

MINIBROWSER = "/usr/lib/x86_64-linux-gnu/webkit2gtk-4.1/MiniBrowser"


def missing(tool: str, suite: str) -> str | None:
    """Why MiniBrowser cannot run here, in `tool`'s words; None when it can."""
    if not os.path.exists(MINIBROWSER):
        return f"{tool}: {MINIBROWSER} is missing (Debian package libwebkit2gtk-4.1-0)"
    if not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY"):
        return f"{tool}: no display (run it through scripts/bench {suite})"
    return None


def environment() -> dict[str, str]:
    """This process's environment with what the app sets for WebKit, unless already set."""
    env = dict(os.environ)
    toolkit = {"DBUS_SESSION_BUS_ADDRESS": "disabled:"} if no_session_bus() else {}
    if not glob.glob("/dev/dri/renderD*"):
        toolkit.update(WEBKIT_DISABLE_COMPOSITING_MODE="1", WEBKIT_DISABLE_DMABUF_RENDERER="1",
                       GDK_GL="disable", WEBKIT_WEB_RENDER_DEVICE_FILE="/dev/dri/none")
    for k, v in toolkit.items():
        env.setdefault(k, v)
    return env


def no_session_bus() -> bool:
    """As the app decides (toolkit.rs): no address, no socket, no dbus-launch."""
    if os.environ.get("DBUS_SESSION_BUS_ADDRESS"):
        return False
    dirs = [os.environ.get("XDG_RUNTIME_DIR"), f"/run/user/{os.getuid()}"]
    if any(d and os.path.exists(os.path.join(d, "bus")) for d in dirs):
        return False
    return shutil.which("dbus-launch", path=os.environ.get("PATH", "/bin:/usr/bin")) is None


def open_until(url: str, env: dict[str, str], heard: threading.Event, within: float = 30) -> bool:
    """Opens `url` in a MiniBrowser of its own until `heard` is set (true) or `within` seconds
    pass (false), then ends it and waits for it."""
    browser = subprocess.Popen([MINIBROWSER, url], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        return heard.wait(within)
    finally:
        browser.terminate()
        try:
            browser.wait(10)
        except subprocess.TimeoutExpired:
            browser.kill()
            browser.wait()


def fail(why: str) -> int:
    print(why, file=sys.stderr)
    return 2
