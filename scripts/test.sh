#!/usr/bin/env bash
# Install kshare with its test extras into .venv, plus the third-party peers the
# tests talk to (kcat), and run the whole suite. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
# tmux: the dashboard test that starts `kshare dashboard` in a real terminal and reads the screen.
missing=""
command -v kcat >/dev/null 2>&1 || missing="$missing kcat"
command -v tmux >/dev/null 2>&1 || missing="$missing tmux"
# prometheus (with promtool) and chromium: the monitoring docs checked by a real Prometheus,
# and the audit report and exporter page opened in a real browser (issue 28).
command -v prometheus >/dev/null 2>&1 || missing="$missing prometheus"
command -v chromium >/dev/null 2>&1 || missing="$missing chromium"
if [ -n "$missing" ]; then
  install="apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq$missing"
  if [ "$(id -u)" = 0 ]; then
    sh -c "$install" >/dev/null
  else
    sudo sh -c "$install" >/dev/null
  fi
fi
[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/python -m pip install -q --disable-pip-version-check -e '.[test]'
# Three workers, a test module per worker at a time (modules share their beds: a three-node
# cluster, a Spark session): the suite mostly waits, so three share two cores well. Then,
# alone on the machine, the tests marked `faults` (a broker stopped or hung against a
# --timeout: their budgets are seconds, which other workers' load would eat). Pass -n 0 to
# run the first part in one process too. A part that selects no test (exit 5) is no failure.
status=0
.venv/bin/python -m pytest -n 3 --dist loadfile -m "not faults" "$@" || status=$?
[ "$status" = 5 ] && status=0
faults=0
.venv/bin/python -m pytest -m faults "$@" || faults=$?
[ "$faults" = 5 ] && faults=0
[ "$status" != 0 ] && exit "$status"
exit "$faults"
