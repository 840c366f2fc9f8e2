#!/usr/bin/env python3
"""Opens a `cudatool ab --html` page in headless Chromium and reports, as JSON on stdout, what a
person would see: whether it rendered, where the first divergence is on the screen without
scrolling, what expanding a call shows, and what the filter box leaves for each expression given.

    ab_html_check.py PAGE [--filter EXPR]... [--chromium PATH] [--width W] [--height H]

Chromium is driven over the DevTools protocol on a pipe (--remote-debugging-pipe: fd 3 in, fd 4
out, messages separated by NUL bytes), so nothing beyond python3 and chromium is needed and no
port is opened. The user actions are real input events (mouse clicks, typed text, Enter); the
page is only read through the DOM. Requests for anything but the page itself are reported: the
page must need no network.

Exit status: 0 when the report was written (the caller judges it), 2 when the browser could not
be driven (its stderr is shown).
"""
import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-extensions", "--disable-dev-shm-usage", "--remote-debugging-pipe"]


class Browser:
    def __init__(self, chromium, width, height):
        self.profile = tempfile.mkdtemp(prefix="cudatool-chromium-")
        to_chrome_r, self.to_chrome = os.pipe()
        self.from_chrome, from_chrome_w = os.pipe()
        self.log = tempfile.TemporaryFile()

        def child_fds():
            a, b = os.dup(to_chrome_r), os.dup(from_chrome_w)
            os.dup2(a, 3)
            os.dup2(b, 4)
            os.set_inheritable(3, True)
            os.set_inheritable(4, True)

        args = [chromium] + FLAGS + ["--user-data-dir=" + self.profile,
                                     "--window-size=%d,%d" % (width, height), "about:blank"]
        self.proc = subprocess.Popen(args, preexec_fn=child_fds, close_fds=False,
                                     stdin=subprocess.DEVNULL, stdout=self.log, stderr=self.log,
                                     start_new_session=True)
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self.buf = b""
        self.next_id = 0
        self.events = []
        self.session = None

    def send(self, method, params=None, session=True):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params or {}}
        if session and self.session:
            msg["sessionId"] = self.session
        os.write(self.to_chrome, json.dumps(msg).encode() + b"\0")
        want = self.next_id
        while True:
            m = self.read()
            if m.get("id") == want:
                if "error" in m:
                    raise RuntimeError("%s: %s" % (method, m["error"]))
                return m.get("result", {})
            self.events.append(m)

    def read(self):
        while b"\0" not in self.buf:
            chunk = os.read(self.from_chrome, 1 << 20)
            if not chunk:
                raise RuntimeError("chromium closed the DevTools pipe")
            self.buf += chunk
        msg, self.buf = self.buf.split(b"\0", 1)
        return json.loads(msg)

    def wait_event(self, method, timeout):
        end = time.time() + timeout
        while time.time() < end:
            for i, m in enumerate(self.events):
                if m.get("method") == method:
                    del self.events[i]
                    return m
            self.events.append(self.read())
        raise RuntimeError("timed out waiting for " + method)

    def eval(self, expr):
        r = self.send("Runtime.evaluate", {"expression": expr, "returnByValue": True,
                                           "awaitPromise": True})
        if "exceptionDetails" in r:
            raise RuntimeError("page script failed: %s" % json.dumps(r["exceptionDetails"])[:2000])
        return r["result"].get("value")

    def until(self, expr, timeout=20.0):
        end = time.time() + timeout
        while time.time() < end:
            v = self.eval(expr)
            if v:
                return v
            time.sleep(0.05)
        raise RuntimeError("timed out waiting for: " + expr)

    def click(self, x, y):
        for kind in ("mouseMoved", "mousePressed", "mouseReleased"):
            p = {"type": kind, "x": x, "y": y}
            if kind != "mouseMoved":
                p.update({"button": "left", "clickCount": 1})
            self.send("Input.dispatchMouseEvent", p)

    def key(self, key, code, vk):
        for kind in ("keyDown", "keyUp"):
            self.send("Input.dispatchKeyEvent", {"type": kind, "key": key, "code": code,
                                                 "windowsVirtualKeyCode": vk})

    def close(self):
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait()
        shutil.rmtree(self.profile, ignore_errors=True)

    def stderr(self):
        self.log.seek(0)
        return self.log.read().decode(errors="replace")[-4000:]


RECT = "(function(el){ if(!el) return null; const r=el.getBoundingClientRect();" \
       " return {top:r.top, bottom:r.bottom, left:r.left, right:r.right, text:el.textContent.slice(0, 400)}; })"


def check(b, page, filters, width, height, screenshot=None):
    report = {"requests": [], "errors": []}
    page_url = "file://" + os.path.abspath(page)
    b.session = None
    targets = b.send("Target.getTargets", session=False)["targetInfos"]
    target = next(t["targetId"] for t in targets if t["type"] == "page")
    b.session = b.send("Target.attachToTarget", {"targetId": target, "flatten": True},
                       session=False)["sessionId"]
    for m in ("Page.enable", "Runtime.enable", "Network.enable"):
        b.send(m)
    b.send("Emulation.setDeviceMetricsOverride", {"width": width, "height": height,
                                                  "deviceScaleFactor": 1, "mobile": False})
    t0 = time.time()
    b.send("Page.navigate", {"url": page_url})
    b.wait_event("Page.loadEventFired", 60)
    b.until("window.abPage && window.abPage.ready", 60)
    report["load_seconds"] = round(time.time() - t0, 3)
    report["ready"] = True
    report["title"] = b.eval("document.title")
    report["verdict"] = b.eval("document.getElementById('verdict').textContent")
    report["rows"] = b.eval("window.abPage.rows")
    report["rows_in_dom"] = b.eval("document.querySelectorAll('#window .r').length")
    report["scroll_y"] = b.eval("window.scrollY")
    report["viewport"] = b.eval("({width: innerWidth, height: innerHeight})")
    report["list"] = b.eval(RECT + "(document.getElementById('list'))")
    report["first"] = b.eval(RECT + "(document.querySelector('#window .r.first'))")
    report["first_row"] = b.eval("window.abPage.first")
    if screenshot:
        import base64
        with open(screenshot, "wb") as f:
            f.write(base64.b64decode(b.send("Page.captureScreenshot", {"format": "png"})["data"]))

    # Expand the first divergence with a click on it.
    f = report["first"]
    report["expanded"] = None
    if f:
        b.click((f["left"] + f["right"]) / 2, (f["top"] + f["bottom"]) / 2)
        try:
            b.until("!!document.querySelector('#window .d')", 10)
        except RuntimeError as e:  # the caller says what is missing
            report["problems"] = [str(e)]
            f = None
    if f:
        report["expanded"] = b.eval("""(function(){
          const d = document.querySelector('#window .d');
          const names = (side) => Array.from(d.querySelectorAll('.side.' + side + ' .m .mn')).map(e => e.textContent);
          const values = (side) => Array.from(d.querySelectorAll('.side.' + side + ' .m .mv')).map(e => e.textContent);
          return {row: +d.dataset.details, a_members: names('a'), b_members: names('b'),
                  a_values: values('a'), b_values: values('b'),
                  diff_fields: Array.from(d.querySelectorAll('.diffs tr td:first-child')).slice(1).map(e => e.textContent),
                  highlighted: Array.from(d.querySelectorAll('.m.hl .mn')).map(e => e.textContent),
                  text: d.textContent.slice(0, 4000)};
        })()""")

    # Type each filter into the box, as a person would, and press Enter.
    report["filters"] = []
    box = b.eval(RECT + "(document.getElementById('filter'))")
    for expr in filters:
        b.click((box["left"] + box["right"]) / 2, (box["top"] + box["bottom"]) / 2)
        b.eval("document.getElementById('filter').select()")
        if expr:
            b.send("Input.insertText", {"text": expr})
        else:
            b.key("Backspace", "Backspace", 8)
        b.key("Enter", "Enter", 13)
        b.until("document.getElementById('filter').value === %s && window.abPage.shown() !== undefined"
                % json.dumps(expr), 10)
        time.sleep(0.2)
        report["filters"].append(b.eval("""(function(expr){
          return {expr: expr, shown: window.abPage.shown(), mode: window.abPage.mode(),
                  count_text: document.getElementById('count').textContent,
                  visible: Array.from(document.querySelectorAll('#window .r')).map(r => ({
                    row: +r.dataset.row, a: r.querySelector('.at').title,
                    b: r.querySelector('.bt').title}))};
        })(%s)""" % json.dumps(expr)))

    for m in b.events:
        meth = m.get("method")
        if meth == "Network.requestWillBeSent":
            url = m["params"]["request"]["url"]
            if url != page_url and not url.startswith("data:"):
                report["requests"].append(url)
        elif meth == "Runtime.exceptionThrown":
            report["errors"].append(json.dumps(m["params"]["exceptionDetails"])[:1000])
        elif meth == "Runtime.consoleAPICalled" and m["params"].get("type") == "error":
            report["errors"].append(json.dumps(m["params"]["args"])[:1000])
    return report


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("page")
    ap.add_argument("--filter", action="append", default=[])
    ap.add_argument("--chromium", default=os.environ.get("CUDATOOL_CHROMIUM", "/usr/bin/chromium"))
    ap.add_argument("--width", type=int, default=1280)
    ap.add_argument("--height", type=int, default=800)
    ap.add_argument("--timeout", type=int, default=120)
    ap.add_argument("--screenshot", help="also save a PNG of the page as it opened")
    o = ap.parse_args()
    if not os.access(o.chromium, os.X_OK):
        print("ab_html_check: %s is missing: install Debian's chromium (tools/install-deps.sh, or "
              "apt-get install chromium)" % o.chromium, file=sys.stderr)
        return 2
    signal.signal(signal.SIGALRM, lambda *_: (_ for _ in ()).throw(RuntimeError("timed out")))
    signal.alarm(o.timeout)
    b = Browser(o.chromium, o.width, o.height)
    try:
        report = check(b, o.page, o.filter, o.width, o.height, o.screenshot)
    except Exception as e:  # the browser could not be driven: say why, with its own words
        print("ab_html_check: %s\n--- chromium stderr ---\n%s" % (e, b.stderr()), file=sys.stderr)
        return 2
    finally:
        signal.alarm(0)
        b.close()
    json.dump(report, sys.stdout)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
