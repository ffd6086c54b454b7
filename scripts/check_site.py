"""Open every page of the built site in headless Chromium and fail on anything a reader would hit.

Serves ``docs/_build/html`` on 127.0.0.1 (Python's http.server, in a thread),
drives the system's Chromium through its chromedriver with Selenium (no browser
is downloaded), and for every page checks:

* every request succeeded (no network error, no HTTP status of 400 or more);
* no request went to another host (the site must read the same offline);
* the browser console logged no error;
* every image loaded (``naturalWidth > 0``, lazy images made eager first);
* no raw LaTeX is left in the prose (``\\(``, ``\\[``, ``$$``: MathJax did not run);
* no Python object repr leaked into the output (``<Figure size ...>``).

Then the site search must find pages for each ``--search`` term (by default
``softmax`` and ``matmul``). Prints a summary and exits with status 1 if any
check failed. Run it as ``nox -s site`` after ``nox -s docs``.
"""

from __future__ import annotations

import argparse
import functools
import http.server
import json
import re
import sys
import tempfile
import threading
from pathlib import Path
from urllib.parse import quote, urlsplit

REPO_ROOT = Path(__file__).resolve().parents[1]

#: Flags that keep Chromium from calling Google's services, which would show up as
#: requests to other hosts and as failed requests.
CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
)
#: Folders of the build that hold assets, not pages.
NOT_PAGES = ("_static", "_sources", "_downloads", "_images")

_RAW_LATEX = re.compile(r"\\\(|\\\)|\\\[|\\\]|\$\$")
_OBJECT_REPR = re.compile(r"<Figure size [^>]*>|<matplotlib\.[^>]*>|<[\w.]+ object at 0x[0-9a-f]+>")

# Text of the page outside code: what MathJax should have typeset.
_PROSE_JS = """
const skip = "pre, code, script, style, textarea, noscript, mjx-container, .highlight";
const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
const parts = [];
while (walker.nextNode()) {
  const node = walker.currentNode;
  if (!node.parentElement.closest(skip)) parts.push(node.textContent);
}
return parts.join(" ");
"""

_IMAGES_JS = """
const done = arguments[arguments.length - 1];
const images = Array.from(document.images);
images.forEach((img) => { if (img.loading === "lazy") img.loading = "eager"; });
const settled = images.map((img) => img.complete ? null : new Promise((resolve) => {
  img.addEventListener("load", resolve);
  img.addEventListener("error", resolve);
}));
Promise.all(settled).then(() => done({
  count: images.length,
  broken: images.filter((img) => img.naturalWidth === 0).map((img) => img.currentSrc || img.src),
}));
"""

_MATHJAX_JS = """
const done = arguments[arguments.length - 1];
if (window.MathJax && MathJax.startup && MathJax.startup.promise) {
  MathJax.startup.promise.then(() => done(true), () => done(false));
} else {
  done(null);
}
"""

_SEARCH_JS = """
const summary = document.querySelector("#search-results .search-summary, #search-results p");
const hits = document.querySelectorAll("#search-results ul.search li").length;
return summary && /found|did not match/i.test(summary.textContent)
  ? {hits: hits, summary: summary.textContent.trim()} : null;
"""


# Checks on text and on the browser's network log (no browser needed) ----------------


def find_raw_latex(text: str, context: int = 30) -> list[str]:
    """Snippets of ``text`` around each TeX delimiter (``\\(``, ``\\)``, ``\\[``, ``\\]``, ``$$``)."""
    return [text[max(0, m.start() - context) : m.end() + context] for m in _RAW_LATEX.finditer(text)]


def find_object_reprs(text: str) -> list[str]:
    """Python object reprs in ``text``: ``<Figure size 800x620 with 1 Axes>``, ``<x object at 0x...>``."""
    return [m.group(0) for m in _OBJECT_REPR.finditer(text)]


def network_events(log: list[dict]) -> list[dict]:
    """The DevTools ``Network.*`` events out of chromedriver's performance log entries."""
    events = []
    for entry in log:
        message = json.loads(entry["message"])["message"]
        if message["method"].startswith("Network."):
            events.append(message)
    return events


def classify_requests(events: list[dict], origin: str) -> dict:
    """Sort a page's network events into requests, requests to other hosts and failures.

    Only http(s) and ws(s) requests count (``data:`` URLs and the browser's own
    ``chrome://`` pages are no requests to a host).

    Args:
        events: DevTools ``Network.requestWillBeSent``, ``Network.responseReceived``
            and ``Network.loadingFailed`` events (others are ignored).
        origin: the site's ``scheme://host:port``.

    Returns:
        ``{"requests": [url], "other_hosts": [url], "failed": ["url: why"]}``.
    """
    urls, out = {}, {"requests": [], "other_hosts": [], "failed": []}
    for event in events:
        params = event.get("params", {})
        if event["method"] == "Network.requestWillBeSent":
            url = params["request"]["url"]
            if urlsplit(url).scheme not in ("http", "https", "ws", "wss"):
                continue
            urls[params["requestId"]] = url
            out["requests"].append(url)
            if f"{urlsplit(url).scheme}://{urlsplit(url).netloc}" != origin:
                out["other_hosts"].append(url)
        elif event["method"] == "Network.responseReceived" and params["requestId"] in urls:
            status = params["response"]["status"]
            if status >= 400:
                out["failed"].append(f"{urls[params['requestId']]}: HTTP {status}")
        elif event["method"] == "Network.loadingFailed" and params["requestId"] in urls:
            out["failed"].append(f"{urls[params['requestId']]}: {params.get('errorText', 'failed')}")
    return out


def site_pages(html_dir: Path) -> list[str]:
    """Every page of the build, as paths relative to ``html_dir`` (assets' folders left out)."""
    return sorted(
        p.relative_to(html_dir).as_posix()
        for p in html_dir.rglob("*.html")
        if p.relative_to(html_dir).parts[0] not in NOT_PAGES
    )


# The browser -------------------------------------------------------------------------


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):  # one line per request would drown the summary
        pass


def _serve(html_dir: Path) -> http.server.ThreadingHTTPServer:
    handler = functools.partial(_QuietHandler, directory=str(html_dir))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def _browser(chromium: str, chromedriver: str, profile: str):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in CHROMIUM_FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={profile}")
    options.add_argument("--window-size=1400,1000")
    options.set_capability("goog:loggingPrefs", {"performance": "ALL", "browser": "ALL"})
    driver = webdriver.Chrome(options=options, service=Service(executable_path=chromedriver))
    driver.set_page_load_timeout(60)
    driver.set_script_timeout(60)
    return driver


def _wait(driver, script: str, timeout: float):
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, timeout, poll_frequency=0.2).until(lambda d: d.execute_script(script))


def check(html_dir: Path, chromium: str, chromedriver: str, searches: list[str]) -> tuple[dict, list[str]]:
    """Open every page and run the searches; return (counts for the summary, problems)."""
    pages = site_pages(html_dir)
    if not pages:
        raise ValueError(f"html_dir must hold a built site, found no page in {html_dir}")
    server = _serve(html_dir)
    origin = f"http://127.0.0.1:{server.server_port}"
    problems: list[str] = []
    counts = {"pages": 0, "requests": 0, "other_hosts": 0, "failed": 0, "console_errors": 0, "images": 0}
    counts |= {"broken_images": 0, "raw_latex": 0, "object_reprs": 0, "math_pages": 0, "search": {}}
    with tempfile.TemporaryDirectory(prefix="check-site-") as profile:
        driver = _browser(chromium, chromedriver, profile)
        try:
            driver.get_log("performance"), driver.get_log("browser")  # the start page's own traffic
            for page in pages:
                driver.get(f"{origin}/{page}")
                typeset = driver.execute_async_script(_MATHJAX_JS)
                counts["math_pages"] += bool(typeset)
                if typeset is False:
                    problems.append(f"{page}: MathJax failed to typeset")
                images = driver.execute_async_script(_IMAGES_JS)
                prose = driver.execute_script(_PROSE_JS)
                text = driver.execute_script("return document.body.innerText;")
                net = classify_requests(network_events(driver.get_log("performance")), origin)
                errors = [e["message"] for e in driver.get_log("browser") if e["level"] == "SEVERE"]
                latex, reprs = find_raw_latex(prose), find_object_reprs(text)
                counts["pages"] += 1
                counts["requests"] += len(net["requests"])
                counts["images"] += images["count"]
                for key, found in [
                    ("other_hosts", net["other_hosts"]),
                    ("failed", net["failed"]),
                    ("console_errors", errors),
                    ("broken_images", images["broken"]),
                    ("raw_latex", latex),
                    ("object_reprs", reprs),
                ]:
                    counts[key] += len(found)
                    problems += [f"{page}: {key.replace('_', ' ')}: {item!r}" for item in found]
            for term in searches:
                driver.get(f"{origin}/search.html?q={quote(term)}")
                found = _wait(driver, _SEARCH_JS, 30)
                counts["search"][term] = found["hits"]
                if not found["hits"]:
                    problems.append(f"search for {term!r} found nothing ({found['summary']})")
                net = classify_requests(network_events(driver.get_log("performance")), origin)
                errors = [e["message"] for e in driver.get_log("browser") if e["level"] == "SEVERE"]
                problems += [f"search {term!r}: {p}" for p in net["other_hosts"] + net["failed"] + errors]
        finally:
            driver.quit()
            server.shutdown()
    return counts, problems


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--html", type=Path, default=REPO_ROOT / "docs" / "_build" / "html")
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    parser.add_argument("--chromedriver", default="/usr/bin/chromedriver")
    parser.add_argument("--search", action="append", help="a term the site search must find (repeatable)")
    args = parser.parse_args(argv)
    for name in ("chromium", "chromedriver"):
        path = getattr(args, name)
        if not Path(path).exists():
            parser.error(f"--{name}: {path} not found (Debian: apt-get install chromium chromium-driver)")
    if not (args.html / "index.html").exists():
        parser.error(f"--html: no index.html in {args.html}; build the site first (nox -s docs)")
    searches = args.search or ["softmax", "matmul"]
    counts, problems = check(args.html, args.chromium, args.chromedriver, searches)
    search = ", ".join(f"{term!r}: {hits} pages" for term, hits in counts["search"].items())
    print(
        f"pages: {counts['pages']} (MathJax typeset {counts['math_pages']})\n"
        f"requests: {counts['requests']}, to other hosts: {counts['other_hosts']}, "
        f"failed: {counts['failed']}\n"
        f"console errors: {counts['console_errors']}\n"
        f"images: {counts['images']}, not loaded: {counts['broken_images']}\n"
        f"raw LaTeX in the text: {counts['raw_latex']}, object reprs: {counts['object_reprs']}\n"
        f"search: {search}"
    )
    for problem in problems:
        print(f"FAIL {problem}")
    print(f"{'FAILED' if problems else 'OK'}: {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
