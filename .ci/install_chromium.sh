#!/usr/bin/env bash
# Chromium and its driver for tests/workflow/test_report_browser.py (see .ci/install_apt.sh;
# always exits 0).
exec bash "$(dirname "$0")/install_apt.sh" chromium "chromium chromedriver" chromium chromium-driver
