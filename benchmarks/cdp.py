"""Drive headless Chromium through the DevTools protocol: open a page, click by visible text, type,
and save a PNG. For screenshots that need clicks (``mlflow_screenshots.py``); pages that need none are
taken with ``prefect_screenshots.shoot``.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path

from websockets.sync.client import connect


def browser() -> str:
    """The Chromium executable on the PATH."""
    found = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    if found is None:
        raise SystemExit("chromium not found: install it (apt-get install -y chromium)")
    return found


def stop_group(proc: subprocess.Popen) -> None:
    """End a server started in its own process group: SIGTERM, then SIGKILL after 20 s."""
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)


CLICKABLE = "button, [role=button], [role=tab], [role=menuitem], [role=option], a, label, span"
# what an element says: its text, else its aria-label or placeholder (an icon button, a search box)
_SAID = "const said = e => ((e.innerText || '').trim() || e.getAttribute('aria-label') || e.placeholder || '').trim();"
_VISIBLE = "].filter(e => e.offsetParent !== null)"


class Page:
    """One headless Chromium tab at ``width`` x ``height``, closed with the browser on ``close()``."""

    def __init__(self, width: int = 1280, height: int = 800):
        from flows.services.ports import free_port

        self._profile = tempfile.TemporaryDirectory()
        port = free_port()
        self._proc = subprocess.Popen(
            [
                browser(),
                "--headless=new",
                "--no-sandbox",
                "--disable-gpu",
                "--hide-scrollbars",
                f"--user-data-dir={self._profile.name}",
                f"--window-size={width},{height}",
                f"--remote-debugging-port={port}",
                "about:blank",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=2) as r:
                    tabs = [t for t in json.loads(r.read()) if t.get("type") == "page"]
                if tabs:
                    break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise SystemExit("chromium did not open its DevTools port")
            time.sleep(0.5)
        self._ws = connect(tabs[0]["webSocketDebuggerUrl"], max_size=None, open_timeout=30)
        self._id = 0
        self.send("Emulation.setDeviceMetricsOverride", width=width, height=height, deviceScaleFactor=1, mobile=False)

    def send(self, method: str, **params):
        """Call a DevTools method and return its result (events in between are skipped)."""
        self._id += 1
        self._ws.send(json.dumps({"id": self._id, "method": method, "params": params}))
        while True:
            msg = json.loads(self._ws.recv(timeout=120))
            if msg.get("id") == self._id:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg.get("result", {})

    def js(self, expression: str):
        """The value of a JavaScript expression in the page (awaited when it is a promise)."""
        out = self.send("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in out:
            raise RuntimeError(f"{expression[:80]}: {out['exceptionDetails'].get('text')}")
        return out.get("result", {}).get("value")

    def open(self, url: str, wait_s: float = 10) -> None:
        self.send("Page.navigate", url=url)
        time.sleep(wait_s)

    def wait_for(self, text: str, timeout_s: float = 60) -> None:
        """Wait until ``text`` is on the page (as text, or a search box's placeholder)."""
        deadline = time.monotonic() + timeout_s
        said = json.dumps(text)
        placeholder = f"document.querySelector('[placeholder=' + JSON.stringify({said}) + ']')"
        on_page = f"document.body && (document.body.innerText.includes({said}) || !!{placeholder})"
        while not self.js(on_page):
            if time.monotonic() > deadline:
                raise SystemExit(f"{text!r} did not appear on {self.js('location.href')}")
            time.sleep(1)

    def click(self, text: str, selector: str = CLICKABLE, nth: int = 0) -> None:
        """Click the ``nth`` visible element matching ``selector`` whose text (or, without text, its
        aria-label) is ``text``, else the first that starts with it, as a user's mouse would."""
        found = self.js(
            f"""(() => {{
              const want = {json.dumps(text)};
              const all = [...document.querySelectorAll({json.dumps(selector)}){_VISIBLE};
              {_SAID}
              const exact = all.filter(e => said(e) === want);
              const starts = all.filter(e => said(e).startsWith(want));
              const hits = exact.length ? exact : starts;
              const e = hits[{nth}];
              if (!e) return null;
              e.scrollIntoView({{block: 'center'}});
              const r = e.getBoundingClientRect();
              return [r.x + r.width / 2, r.y + r.height / 2];
            }})()"""
        )
        if found is None:
            raise SystemExit(f"nothing to click named {text!r} on {self.js('location.href')}")
        self._press(*found)

    def shows(self, text: str, selector: str = CLICKABLE) -> bool:
        """Whether a visible element matching ``selector`` says ``text``."""
        return bool(
            self.js(
                f"""(() => {{
                  {_SAID}
                  return [...document.querySelectorAll({json.dumps(selector)}){_VISIBLE}.some(
                    e => said(e) === {json.dumps(text)});
                }})()"""
            )
        )

    def click_nth(self, selector: str, nth: int) -> None:
        """Click the ``nth`` visible element matching ``selector`` (an icon without text or label)."""
        found = self.js(
            f"""(() => {{
              const e = [...document.querySelectorAll({json.dumps(selector)}){_VISIBLE}[{nth}];
              if (!e) return null;
              const r = e.getBoundingClientRect();
              return [r.x + r.width / 2, r.y + r.height / 2];
            }})()"""
        )
        if found is None:
            raise SystemExit(f"no element {nth} of {selector!r} on {self.js('location.href')}")
        self._press(*found)

    def trigger(self, selector: str) -> None:
        """Press the first element matching ``selector`` by its events, laid out or not (a header icon
        that shows only under the mouse); a menu it opens is then clicked as usual."""
        events = "['pointerdown', 'mousedown', 'pointerup', 'mouseup', 'click']"
        init = "{bubbles: true, button: 0, pointerType: 'mouse'}"
        done = self.js(
            f"""(() => {{
              const e = document.querySelector({json.dumps(selector)});
              if (!e) return false;
              for (const t of {events}) e.dispatchEvent(new PointerEvent(t, {init}));
              return true;
            }})()"""
        )
        if not done:
            raise SystemExit(f"no element {selector!r} on {self.js('location.href')}")

    def key(self, key: str, code: int) -> None:
        """Press and release a key (``Escape``, 27)."""
        for kind in ("keyDown", "keyUp"):
            self.send("Input.dispatchKeyEvent", type=kind, key=key, code=key, windowsVirtualKeyCode=code)
        time.sleep(1)

    def _press(self, x: float, y: float) -> None:
        for kind in ("mouseMoved", "mousePressed", "mouseReleased"):
            self.send("Input.dispatchMouseEvent", type=kind, x=x, y=y, button="left", clickCount=1)
        time.sleep(1.5)

    def type(self, text: str) -> None:
        """Type ``text`` into the focused element."""
        self.send("Input.insertText", text=text)
        time.sleep(1.5)

    def shot(self, path: Path) -> None:
        data = self.send("Page.captureScreenshot", format="png")["data"]
        path.write_bytes(base64.b64decode(data))
        print(f"saved {path}  ({self.js('location.href')})")

    def close(self) -> None:
        try:
            self._ws.close()
        finally:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self._proc.kill()
            self._profile.cleanup()
