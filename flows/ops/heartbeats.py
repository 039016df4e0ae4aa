"""Prefect's automation that marks a flow run Crashed when its heartbeats stop (its host died).

A flow run sends ``prefect.flow-run.heartbeat`` every ``PREFECT_FLOWS_HEARTBEAT_FREQUENCY``
seconds (30 in docker-compose.yml; Prefect's default is 180) from a thread of its own. The
automation, Prefect's documented one ("Detect zombie flows"), expects after each heartbeat
another one or a final state within ``WITHIN`` seconds (300), and sets the run CRASHED when
neither comes: a host that lost power, a container evicted or a process killed with SIGKILL no longer
leaves its run RUNNING until someone looks. The team deployment installs it once at start
(``python -m flows.ops.heartbeats``, the ``prefect-setup`` service); installing again changes
nothing, or replaces an automation of the same name that differs.
"""

from __future__ import annotations

import os
import sys

from flows.ops import prefect_api

NAME = "bottlenecks: crash flow runs whose heartbeats stopped"
FREQUENCY = 30  # seconds between heartbeats; docker-compose.yml sets PREFECT_FLOWS_HEARTBEAT_FREQUENCY to it
# silence that crashes a run: above Prefect's default frequency (180 s) with a minute to spare, so a
# client outside the compose file that keeps the default is never crashed while it lives
WITHIN = 300
FINAL = ("Completed", "Failed", "Cancelled", "Crashed")


def automation(within: int = WITHIN) -> dict:
    """The automation's JSON, as Prefect's documented ``Automation`` sends it."""
    return {
        "name": NAME,
        "description": f"A flow run with no heartbeat or final state for {within} s is marked Crashed (its host died).",
        "enabled": True,
        "trigger": {
            "type": "event",
            "posture": "Proactive",
            "match": {"prefect.resource.id": ["prefect.flow-run.*"]},
            "match_related": {},
            "after": ["prefect.flow-run.heartbeat"],
            "expect": ["prefect.flow-run.heartbeat", *(f"prefect.flow-run.{s}" for s in FINAL)],
            "for_each": ["prefect.resource.id"],
            "threshold": 1,
            "within": within,
        },
        "actions": [
            {
                "type": "change-flow-run-state",
                "state": "CRASHED",
                "message": f"no heartbeat for {within} s: the host running this flow run died or lost the server",
            }
        ],
    }


def installed(url: str) -> list[dict]:
    """The automations of that name on the server at ``url``."""
    return prefect_api.call(url, "POST", "/automations/filter", {"automations": {"name": {"any_": [NAME]}}})


def _same(found: dict, wanted: dict) -> bool:
    trigger, want = found.get("trigger") or {}, wanted["trigger"]
    same_trigger = all(
        sorted(trigger.get(k) or []) == sorted(want[k]) for k in ("after", "expect", "for_each")
    ) and float(trigger.get("within") or 0) == float(want["within"])
    actions = [(a.get("type"), a.get("state")) for a in found.get("actions") or []]
    return same_trigger and found.get("enabled") and actions == [("change-flow-run-state", "CRASHED")]


def install(url: str, within: int = WITHIN) -> str:
    """Install the automation on the Prefect server at ``url`` once; what was done, in a line."""
    wanted = automation(within)
    found = installed(url)
    if len(found) == 1 and _same(found[0], wanted):
        return f"the heartbeat automation is installed (flow runs silent for {within} s become Crashed)"
    for old in found:
        prefect_api.call(url, "DELETE", f"/automations/{old['id']}")
    prefect_api.call(url, "POST", "/automations/", wanted)
    verb = "replaced" if found else "installed"
    return f"{verb} the heartbeat automation: flow runs silent for {within} s become Crashed"


def main() -> int:
    url = os.environ.get("PREFECT_API_URL")
    if not url:
        print("PREFECT_API_URL is not set: the heartbeat automation goes on a Prefect server", file=sys.stderr)
        return 2
    try:
        print(install(url))
    except prefect_api.PrefectAPIError as e:
        print(f"could not install the heartbeat automation: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
