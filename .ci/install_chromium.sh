#!/usr/bin/env bash
# Installs Debian's chromium and chromium-driver for tests/workflow/test_report_browser.py, which
# opens the HTML report in headless Chromium. Always exits 0: where the install is impossible (no
# root, no apt, no network) the test skips and says why.
set -u
if command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1; then
  echo "install_chromium: chromium and chromedriver already present"
  exit 0
fi
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "install_chromium: not root or no apt-get: the report browser test will be skipped" >&2
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
if { apt-get update -qq && apt-get install -y -qq --no-install-recommends chromium chromium-driver; } >/tmp/install_chromium.log 2>&1; then
  echo "install_chromium: installed chromium and chromium-driver"
else
  echo "install_chromium: apt-get failed (see /tmp/install_chromium.log): the browser test will be skipped" >&2
  tail -n 5 /tmp/install_chromium.log >&2 || true
fi
exit 0
