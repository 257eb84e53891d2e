# Shared shell helpers for the ops scripts: paths, messages, progress and prerequisite checks.
# Sourced, never executed.

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
DATA_DIR="${LB_OPS_DATA_DIR:-$ROOT/.data}"
CACHE_DIR="${LB_OPS_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/leaderboard-platform}"
VENV="${LB_OPS_VENV:-$ROOT/.venv}"
PYTHON_BIN="${LB_OPS_PYTHON:-python3.11}"
# Partitions of the topics of a region that ops/run runs, unless LB_KAFKA__PARTITIONS says otherwise:
# one processor works each region here, and each partition costs it a transaction a round.
RUN_KAFKA_PARTITIONS="${LB_KAFKA__PARTITIONS:-1}"

say() { printf '\033[1m==>\033[0m %s\n' "$*"; }
warn() { printf '\033[33mwarning:\033[0m %s\n' "$*" >&2; }
die() { printf '\033[31merror:\033[0m %s\n' "$*" >&2; exit 1; }

# need_cmd CMD "how to get it": fail with the remedy when a prerequisite is missing.
need_cmd() {
  command -v "$1" >/dev/null 2>&1 || die "'$1' is not installed. $2"
}

# port_open PORT: true when something accepts TCP connections on 127.0.0.1:PORT.
port_open() {
  (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# with_progress LABEL LOGFILE CMD...: runs CMD in the background with output in LOGFILE and prints
# elapsed time every few seconds, so slow first-time steps never look hung.
with_progress() {
  local label="$1" log="$2"; shift 2
  "$@" >"$log" 2>&1 &
  local pid=$! start=$SECONDS
  while kill -0 "$pid" 2>/dev/null; do
    sleep 5
    kill -0 "$pid" 2>/dev/null && printf '    %s: %ds\n' "$label" $((SECONDS - start))
  done
  wait "$pid"
}

# ensure_apt_package CMD PACKAGE...: installs Debian packages when CMD is missing.
ensure_apt_package() {
  local cmd="$1"; shift
  command -v "$cmd" >/dev/null 2>&1 && return 0
  need_cmd apt-get "Install $* with your system's package manager, then run this again."
  [ "$(id -u)" = 0 ] || die "'$cmd' is missing and installing $* needs root: run 'sudo apt-get install -y $*'."
  say "installing $* (Debian packages)"
  local stamp="$CACHE_DIR/apt-updated"
  mkdir -p "$CACHE_DIR"
  if [ ! -f "$stamp" ] || [ -n "$(find "$stamp" -mmin +720 2>/dev/null)" ]; then
    DEBIAN_FRONTEND=noninteractive apt-get update -qq || die "apt-get update failed: check the network or apt sources."
    touch "$stamp"
  fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null \
    || die "apt-get install $* failed; run it by hand to see why."
}

# ensure_venv: the project's Python environment from the lock file, reinstalled only when it changes.
ensure_venv() {
  need_cmd "$PYTHON_BIN" "Python 3.11 is required (set LB_OPS_PYTHON to its path)."
  local lock="$ROOT/requirements.lock" stamp="$VENV/.lock.sha256" want
  want="$(cat "$lock" "$ROOT/pyproject.toml" | sha256sum | cut -d' ' -f1)"
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then return 0; fi
  say "installing Python packages into $VENV (from requirements.lock)"
  [ -x "$VENV/bin/python" ] || "$PYTHON_BIN" -m venv "$VENV" || die "could not create $VENV."
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check --require-hashes -r "$lock" \
    || die "pip could not install requirements.lock; is PyPI reachable?"
  # The project runs from its source tree: a .pth file puts it on the path without a build step.
  "$VENV/bin/python" -c 'import site,sys; open(site.getsitepackages()[0]+"/leaderboard-platform.pth","w").write(sys.argv[1]+"\n")' "$ROOT"
  echo "$want" >"$stamp"
}

# help_without_servers SCRIPT.py ARGS...: a benchmark asked for --help (or -h) prints its options and
# exits before its wrapper starts any server.
help_without_servers() {
  local script="$1" arg; shift
  for arg in "$@"; do
    case "$arg" in -h|--help) exec "$VENV/bin/python" "$script" --help ;; esac
  done
}

# ensure_graphiql: GraphiQL's and React's browser bundles from their npm packages (pinned in
# gateway/graphiql/package-lock.json) copied to gateway/graphiql/assets, which the gateway serves
# when GraphiQL is on; reinstalled only when the lock file changes.
ensure_graphiql() {
  local dir="$ROOT/gateway/graphiql" want
  want="$(sha256sum "$dir/package-lock.json" | cut -d' ' -f1)"
  if [ -f "$dir/assets/.lock.sha256" ] && [ "$(cat "$dir/assets/.lock.sha256")" = "$want" ]; then return 0; fi
  need_cmd npm "Install Node.js 20 or newer (with npm); GraphiQL's files come from npm packages."
  say "installing GraphiQL's files (npm ci in gateway/graphiql)"
  (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error) || die "npm ci failed in gateway/graphiql; is the npm registry reachable?"
  "$dir/bundle.sh" || die "the GraphiQL packages in gateway/graphiql/node_modules lack their browser bundles."
  echo "$want" >"$dir/assets/.lock.sha256"
}
