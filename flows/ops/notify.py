"""Telling someone what ``bottlenecks history`` found, through a target the user names:

- ``http://...`` / ``https://...``: a JSON POST (``urllib``): pipeline, verdict, changes, links, text;
- ``cmd:COMMAND``: a shell command run with the message's text on stdin and ``BOTTLENECKS_PIPELINE``,
  ``BOTTLENECKS_VERDICT`` in its environment (``cmd:mail -s nightly team@example.org``);
- ``block:TYPE/NAME``: a saved Prefect notification block (``block:slack-webhook/nightly``), through
  Prefect's own Block API, so Slack, Teams, PagerDuty, e-mail and custom webhooks work as Prefect sends them;
- any other ``SCHEME://...`` that Apprise (the library Prefect's notification blocks call) reads:
  ``slack://``, ``msteams://``, ``mailto://``, ``discord://``, ``json://`` and the rest of its list,
  checked by the same Apprise parser that sends to it.

``when`` chooses the verdicts that are sent: ``regression`` (the default), ``pipeline`` (a regression, or a
changed pipeline that moved a judged metric or claim beyond its noise, either way: such a move is never a
regression, so ``regression`` keeps quiet about it), ``change`` (anything the judge flagged, improvements
included) or ``always``. A failed delivery raises :class:`NotifyError` naming the
target and why; the caller reports it without changing the verdict's exit status.
"""

from __future__ import annotations

import json
import os
import subprocess
import urllib.error
import urllib.request
from dataclasses import dataclass

WHEN = ("regression", "pipeline", "change", "always")
TIMEOUT = 20.0  # seconds for a webhook, a command or a block to deliver; a nightly job must not hang


class NotifyError(Exception):
    """A target that cannot be used, or a message that could not be delivered."""


APPRISE_FORMS = (
    "slack://TOKEN_A/TOKEN_B/TOKEN_C, msteams://..., mailto://USER:PASSWORD@HOST, discord://ID/TOKEN, json://HOST/PATH"
)


@dataclass(frozen=True)
class Target:
    kind: str  # "url", "cmd", "block" or "apprise"
    value: str

    def __str__(self) -> str:
        return self.value if self.kind in ("url", "apprise") else f"{self.kind}:{self.value}"


def parse_target(raw: str) -> Target:
    """``http(s)://HOST/...``, ``cmd:COMMAND``, ``block:TYPE/NAME`` or an Apprise URL; anything else is
    refused with the forms (the same parse `schedule --notify` checks with and `send` sends by)."""
    text = raw.strip()
    scheme, sep, rest = text.partition("://")
    if sep and scheme.lower() in ("http", "https"):
        return Target("url", _http_url(raw, scheme.lower(), rest))
    if sep and scheme:
        return Target("apprise", _apprise_url(raw, text))
    kind, sep, value = text.partition(":")
    if sep and kind in ("cmd", "block") and value.strip():
        if kind == "block" and "/" not in value:
            raise NotifyError(
                f"--notify {raw!r}: a block is named TYPE/NAME, e.g. block:slack-webhook/{value.strip()} "
                "(`prefect block ls` lists them)"
            )
        return Target(kind, value.strip())
    raise NotifyError(f"--notify {raw!r}: {FORMS}")


FORMS = (
    "expected an http(s) URL (a JSON POST), cmd:COMMAND (the message on its stdin), block:TYPE/NAME (a Prefect "
    f"notification block) or an Apprise URL such as {APPRISE_FORMS}"
)


def _http_url(raw: str, scheme: str, rest: str) -> str:
    """The URL of a JSON webhook with its scheme in lower case, or NotifyError saying what is wrong."""
    from urllib.parse import urlsplit

    url = f"{scheme}://{rest}"
    parts = urlsplit(url)
    host = parts.hostname or ""
    if not host or any(ch.isspace() for ch in parts.netloc) or not all(c.isalnum() or c in "-._[]:" for c in host):
        raise NotifyError(f"--notify {raw!r}: the URL has no valid host ({parts.netloc!r}); {FORMS}")
    return url


def _apprise_url(raw: str, text: str) -> str:
    """``text`` when Apprise reads it as one of its services, else NotifyError with the forms."""
    import apprise

    if not apprise.Apprise().add(text):
        raise NotifyError(f"--notify {raw!r}: Apprise reads no service in this URL; {FORMS}")
    return text


def verdict(flags) -> str:
    """``regression``, ``improvement`` (only improvements), ``change`` (anything else flagged) or ``unchanged``."""
    if any(f.is_regression for f in flags):
        return "regression"
    if flags and all(f.kind == "improvement" for f in flags):
        return "improvement"
    return "change" if flags else "unchanged"


def moved_with_pipeline(flag) -> bool:
    """Whether ``flag`` is a judged metric or claim (better or worse by its direction) that moved beyond
    its noise in a run whose pipeline changed."""
    return flag.kind == "pipeline" and flag.metric != "pipeline" and flag.direction in ("better", "worse")


def due(when: str, found: str, flags=()) -> bool:
    """Whether a verdict ``found`` (with its ``flags``) is sent under ``--notify-on when``."""
    if when == "pipeline" and any(moved_with_pipeline(f) for f in flags):
        return True
    return when == "always" or (when == "change" and found != "unchanged") or found == "regression"


def message(pipeline: str, flags, links: dict[str, str], notes: list[str] = ()) -> dict:
    """The JSON body: pipeline, verdict, its changes, links to the runs, and the same as text."""
    found = verdict(flags)
    lines = [f"bottlenecks history {pipeline}: {found}"]
    lines += [f"{f.kind.upper()} {f.message}" for f in flags]
    lines += list(notes)
    lines += [f"{name} run: {url}" for name, url in links.items()]
    return {
        "pipeline": pipeline,
        "verdict": found,
        "changes": [f.as_dict() for f in flags],
        "links": links,
        "notes": list(notes),
        "text": "\n".join(lines),
    }


def send(target: Target, body: dict, timeout: float = TIMEOUT) -> str:
    """Deliver ``body`` to ``target``; what was done, e.g. ``POST http://... -> 200``."""
    if target.kind == "url":
        return _post(target.value, body, timeout)
    if target.kind == "cmd":
        return _command(target.value, body, timeout)
    if target.kind == "apprise":
        return _apprise(target.value, body)
    return _block(target.value, body)


def _apprise(url: str, body: dict) -> str:
    import apprise

    service = apprise.Apprise()
    service.add(url)
    if not service.notify(body=body["text"], title=f"bottlenecks history {body['pipeline']}: {body['verdict']}"):
        raise NotifyError(f"notification to {url.split('://', 1)[0]}:// failed: Apprise could not deliver it")
    return f"sent through Apprise ({url.split('://', 1)[0]}://)"


def _post(url: str, body: dict, timeout: float) -> str:
    request = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}, method="POST"
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return f"POST {url} -> {response.status}"
    except urllib.error.HTTPError as e:
        raise NotifyError(f"notification to {url} failed: HTTP {e.code} {e.reason}") from None
    except (urllib.error.URLError, OSError) as e:
        reason = getattr(e, "reason", e)
        raise NotifyError(f"notification to {url} failed: could not reach it ({reason})") from None


def _command(command: str, body: dict, timeout: float) -> str:
    env = {**os.environ, "BOTTLENECKS_PIPELINE": body["pipeline"], "BOTTLENECKS_VERDICT": body["verdict"]}
    try:
        done = subprocess.run(
            command, shell=True, input=body["text"], text=True, capture_output=True, timeout=timeout, env=env
        )
    except subprocess.TimeoutExpired:
        raise NotifyError(f"notification command {command!r} did not finish in {timeout:.0f} s") from None
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip()[-400:]
        raise NotifyError(f"notification command {command!r} exited {done.returncode}: {tail or 'no output'}")
    return f"ran {command!r}"


def _block(name: str, body: dict) -> str:
    from prefect.blocks.core import Block

    try:
        block = Block.load(name)
    except Exception as e:  # noqa: BLE001  (no server, no such block: say which)
        raise NotifyError(
            f"notification block {name!r} could not be loaded: {type(e).__name__}: {e} "
            "(`prefect block ls` lists the saved blocks; PREFECT_API_URL names the server)"
        ) from None
    if not callable(getattr(block, "notify", None)):
        raise NotifyError(f"block {name!r} is a {type(block).__name__}, not a notification block")
    try:
        block.notify(body["text"], subject=f"bottlenecks history {body['pipeline']}: {body['verdict']}")
    except Exception as e:  # noqa: BLE001  (the service refused it)
        raise NotifyError(f"notification block {name!r} failed: {type(e).__name__}: {e}") from None
    return f"sent through block {name}"
