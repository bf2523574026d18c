"""The page at / in a real browser (Debian's chromium and chromium-driver,
driven through Selenium): a chat message streams an answer whose text is the
API's for the same seed and settings; stop ends it and frees the slot; and
the phase view shows, in the page's own DOM, the shorter of an unequal pair
waiting at the barrier while the longer one prefilled. Screenshots go to
build-logs/webui/ (COHORT_ARTIFACTS overrides), which scripts/test.sh keeps
with its logs."""
import json
import os
import pathlib
import shutil
import time
import urllib.request

import pytest

from conftest import ROOT, serving
from test_phase_trace import complete, run_pair

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
ARTIFACTS = pathlib.Path(os.environ.get("COHORT_ARTIFACTS", ROOT / "build-logs")) / "webui"


@pytest.fixture(scope="module")
def server(cohort_bin, default_model, tmp_path_factory):
    args = ["-np", "2", "-c", "2048", "-b", "32", "--phase-policy", "cohort"]
    with serving(cohort_bin, default_model, args, tmp_path_factory.mktemp("webui")) as url:
        yield url


@pytest.fixture(scope="module")
def browser():
    if not (os.path.exists(CHROMIUM) and os.path.exists(CHROMEDRIVER)):
        pytest.fail("chromium and chromium-driver are needed (scripts/test.sh installs them)")
    os.environ["SE_OFFLINE"] = "true"  # Selenium must not look for drivers on the network
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for a in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
              "--window-size=1400,820", "--no-proxy-server"):
        opts.add_argument(a)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)
    driver.set_script_timeout(30)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    yield driver
    driver.quit()


def wait_until(driver, script, timeout=120):
    """Polls a JavaScript expression until it is truthy; returns its value."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = driver.execute_script("return " + script)
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"not true after {timeout} s: {script}")


def set_field(driver, field_id, value):
    driver.execute_script("document.getElementById(arguments[0]).value = arguments[1]", field_id, str(value))


def test_chat_streams_the_apis_answer_for_the_same_seed(server, browser):
    from selenium.webdriver.common.by import By
    browser.get(server + "/")
    wait_until(browser, "document.getElementById('temperature').value !== ''")  # /props has filled it
    model = browser.find_element(By.ID, "model-name").text
    for k, v in {"temperature": 0.9, "top_k": 40, "top_p": 0.95, "min_p": 0.05, "max_tokens": 24,
                 "seed": 1234}.items():
        set_field(browser, k, v)
    question = "Name three colours of the sea."
    browser.find_element(By.ID, "prompt").send_keys(question)
    browser.find_element(By.ID, "send").click()
    wait_until(browser, "document.querySelector('.msg.assistant .text') !== null")
    state = wait_until(browser, "(s => s !== 'streaming' && s)"
                                "(document.querySelector('.msg.assistant').dataset.state)")
    assert state == "done"
    shown = browser.execute_script("return document.querySelector('.msg.assistant .text').textContent")
    meta = browser.execute_script("return document.querySelector('.msg.assistant .meta').textContent")
    browser.save_screenshot(str(ARTIFACTS / "chat.png"))
    body = {"messages": [{"role": "user", "content": question}], "temperature": 0.9, "top_k": 40,
            "top_p": 0.95, "min_p": 0.05, "max_tokens": 24, "seed": 1234}
    req = urllib.request.Request(server + "/v1/chat/completions", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=120) as r:
        answer = json.loads(r.read())
    assert shown and shown == answer["choices"][0]["message"]["content"]
    assert model == answer["model"]
    assert "tokens/s" in meta and f"{answer['usage']['completion_tokens']} tokens" in meta


def test_stop_ends_the_answer_and_frees_the_slot(server, browser):
    from selenium.webdriver.common.by import By
    browser.get(server + "/")
    wait_until(browser, "document.getElementById('temperature').value !== ''")
    set_field(browser, "max_tokens", 900)
    browser.find_element(By.ID, "prompt").send_keys("Write a very long story about the sea.")
    browser.find_element(By.ID, "send").click()
    wait_until(browser, "(t => t && t.textContent.length > 0)(document.querySelector('.msg.assistant .text'))")
    browser.find_element(By.ID, "stop").click()
    state = wait_until(browser, "(s => s !== 'streaming' && s)(document.querySelector('.msg.assistant').dataset.state)")
    assert state == "stopped"
    assert "stopped" in browser.execute_script("return document.querySelector('.msg.assistant .meta').textContent")
    # The server cancelled the request: its slots are idle again.
    deadline = time.monotonic() + 10
    while True:
        with urllib.request.urlopen(server + "/slots", timeout=10) as r:
            slots = json.loads(r.read())
        if not any(s["is_processing"] for s in slots):
            break
        assert time.monotonic() < deadline, slots
        time.sleep(0.05)


def test_phase_view_shows_the_short_prompt_at_the_barrier(server, browser):
    from selenium.webdriver.common.by import By
    browser.get(server + "/")
    wait_until(browser, "document.getElementById('lanes').dataset.connected === 'true' && "
                        "document.querySelectorAll('#lanes .lane').length === 3")
    run_pair(server, stream=True)
    # Both requests of the pair finished, as the page's table says.
    rows = wait_until(browser, """(() => {
        const rows = Array.from(document.querySelectorAll('#requests tbody tr'))
          .map(r => ({id: r.dataset.request, n_prompt: +r.dataset.nPrompt, state: r.dataset.state}));
        return rows.length >= 2 && rows.slice(0, 2).every(r => r.state === 'finished') && rows.slice(0, 2);
      })()""")
    short, long_ = sorted(rows, key=lambda r: r["n_prompt"])
    assert short["n_prompt"] < long_["n_prompt"]
    segs = browser.execute_script("""return Array.from(document.querySelectorAll('#lanes .seg'))
        .map(s => ({state: s.dataset.state, id: s.dataset.request, from: +s.dataset.from, to: +s.dataset.to}))""")
    ready = [s for s in segs if s["id"] == short["id"] and s["state"] == "ready"]
    prefill = [s for s in segs if s["id"] == long_["id"] and s["state"] == "prefill"]
    assert any(r["from"] <= p["to"] and p["from"] <= r["to"] for r in ready for p in prefill), segs
    # And neither decoded before the barrier opened: the short one's decode
    # starts after its wait.
    decode = [s for s in segs if s["id"] == short["id"] and s["state"] == "decode"]
    assert decode and min(d["from"] for d in decode) > max(r["to"] for r in ready) - 1
    # A request that arrives while the page's chat answer decodes waits,
    # blocked by the phase though a slot is free, until that answer is done.
    for k, v in {"temperature": 0, "seed": 7, "max_tokens": 48}.items():
        set_field(browser, k, v)
    browser.find_element(By.ID, "prompt").send_keys("Explain how bread is made, step by step.")
    browser.find_element(By.ID, "send").click()
    wait_until(browser, "document.querySelector('.msg.assistant .text').textContent.length > 0")
    complete(server, "Describe the sea in one line.", 8)
    wait_until(browser, "(m => m && m.dataset.state === 'done')(document.querySelector('.msg.assistant'))")
    blocked = browser.execute_script(
        "return document.querySelectorAll('#lanes .lane:last-child .seg.st-blocked').length")
    assert blocked >= 1
    browser.save_screenshot(str(ARTIFACTS / "phase.png"))
