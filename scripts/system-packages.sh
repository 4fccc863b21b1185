#!/usr/bin/env bash
# Install the Debian packages the tests and the app need, only when missing (ICEWATER_NO_BROWSER=1: no Chromium).
set -euo pipefail
need=()
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || need+=(postgresql)
command -v redis-server >/dev/null 2>&1 || need+=(redis-server)
# Node runs the real OpenID provider of the sign-in tests (tests/oidc_provider/, oidc-provider needs Node 20+).
command -v node >/dev/null 2>&1 || need+=(nodejs)
command -v npm >/dev/null 2>&1 || need+=(npm)
# Any Chromium the browser tests find (tests/browser/browser_helpers.py) will do; make test-fast needs none.
if [ "${ICEWATER_NO_BROWSER:-0}" != "1" ] && [ -z "${ICEWATER_CHROMIUM:-}" ]; then
  command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 ||
    command -v google-chrome >/dev/null 2>&1 || need+=(chromium)
fi
if [ ${#need[@]} -gt 0 ]; then
  echo "installing Debian packages: ${need[*]}"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${need[@]}"
fi
