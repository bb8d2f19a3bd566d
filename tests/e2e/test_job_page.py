"""The job page in a real headless Chromium: a finished run, readable, and a refused link."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.e2e.conftest import issue_labeled, settings_for
from tests.e2e.test_issue_to_pr import FIX
from wrench.links import job_link

CHROMIUM = shutil.which("chromium")
# Without these, Chromium reaches for Google's services and this machine refuses them.
QUIET = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture
def browser():
    assert CHROMIUM, "Debian's chromium is not installed: run scripts/test, which installs it"
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=QUIET)
        yield browser
        browser.close()


def test_the_job_page_shows_the_run(stack, browser, tmp_path):
    stack.model.replies[:] = FIX
    [job_id] = stack.deliver("issues", issue_labeled())["jobs"]
    stack.wait(job_id)
    link = stack.web_url + job_link(settings_for(stack), job_id).removeprefix("http://wrench.test")

    page = browser.new_page(viewport={"width": 1100, "height": 1400})
    page.goto(link)
    page.wait_for_selector(".ended")
    assert page.text_content("#status") == "finished"
    assert page.text_content("#steps") == "4"
    assert "octo-org/hello#1" in page.text_content("header")
    commands = page.locator(".action code").all_text_contents()
    assert commands[2] == "$ python3 -c 'import hello; print(hello.greet(\"Ada\"))'"
    # Outputs are folded: present, but hidden until opened.
    output = page.locator("details").nth(2)
    assert not output.locator("pre").is_visible()
    output.locator("summary").click()
    assert "Hello, Ada!" in output.locator("pre").text_content()
    assert "greet` now ends with an exclamation mark" in page.text_content(".ended")
    shot = Path(os.environ.get("WRENCH_SCREENSHOTS", tmp_path)) / "job-page.png"
    page.screenshot(path=str(shot), full_page=True)
    assert shot.stat().st_size > 10_000

    page.goto(link.replace("sig=", "sig=0"))
    assert "invalid or has expired" in page.text_content("body")
