#!/usr/bin/env python3
"""Opens the showdown's page in headless Chromium and checks what a person sees.

  python3 scripts/check_report_page.py OUT_DIR [--screenshot PNG] [--negative-controls]

OUT_DIR is a showdown output folder (`target/showdown-ci` in CI): its
`index.html`, `report.json` and charts. The page fails the check when

- it does not load (no file, a load error, no load event within a minute,
  a script error), or its links to `report.md` and `report.json` are gone;
- a chart that `report.json` lists is missing from the page or from the
  folder, or a workload or hit-ratio study has no chart;
- a chart is empty: drawn smaller than 200 x 150 pixels, or without a
  coloured mark in its plotting area (`report.json` gives each chart's
  plotting area; larder's rows are blue and the others warm colours, so a
  plot whose pixels are all black, grey and white has lost its data);
- the page makes a network request: every request the page's session sends
  is logged through the DevTools protocol and anything but `file:`,
  `data:` and `about:` fails. Chromium also runs with its proxy pointed at
  a closed port and every host name unresolvable, so a request that slipped
  past the log would still fetch nothing.

A full-page screenshot is written to `--screenshot` (`OUT_DIR/index.png`
by default) for a person to look at: the top 16,000 pixels, the rest in
`index-2.png`, `index-3.png`... beside it.

`--negative-controls` then plants three faults in copies of the page (a
chart's marks removed, a chart taken out, an image fetched over http) and
fails unless the check rejects each of them.

Chromium is driven over `--remote-debugging-pipe` (file descriptors 3 and
4, one JSON message per NUL-terminated record), so only the standard
library is needed. The binary is `$CHROMIUM`, else the first of
`chromium`, `chromium-browser`, `google-chrome` on the PATH.
"""

import argparse
import base64
import fcntl
import json
import os
import pathlib
import re
import select
import shutil
import subprocess
import sys
import tempfile
import time

# Smallest drawn size of a chart, in CSS pixels.
MIN_WIDTH, MIN_HEIGHT = 200, 150
# A pixel is coloured when its channels differ by more than this (greys,
# black and white differ by nothing; anti-aliased grey text by a few).
SATURATION = 60
# Coloured pixels a chart must show: a single short line of two pixels'
# width has a few hundred.
MIN_COLOURED = 150
ALLOWED_SCHEMES = ("file:", "data:", "about:")
# The height of one part of the page's screenshot.
PART_HEIGHT = 16000
LOAD_TIMEOUT = 60.0


class Browser:
    """One headless Chromium, driven over the DevTools pipe."""

    def __init__(self, binary, profile):
        read_from_browser, browser_writes = os.pipe()
        browser_reads, write_to_browser = os.pipe()

        def pipe_fds():
            # Chromium reads commands from fd 3 and writes replies to fd 4:
            # move both ends clear of 3 and 4 first, then into place.
            reads = fcntl.fcntl(browser_reads, fcntl.F_DUPFD, 10)
            writes = fcntl.fcntl(browser_writes, fcntl.F_DUPFD, 10)
            os.dup2(reads, 3)
            os.dup2(writes, 4)

        # Chromium's own log goes to a file: a pipe nobody reads would fill
        # and stall it.
        self.log = open(os.path.join(profile, "chromium.log"), "w+b")
        self.proc = subprocess.Popen(
            [
                binary,
                "--headless",
                "--disable-gpu",
                "--no-sandbox",
                "--no-first-run",
                "--no-default-browser-check",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--disable-extensions",
                "--hide-scrollbars",
                "--disable-background-timer-throttling",
                "--disable-renderer-backgrounding",
                "--disable-backgrounding-occluded-windows",
                "--mute-audio",
                "--proxy-server=http://127.0.0.1:9",
                "--host-resolver-rules=MAP * ~NOTFOUND",
                f"--user-data-dir={profile}",
                "--window-size=1400,1000",
                "--remote-debugging-pipe",
                "about:blank",
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=self.log,
            preexec_fn=pipe_fds,
            close_fds=False,
        )
        os.close(browser_reads)
        os.close(browser_writes)
        self.to_browser = write_to_browser
        self.from_browser = read_from_browser
        self.buffer = b""
        self.next_id = 0
        self.events = []

    def send(self, method, params=None, session=None, timeout=LOAD_TIMEOUT):
        """Sends one command and returns its result; events that arrive
        meanwhile are kept in `self.events`."""
        self.next_id += 1
        message = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        data = json.dumps(message).encode() + b"\0"
        while data:
            data = data[os.write(self.to_browser, data):]
        deadline = time.monotonic() + timeout
        while True:
            reply = self.receive(deadline)
            if reply is None:
                raise CheckError(f"Chromium did not answer {method} within {timeout:.0f} s")
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise CheckError(f"{method} failed: {reply['error'].get('message')}")
                return reply.get("result", {})
            self.events.append(reply)

    def receive(self, deadline):
        """The next message, or None at the deadline."""
        while b"\0" not in self.buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            ready, _, _ = select.select([self.from_browser], [], [], left)
            if not ready:
                return None
            chunk = os.read(self.from_browser, 1 << 20)
            if not chunk:
                raise CheckError("Chromium exited: " + self.stderr_tail())
            self.buffer += chunk
        record, self.buffer = self.buffer.split(b"\0", 1)
        return json.loads(record)

    def wait_for(self, method, deadline):
        """Waits until an event `method` has arrived; returns whether it did."""
        while True:
            if any(e.get("method") == method for e in self.events):
                return True
            message = self.receive(deadline)
            if message is None:
                return False
            self.events.append(message)

    def stderr_tail(self):
        """The end of Chromium's log, for an error message."""
        self.log.seek(0)
        return self.log.read().decode(errors="replace")[-2000:]

    def close(self):
        try:
            self.send("Browser.close", timeout=10)
        except CheckError:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self.to_browser)
        os.close(self.from_browser)
        self.log.close()


class CheckError(Exception):
    pass


def find_chromium():
    binary = os.environ.get("CHROMIUM")
    if binary:
        return binary
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    raise CheckError("no Chromium found: install Debian's chromium package or set CHROMIUM")


# Counts the coloured pixels of a PNG (base64 in `__PNG__`). The PNG is
# decoded from bytes, not loaded from a URL: the page's content security
# policy forbids loading anything, and nothing here is a request.
COUNT_COLOURED = """
(async () => {
  const bytes = Uint8Array.from(atob('__PNG__'), c => c.charCodeAt(0));
  const image = await createImageBitmap(new Blob([bytes], {type: 'image/png'}));
  const canvas = new OffscreenCanvas(image.width, image.height);
  const context = canvas.getContext('2d');
  context.drawImage(image, 0, 0);
  const data = context.getImageData(0, 0, image.width, image.height).data;
  let count = 0;
  for (let i = 0; i < data.length; i += 4) {
    const r = data[i], g = data[i + 1], b = data[i + 2];
    if (Math.max(r, g, b) - Math.min(r, g, b) > __SATURATION__) count++;
  }
  return count;
})()
"""


def attach(browser, url):
    """A new tab at `url`, attached: its session id."""
    target = browser.send("Target.createTarget", {"url": url})["targetId"]
    return browser.send("Target.attachToTarget", {"targetId": target, "flatten": True})[
        "sessionId"
    ]


def coloured_pixels(browser, session, png_base64):
    script = COUNT_COLOURED.replace("__PNG__", png_base64).replace(
        "__SATURATION__", str(SATURATION)
    )
    result = browser.send(
        "Runtime.evaluate",
        {"expression": script, "awaitPromise": True, "returnByValue": True},
        session=session,
    )
    if "exceptionDetails" in result:
        raise CheckError(f"could not read a chart's pixels: {result['exceptionDetails']}")
    return result["result"]["value"]


# What the page holds, read in the browser after it loaded.
PAGE_PROBE = """
(() => {
  const figures = [...document.querySelectorAll('figure[data-chart]')].map(f => {
    const svg = f.querySelector('svg');
    const box = (svg || f).getBoundingClientRect();
    return {
      chart: f.dataset.chart,
      svg: !!svg,
      x: box.left + window.scrollX, y: box.top + window.scrollY,
      width: box.width, height: box.height,
      // The SVG's own width: drawn pixels per SVG pixel is width / this.
      drawn: svg && svg.viewBox.baseVal ? svg.viewBox.baseVal.width : 0,
    };
  });
  const links = [...document.querySelectorAll('a[href]')].map(a => a.getAttribute('href'));
  return JSON.stringify({
    title: document.title,
    figures,
    links,
    width: document.documentElement.scrollWidth,
    height: document.documentElement.scrollHeight,
  });
})()
"""


def check_page(out_dir, screenshot, binary, written=None):
    """Returns the problems found (an empty list when the page passes);
    appends the screenshots it wrote to `written`."""
    written = [] if written is None else written
    out_dir = pathlib.Path(out_dir).resolve()
    page = out_dir / "index.html"
    problems = []
    if not page.is_file():
        return [f"{page} does not exist"]
    try:
        report = json.loads((out_dir / "report.json").read_text())
    except (OSError, ValueError) as e:
        return [f"report.json does not load: {e}"]
    charts = report.get("charts", [])
    if not charts:
        problems.append("report.json lists no charts")
    for chart in charts:
        path = out_dir / chart["file"]
        if not path.is_file() or path.stat().st_size == 0:
            problems.append(f"chart file {chart['file']} is missing or empty")
    charted = {w for c in charts for w in c.get("workloads", [])}
    expected = [f"{w['family']} / {w['workload']}" for w in report.get("workloads", [])]
    expected += [f"lru / {s['workload']}" for s in report.get("hit_ratio", [])]
    for workload in expected:
        if workload not in charted:
            problems.append(f"workload {workload!r} has no chart")

    with tempfile.TemporaryDirectory(prefix="larder-page-check-") as profile:
        try:
            browser = Browser(binary, profile)
        except OSError as e:
            return problems + [f"Chromium ({binary}) does not start: {e}"]
        try:
            problems += drive(browser, page, charts, screenshot, written)
        except CheckError as e:
            problems.append(str(e))
        finally:
            browser.close()
    return problems


def drive(browser, page, charts, screenshot, written):
    problems = []
    session = attach(browser, "about:blank")
    for domain in ("Network", "Page", "Runtime"):
        browser.send(f"{domain}.enable", session=session)
    browser.send(
        "Emulation.setDeviceMetricsOverride",
        {"width": 1400, "height": 1000, "deviceScaleFactor": 1, "mobile": False},
        session=session,
    )
    browser.events.clear()
    navigated = browser.send("Page.navigate", {"url": page.as_uri()}, session=session)
    if navigated.get("errorText"):
        return [f"the page does not load: {navigated['errorText']}"]
    if not browser.wait_for("Page.loadEventFired", time.monotonic() + LOAD_TIMEOUT):
        return [f"the page fired no load event within {LOAD_TIMEOUT:.0f} s"]
    # Requests a late image or font would send: give them a moment.
    browser.wait_for("never", time.monotonic() + 1.0)

    for event in browser.events:
        if event.get("sessionId") != session:
            continue
        method, params = event.get("method"), event.get("params", {})
        if method == "Network.requestWillBeSent":
            url = params["request"]["url"]
            if not url.startswith(ALLOWED_SCHEMES):
                problems.append(f"the page makes a network request: {url}")
        elif method == "Network.loadingFailed" and params.get("type") != "Other":
            problems.append(f"a resource failed to load: {params.get('errorText')}")
        elif method == "Runtime.exceptionThrown":
            problems.append(f"script error: {params['exceptionDetails'].get('text')}")

    probe = browser.send(
        "Runtime.evaluate", {"expression": PAGE_PROBE, "returnByValue": True}, session=session
    )
    state = json.loads(probe["result"]["value"])
    if state["title"] != "larder showdown":
        problems.append(f"the page's title is {state['title']!r}, not 'larder showdown'")
    for link in ("report.md", "report.json"):
        if link not in state["links"]:
            problems.append(f"the page does not link {link}")
    on_page = {f["chart"]: f for f in state["figures"]}
    for chart in charts:
        figure = on_page.get(chart["file"])
        if figure is None:
            problems.append(f"chart {chart['file']} is not on the page")
            continue
        if not figure["svg"]:
            problems.append(f"chart {chart['file']} has no SVG")
            continue
        if figure["width"] < MIN_WIDTH or figure["height"] < MIN_HEIGHT:
            problems.append(
                f"chart {chart['file']} is drawn {figure['width']:.0f} x "
                f"{figure['height']:.0f} pixels"
            )
            continue
        # The plotting area only: the legend and the titles lie outside it
        # (their colours do not make a chart with no data look drawn).
        plot = chart.get("plot")
        if not figure["drawn"] or not plot or len(plot) != 4:
            problems.append(f"chart {chart['file']}: no SVG width or plotting area")
            continue
        scale = figure["width"] / figure["drawn"]
        left, top, right, bottom = plot
        # In view first: a capture beyond the viewport lays the page out
        # again, each time.
        browser.send(
            "Runtime.evaluate",
            {"expression": f"window.scrollTo(0, {figure['y']})"},
            session=session,
        )
        shot = browser.send(
            "Page.captureScreenshot",
            {
                "format": "png",
                "optimizeForSpeed": True,
                "clip": {
                    "x": figure["x"] + left * scale, "y": figure["y"] + top * scale,
                    "width": max(1, (right - left) * scale),
                    "height": max(1, (bottom - top) * scale), "scale": 1,
                },
            },
            session=session,
        )
        try:
            coloured = coloured_pixels(browser, session, shot["data"])
            if os.environ.get("CHECK_PAGE_VERBOSE"):
                print(f"{chart['file']}: {coloured} coloured pixels")
        except CheckError as e:
            problems.append(f"chart {chart['file']}: {e}")
            continue
        if coloured < MIN_COLOURED:
            problems.append(
                f"chart {chart['file']} is empty: {coloured} coloured pixels "
                f"(at least {MIN_COLOURED} expected)"
            )
    if len(on_page) < len(charts):
        problems.append(f"{len(on_page)} charts on the page, {len(charts)} listed")

    # The whole page at full scale, unless no screenshot is asked for, in
    # parts of at most 16,000 pixels (Chromium's limit for one capture is
    # about 16,384): the screenshot itself, then `-2`, `-3`... beside it.
    if screenshot is None:
        return problems
    first = pathlib.Path(screenshot)
    for stale in first.parent.glob(f"{first.stem}-*{first.suffix}"):
        stale.unlink()
    for part, top in enumerate(range(0, int(state["height"]), PART_HEIGHT)):
        shot = browser.send(
            "Page.captureScreenshot",
            {
                "format": "png",
                "captureBeyondViewport": True,
                "clip": {"x": 0, "y": top, "width": state["width"],
                         "height": min(PART_HEIGHT, state["height"] - top), "scale": 1},
            },
            session=session,
        )
        path = first.with_name(f"{first.stem}-{part + 1}{first.suffix}") if part else first
        path.write_bytes(base64.b64decode(shot["data"]))
        written.append(path)
    return problems


def plant(out_dir, scratch, name, change):
    """A copy of `out_dir` in `scratch/name` whose index.html is `change`d."""
    copy = pathlib.Path(scratch) / name
    shutil.copytree(out_dir, copy)
    page = copy / "index.html"
    html = page.read_text()
    changed = change(html)
    if changed == html:
        raise CheckError(f"negative control {name}: the fault could not be planted")
    page.write_text(changed)
    return copy


def first_chart_emptied(html):
    """The first chart as if drawn without data: every shape in a colour
    taken out, every coloured text turned black (axes, grid, text kept)."""
    start = html.index("<svg")
    end = html.index("</svg>", start)
    svg = html[start:end]

    def grey(colour):
        r, g, b = (int(colour[i:i + 2], 16) for i in (1, 3, 5))
        return max(r, g, b) - min(r, g, b) <= SATURATION

    def keep(shape):
        colours = re.findall(r'(?:fill|stroke)="(#[0-9A-Fa-f]{6})"', shape.group(0))
        return shape.group(0) if all(grey(c) for c in colours) else ""

    svg = re.sub(r"<(?:polyline|circle|rect|path|polygon|line)\b[^>]*/>\s*", keep, svg)
    svg = re.sub(r'(<text\b[^>]*fill=")#[0-9A-Fa-f]{6}', r"\1#000000", svg)
    return html[:start] + svg + html[end:]


def first_chart_removed(html):
    start = html.index("<figure")
    end = html.index("</figure>", start) + len("</figure>")
    return html[:start] + html[end:]


def remote_image(html):
    return html.replace(
        "</body>", '<img src="http://example.com/larder.png" alt="remote"></body>', 1
    )


def negative_controls(out_dir, binary):
    """Returns the controls the check failed to reject."""
    missed = []
    with tempfile.TemporaryDirectory(prefix="larder-page-controls-") as scratch:
        for name, change, expect in [
            ("empty-chart", first_chart_emptied, "is empty"),
            ("missing-chart", first_chart_removed, "is not on the page"),
            ("remote-image", remote_image, "network request: http://example.com/"),
        ]:
            copy = plant(out_dir, scratch, name, change)
            problems = check_page(copy, None, binary)
            caught = [p for p in problems if expect in p]
            print(f"negative control {name}: "
                  + (f"rejected ({caught[0]})" if caught else f"NOT rejected: {problems}"))
            if not caught:
                missed.append(name)
    return missed


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("out_dir")
    parser.add_argument("--screenshot")
    parser.add_argument("--negative-controls", action="store_true")
    args = parser.parse_args()
    screenshot = args.screenshot or os.path.join(args.out_dir, "index.png")
    written = []
    try:
        binary = find_chromium()
        problems = check_page(args.out_dir, screenshot, binary, written)
    except CheckError as e:
        problems = [str(e)]
    if problems:
        print("the showdown's page fails in Chromium:")
        for problem in problems:
            print(f"  - {problem}")
        return 1
    report = json.loads((pathlib.Path(args.out_dir) / "report.json").read_text())
    print(f"the showdown's page loads in Chromium: {len(report['charts'])} charts drawn, "
          f"no network request; screenshots {', '.join(str(p) for p in written)}")
    if args.negative_controls:
        missed = negative_controls(args.out_dir, binary)
        if missed:
            print(f"the check failed to reject: {', '.join(missed)}")
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
