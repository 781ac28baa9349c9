# Shared set-up for scripts/run and scripts/test: installs what is missing, quietly when
# nothing is. Sourced, not run. Works on a fresh Debian machine (root or sudo).

set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

say() { printf '\033[1m==> %s\033[0m\n' "$*" >&2; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

SUDO=""
if [ "$(id -u)" != 0 ]; then
  command -v sudo >/dev/null || die "installing system packages needs root or sudo"
  SUDO=sudo
fi

# Debian packages the desktop app builds against, plus what its tests drive it with.
APT_BUILD=(libwebkit2gtk-4.1-dev libgtk-3-dev libayatana-appindicator3-dev librsvg2-dev libssl-dev
  libsoup-3.0-dev libjavascriptcoregtk-4.1-dev build-essential pkg-config file curl ca-certificates)
# dbus: a private session bus per desktop test (dbus-run-session); dunst: a real notification
# server, so notifications and their clicks are tested for real; python3: the generated
# corpora of tests/cost.rs (bench/gen_corpus.py).
APT_TEST=(xvfb xauth webkit2gtk-driver dbus dunst openssh-server openssh-client tmux python3)

# A clear word before a build that would fail half-way on a full disk.
need_disk() {
  local want_gb="$1" free_kb
  mkdir -p "$ROOT/target"
  free_kb="$(df -Pk "$ROOT/target" | awk 'NR==2 {print $4}')"
  if [ -n "$free_kb" ] && [ "$free_kb" -lt $((want_gb * 1024 * 1024)) ]; then
    printf 'warning: %s GB free under %s; a cold build and test run needs about %s GB\n' \
      "$((free_kb / 1024 / 1024))" "$ROOT/target" "$want_gb" >&2
  fi
}

ensure_apt() {
  local missing=()
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  say "installing Debian packages: ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

ensure_toolchain() {
  command -v cargo >/dev/null || die "cargo is missing: install Rust with rustup (https://rustup.rs)"
  if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
    ensure_apt nodejs npm
  fi
  local major
  major="$(node -p 'process.versions.node.split(".")[0]')"
  [ "$major" -ge 20 ] || die "Node.js 20 or newer is needed for the UI build (found $(node --version))"
}

# npm ci when the lockfile changed since the last install.
ensure_ui_deps() {
  local stamp="ui/node_modules/.mimesis-lock-stamp"
  if [ ! -f "$stamp" ] || ! cmp -s ui/package-lock.json "$stamp"; then
    say "installing UI packages (npm ci)"
    (cd ui && npm ci --no-audit --no-fund --loglevel=error)
    cp ui/package-lock.json "$stamp"
  fi
}

build_ui() {
  say "building the UI"
  (cd ui && npm run --silent build >/dev/null)
}

ensure_tauri_driver() {
  if command -v tauri-driver >/dev/null || [ -x "${CARGO_HOME:-$HOME/.cargo}/bin/tauri-driver" ]; then
    return 0
  fi
  say "installing tauri-driver (WebDriver for the desktop app)"
  cargo install tauri-driver --locked --quiet
}

# The test command's runner (scripts/test, .config/nextest.toml).
ensure_nextest() {
  if cargo nextest --version >/dev/null 2>&1; then
    return 0
  fi
  say "installing cargo-nextest (the tests' runner)"
  cargo install cargo-nextest --locked --quiet
}

# Tauri's bundler, for scripts/package (the .deb). Pinned: the CLI of the tauri release the app
# is built against (Cargo.lock's `tauri`).
TAURI_CLI_VERSION=2.12.4
ensure_tauri_cli() {
  if cargo tauri --version 2>/dev/null | grep -qx "tauri-cli $TAURI_CLI_VERSION"; then
    return 0
  fi
  say "installing tauri-cli $TAURI_CLI_VERSION (Tauri's bundler; the first install takes a few minutes)"
  cargo install tauri-cli --version "$TAURI_CLI_VERSION" --locked --quiet
}
