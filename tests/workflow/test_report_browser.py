"""The HTML report as a reader sees it: built from a run of the report stage, and for the click
through every category (-m slow) of the figures stage too (upstream outputs fabricated,
tests/workflow/conftest.py), opened in headless Chromium (Debian's chromium
and chromium-driver, installed by .ci/install_chromium.sh) and clicked through. Every category of
the stages it covers is listed in the stages' order, every figure and table is reachable under its
category, the training curves image is drawn, and the landing page leads with the
success-against-temperature picture on the first screen and states the headline read from
results/summary.json, and shows the compact fixed-point study's picture within two screens; at
desktop and phone width the first screen says what ran. Skipped, with the reason, where Chromium
or its driver is missing, except under CI (CI=true), which installs them: there it fails."""

from __future__ import annotations

import json
import os
import shutil
import time

import pytest
import yaml

from grpo_repro.figures.registry import FAMILIES
from grpo_repro.report.registry import CATEGORIES, PLOTS
from tests.workflow.conftest import _snakemake

CHROMIUM, DRIVER = shutil.which("chromium"), shutil.which("chromedriver")
FULL = "results/report_full.html"  # the report with the figures stage (full_report)


@pytest.fixture(scope="module")
def browser():
    if not (CHROMIUM and DRIVER):
        why = "chromium / chromedriver not installed (run .ci/install_chromium.sh)"
        if os.environ.get("CI"):  # CI installs them: a missing browser fails, never skips
            pytest.fail(why)
        pytest.skip(why)
    webdriver = pytest.importorskip("selenium.webdriver")
    opts = webdriver.ChromeOptions()
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"):
        opts.add_argument(arg)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})  # the page's console
    opts.binary_location = CHROMIUM
    driver = webdriver.Chrome(options=opts, service=webdriver.ChromeService(DRIVER))
    driver.set_window_size(1400, 1000)
    yield driver
    driver.quit()


@pytest.fixture(scope="module")
def report(report_workflow):
    """The report of the report stage (results/report.html): the landing page and its pages."""
    _snakemake(report_workflow, "report_all", "--report", "results/report.html", timeout=900)
    return report_workflow


@pytest.fixture(scope="module")
def full_report(figures_run):
    """The report of the report and figures stages (small figure grids), results/report_full.html."""
    _snakemake(figures_run, "report_all", "figures_all", "--report", FULL, timeout=900)
    return figures_run


def _click(driver, text: str, optional: bool = False) -> bool:
    """Click the element showing `text`; with `optional`, return False when there is none (a
    category with one subcategory opens its results directly)."""
    from selenium.common.exceptions import NoSuchElementException
    from selenium.webdriver.common.by import By

    try:
        driver.find_element(By.XPATH, f"//*[normalize-space(text())={json.dumps(text)}]").click()
    except NoSuchElementException:
        if optional:
            return False
        raise
    time.sleep(0.4)
    return True


def _console_errors(driver) -> list[dict]:
    """The page's JavaScript errors since the last call (the console log is drained by reading)."""
    return [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]


def _body(driver) -> str:
    """The page's rendered text (innerText: laid out, styles applied, scrolled parts included)."""
    return driver.execute_script("return document.body.innerText")


@pytest.mark.slow  # clicks through every category and figure (about 40 s); the landing page is the default tier's
def test_every_category_and_figure_is_rendered(full_report, browser):
    from selenium.webdriver.common.by import By

    report = full_report
    browser.get(f"file://{report / FULL}")
    time.sleep(2)
    home = _body(browser)
    stages = ["theory", "figures", "train", "evaluate", "report"]
    listed = [CATEGORIES[s] for s in stages]
    positions = [home.find(c) for c in listed]
    assert all(p >= 0 for p in positions), [c for c, p in zip(listed, positions) if p < 0]
    assert positions == sorted(positions), "categories not in the stages' order"
    summary = json.loads((report / "results/summary.json").read_text())
    grpo = next(
        r for r in summary["paired_difference"] if r["variant"] == "grpo" and r["split"] == "test"
    )
    assert (
        "Headline" in home and f"{100 * grpo['mean_final']:.1f}%" in home
    )  # read from the summary
    expected = {
        CATEGORIES[p.stage]: {(sub, label) for _, _, sub, label in p.figures} for p in PLOTS
    }
    fig_cfg = yaml.safe_load((report / "config/test.yaml").read_text())["figures"]
    expected[CATEGORIES["figures"]] = {
        (f.subcategory, labels.get("figure", stem))
        for f in FAMILIES
        for stem, labels in f.stems(fig_cfg)
    }
    missing, errors = [], []
    for category, items in expected.items():
        subs = sorted({s for s, _ in items})
        for sub in subs:
            browser.get(f"file://{report / FULL}")
            time.sleep(1)
            _click(browser, category)
            _click(browser, sub, optional=len(subs) == 1)  # a lone subcategory opens directly
            text = _body(browser)
            for eye in browser.find_elements(By.CSS_SELECTOR, "td a[iconname='eye']"):
                eye.click()  # open every result of the subcategory
                time.sleep(0.2)
            missing += [(category, sub, lab) for s, lab in items if s == sub and lab not in text]
            errors += [(sub, e["message"][:300]) for e in _console_errors(browser)]
    assert not missing, missing
    assert not errors, errors  # e.g. a results table the report's JavaScript cannot draw


def test_training_curves_image_is_drawn(report, browser):
    from selenium.webdriver.common.by import By

    browser.get(f"file://{report / 'results/report.html'}")
    time.sleep(2)
    _click(browser, CATEGORIES["train"])
    _click(browser, "Training curves", optional=True)  # the category's only subcategory
    xpath = "//td[normalize-space(text())='training curves']/ancestor::tr"
    row = browser.find_element(By.XPATH, xpath)
    row.find_element(By.CSS_SELECTOR, "a[iconname='eye']").click()  # show the result
    time.sleep(2)
    imgs = [
        i
        for i in browser.find_elements(By.TAG_NAME, "img")
        if browser.execute_script("return arguments[0].naturalWidth", i) > 200
    ]
    assert imgs, "no rendered image after opening the training curves"
    browser.save_screenshot(str(report / "results/report_training_curves.png"))


def _landing_picture(browser, report, cls: str):
    """The landing page's picture of CSS class `cls` and its box on the unscrolled page: top,
    bottom, drawn width (naturalWidth) and the screen's height."""
    from selenium.webdriver.common.by import By

    browser.get(f"file://{report / 'results/report.html'}")
    time.sleep(2)
    pic = browser.find_element(By.CSS_SELECTOR, f"img.{cls}")
    box = browser.execute_script(
        "const r = arguments[0].getBoundingClientRect();"
        "return {top: r.top, bottom: r.bottom, drawn: arguments[0].naturalWidth,"
        " screen: window.innerHeight};",
        pic,
    )
    return pic, box


def test_landing_page_leads_with_the_picture(report, browser):
    """The first screen of the report (1400 x 1000) shows the success-against-temperature picture,
    drawn, above the landing page's table; the page's text starts at its top."""
    from selenium.webdriver.common.by import By

    pic, box = _landing_picture(browser, report, "landing-picture")
    assert box["drawn"] > 200, "the picture is not drawn"
    assert box["top"] >= 0 and box["bottom"] <= box["screen"], box  # on the first screen
    page = browser.find_element(By.CSS_SELECTOR, "div.document")
    assert page.size["width"] > 800, page.size  # not squeezed into a column beside the graph
    table = page.find_element(By.CSS_SELECTOR, "table")
    assert table.location["y"] > box["top"], "the table precedes the picture"
    browser.save_screenshot(str(report / "results/report_landing.png"))


def test_landing_page_shows_the_fixed_point_law_within_two_screens(report, browser):
    """The compact study's picture (plateau against p*_G per prompt) is drawn on the landing page
    within its first two screens (1400 x 1000, unscrolled), after the law's line."""
    from selenium.webdriver.common.by import By

    pic, box = _landing_picture(browser, report, "law-picture")
    assert box["drawn"] > 200, "the fixed-point picture is not drawn"
    assert box["top"] >= 0 and box["bottom"] <= 2 * box["screen"], box  # first two screens
    text = browser.find_element(By.CSS_SELECTOR, "div.document").text
    assert "Fixed-point law" in text and "p*_G" in text
    browser.execute_script("arguments[0].scrollIntoView()", pic)
    browser.save_screenshot(str(report / "results/report_landing_law.png"))


@pytest.mark.parametrize("width, height", [(1400, 1000), (420, 860)], ids=["desktop", "phone"])
def test_the_first_screen_says_what_ran(report, browser, width, height):
    """At desktop and at phone width the first screen, unscrolled, says what ran (the model
    organism here, the configuration's model otherwise) before any claim, inside the screen's
    width: no text cut at the left edge, where nothing scrolls to."""
    from selenium.webdriver.common.by import By

    browser.set_window_size(width, height)
    try:
        browser.get(f"file://{report / 'results/report.html'}")
        time.sleep(2)
        xpath = "//*[contains(normalize-space(.), 'What ran') and not(.//*[contains(normalize-space(.), 'What ran')])]"
        what = browser.find_element(By.XPATH, xpath)
        box = browser.execute_script(
            "const r = arguments[0].getBoundingClientRect();"
            "return {left: r.left, right: r.right, top: r.top, bottom: r.bottom,"
            " width: window.innerWidth, height: window.innerHeight};",
            what,
        )
        text = browser.find_element(By.CSS_SELECTOR, "div.document").text
        assert "What ran: the model organism" in text
        assert text.index("What ran") < text.index("reproduced end to end")  # before any claim
        assert box["left"] >= 0 and box["right"] <= box["width"] + 1, box  # within the width
        assert 0 <= box["top"] < box["height"], box  # on the first screen
        browser.save_screenshot(str(report / f"results/report_first_screen_{width}.png"))
    finally:
        browser.set_window_size(1400, 1000)
