"""The team deployment for real: Postgres, `mlflow server` and `prefect server start` on loopback,
each asking for a login as docker-compose.yml's do; pipelines run through `bottlenecks` subprocesses
pointed at them by MLFLOW_TRACKING_URI and PREFECT_API_URL and logged in by MLFLOW_TRACKING_USERNAME,
MLFLOW_TRACKING_PASSWORD and PREFECT_API_AUTH_STRING; results checked through the servers' REST APIs."""

import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from components import Context, component
from tests.support.files import write
from tests.support.servers import TeamServers, api, pg_bin

pytestmark = [
    pytest.mark.server,
    pytest.mark.slow,
    pytest.mark.skipif(
        pg_bin() is None, reason="Postgres binaries absent (Debian package 'postgresql'); CI installs them"
    ),
]
REPO = Path(__file__).resolve().parents[2]
C = "tests.support.engine_components"
H = "tests.ops.test_servers"


@component("opstest.hold", outputs=["released"])
def hold(ctx: Context, *, started: str, release: str, timeout: float = 120.0) -> dict:
    """Note that the step started, then wait until the release file exists."""
    with open(started, "a") as fh:
        fh.write(f"{os.getpid()}\n")
    deadline = time.monotonic() + timeout
    while not Path(release).exists():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{release} did not appear within {timeout}s")
        time.sleep(0.2)
    ctx.log_metric("held", 1.0)
    return {"released": True}


@pytest.fixture(scope="module")
def servers():
    team = TeamServers()
    try:
        team.start()
        yield team
    finally:
        team.stop()


# Steps run in the command's own threads where a test is about the servers, not the executor: a
# pool of worker processes (each importing MLflow, and torch for a step that uses it) adds seconds to
# every run. The first test keeps the default pool, whose workers track to the server themselves.
THREADS = {"BOTTLENECKS_EXECUTOR": "threads"}


def cli(servers, home, *args, timeout=240, wait=True, **env):
    exe = Path(sys.executable).parent / "bottlenecks"
    cmd = [str(exe), *args] if exe.exists() else [sys.executable, "-m", "flows.cli", *args]
    kwargs = dict(
        cwd=REPO,
        env=servers.client_env(home, COLUMNS="250", **env),
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    if not wait:
        return subprocess.Popen(cmd, start_new_session=True, **kwargs)
    return subprocess.run(cmd, timeout=timeout, **kwargs)


def mlflow_runs(servers, experiment):
    exp = api("GET", f"{servers.mlflow_url}/api/2.0/mlflow/experiments/get-by-name?experiment_name={experiment}")
    found = api(
        "POST",
        f"{servers.mlflow_url}/api/2.0/mlflow/runs/search",
        {"experiment_ids": [exp["experiment"]["experiment_id"]], "max_results": 1000},
    )
    runs = []
    for run in found.get("runs", []):
        tags = {t["key"]: t["value"] for t in run["data"].get("tags", [])}
        metrics = {m["key"]: m["value"] for m in run["data"].get("metrics", [])}
        runs.append(
            {
                "id": run["info"]["run_id"],
                "status": run["info"]["status"],
                "tags": tags,
                "metrics": metrics,
                "name": tags.get("mlflow.runName"),
            }
        )
    return runs


def wait_for(predicate, timeout, what):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def test_servers_refuse_requests_without_the_login(servers):
    mlflow_read = f"{servers.mlflow_url}/api/2.0/mlflow/experiments/search?max_results=1"
    prefect_read = f"{servers.prefect_url}/flow_runs/filter"
    for method, url, body in (("GET", mlflow_read, None), ("POST", prefect_read, {})):
        for login in ("", "admin:not-the-password"):  # none, and a wrong one
            with pytest.raises(urllib.error.HTTPError) as refused:
                api(method, url, body, login=login, attempts=1)
            assert refused.value.code == 401, (url, login)
        api(method, url, body)  # the registered login: admitted
    for health in (f"{servers.mlflow_url}/health", f"{servers.prefect_url}/health"):
        with urllib.request.urlopen(health, timeout=10) as answer:  # what docker-compose.yml's health checks ask
            assert answer.status == 200


def test_a_client_without_the_login_stops_before_any_work(servers, tmp_path):
    path = write(
        tmp_path,
        f"""\
        name: srv-no-login
        steps:
          nums: {{uses: {C}:numbers}}
        """,
    )
    home = tmp_path / "home"
    blank = {name: "" for name in servers.credentials()}
    done = cli(servers, home, "run", str(path), **blank)
    assert done.returncode == 1, done.stdout
    text = " ".join(done.stdout.split())
    assert f"MLflow server at {servers.mlflow_url} asks for a login (HTTP 401): set MLFLOW_TRACKING_USERNAME" in text
    assert f"Prefect API at {servers.prefect_url} asks for a login (HTTP 401): set PREFECT_API_AUTH_STRING" in text
    wrong = {"MLFLOW_TRACKING_PASSWORD": "not-the-password", "PREFECT_API_AUTH_STRING": "admin:not-the-password"}
    done = cli(servers, home, "run", str(path), **wrong)
    assert done.returncode == 1, done.stdout
    text = " ".join(done.stdout.split())
    assert f"MLflow server at {servers.mlflow_url} refused the login of user 'admin' (HTTP 401)" in text
    assert f"Prefect API at {servers.prefect_url} refused the login (HTTP 401)" in text
    with pytest.raises(urllib.error.HTTPError) as absent:  # nothing was run
        api("GET", f"{servers.mlflow_url}/api/2.0/mlflow/experiments/get-by-name?experiment_name=srv-no-login")
    assert absent.value.code == 404
    listed = cli(servers, home, "schedule", "--list", **blank)  # the schedule commands' own REST calls
    assert listed.returncode != 0 and "asks for a login (HTTP 401)" in " ".join(listed.stdout.split()), listed.stdout


def test_pipeline_runs_against_servers(servers, tmp_path):
    path = write(
        tmp_path,
        f"""\
        name: srv-track
        steps:
          nums: {{uses: {C}:numbers, with: {{n: 3, offset: "${{matrix.offset}}"}}, matrix: {{offset: [0, 10]}}}}
          sum: {{uses: {C}:total, with: {{values: "${{nums.values}}"}}, matrix: {{offset: [0, 10]}}}}
        """,
    )
    done = cli(servers, tmp_path / "home", "run", str(path))
    assert done.returncode == 0, done.stdout
    assert f"tracking={servers.mlflow_url}" in done.stdout
    runs = mlflow_runs(servers, "srv-track")
    parents = [r for r in runs if "mlflow.parentRunId" not in r["tags"]]
    assert len(parents) == 1 and parents[0]["status"] == "FINISHED"
    kids = {r["name"]: r for r in runs if r["tags"].get("mlflow.parentRunId") == parents[0]["id"]}
    assert set(kids) == {"nums[offset=0]", "nums[offset=10]", "sum[offset=0]", "sum[offset=10]"}
    assert kids["sum[offset=10]"]["metrics"]["enginetest/total/total"] == 33.0
    artifacts = api("GET", f"{servers.mlflow_url}/api/2.0/mlflow/artifacts/list?run_id={kids['nums[offset=0]']['id']}")
    assert [f["path"] for f in artifacts["files"]] == ["numbers.txt"]  # stored by the server, not locally

    flow_run = api("GET", f"{servers.prefect_url}/flow_runs/{parents[0]['tags']['prefect_flow_run_id']}")
    assert flow_run["state_type"] == "COMPLETED"
    tasks = api("POST", f"{servers.prefect_url}/task_runs/filter", {"flow_runs": {"id": {"any_": [flow_run["id"]]}}})
    assert sorted(t["name"] for t in tasks) == sorted(kids)
    assert {t["state_type"] for t in tasks} == {"COMPLETED"}
    # the run reads in the server's UI as it does with the background server: name, tags, logs, link
    assert re.match(r"^srv-track \d{4}-\d\d-\d\d \d\d:\d\d$", flow_run["name"]), flow_run["name"]
    assert "pipeline:srv-track" in flow_run["tags"], flow_run["tags"]
    logs = api("POST", f"{servers.prefect_url}/logs/filter", {"logs": {"flow_run_id": {"any_": [flow_run["id"]]}}})
    said = [x["message"] for x in logs]
    for name in kids:
        assert any(m.startswith(f"{name} started on the ") for m in said), said
        assert any(m.startswith(f"{name} finished in ") for m in said), said
    shown = api(
        "POST", f"{servers.prefect_url}/artifacts/filter", {"artifacts": {"flow_run_id": {"any_": [flow_run["id"]]}}}
    )
    assert any(a["data"].startswith(f"[MLflow parent run {parents[0]['id']}]") for a in shown), shown

    seen = cli(servers, tmp_path / "home", "history", "srv-track", "--plot")  # a write: asked for
    assert seen.returncode == 0, seen.stdout
    assert "sum[offset=10]/enginetest/total/total" in seen.stdout and "no regression" in seen.stdout
    logged = api("GET", f"{servers.mlflow_url}/api/2.0/mlflow/artifacts/list?run_id={parents[0]['id']}&path=history")
    assert {f["path"] for f in logged["files"]} == {"history/trend.png", "history/trend.csv"}


def test_a_reader_sees_the_history_and_cannot_write(servers, tmp_path):
    """A user the admin made, with no grant of its own, reads every run (the servers' default permission
    READ, as in docker-compose.yml) and writes none."""
    path = write(
        tmp_path,
        f"""\
        name: srv-read
        steps:
          nums: {{uses: {C}:numbers, with: {{n: 2}}}}
        """,
    )
    home = tmp_path / "home"
    done = cli(servers, home, "run", str(path), **THREADS)
    assert done.returncode == 0, done.stdout
    password = "reader-password-for-tests"
    api("POST", f"{servers.mlflow_url}/api/2.0/mlflow/users/create", {"username": "reader", "password": password})
    reader = {"MLFLOW_TRACKING_USERNAME": "reader", "MLFLOW_TRACKING_PASSWORD": password}

    seen = cli(servers, home, "history", "srv-read", "--plot", **reader)
    assert seen.returncode == 0, seen.stdout
    assert "no regression" in seen.stdout, seen.stdout
    assert "trend plot not logged: this MLflow login may only read run" in seen.stdout, seen.stdout
    parent = next(r for r in mlflow_runs(servers, "srv-read") if "mlflow.parentRunId" not in r["tags"])
    with pytest.raises(urllib.error.HTTPError) as refused:
        api(
            "POST",
            f"{servers.mlflow_url}/api/2.0/mlflow/runs/log-metric",
            {"run_id": parent["id"], "key": "x", "value": 1.0, "timestamp": 0},
            login=f"reader:{password}",
            attempts=1,
        )
    assert refused.value.code == 403


def deployments(servers):
    found = api(
        "POST", f"{servers.prefect_url}/deployments/filter", {"flows": {"name": {"any_": ["bottlenecks-pipeline"]}}}
    )
    return {d["name"]: d for d in found}


def test_schedule_create_list_update_remove(servers, tmp_path):
    path = write(
        tmp_path,
        f"""\
        name: srv-nightly
        params: {{n: 2}}
        profiles: {{small: {{params: {{n: 1}}}}}}
        schedule: {{cron: "30 1 * * *", timezone: Europe/Berlin, parameters: {{n: 4}}}}
        steps:
          nums: {{uses: {C}:numbers, with: {{n: "${{params.n}}"}}}}
        """,
    )
    home = tmp_path / "home"
    made = cli(servers, home, "schedule", str(path))
    assert made.returncode == 0, made.stdout
    dep = deployments(servers)["srv-nightly"]
    assert [(s["schedule"]["cron"], s["schedule"]["timezone"]) for s in dep["schedules"]] == [
        ("30 1 * * *", "Europe/Berlin")
    ]
    assert dep["parameters"] == {"pipeline": str(path), "profile": None, "sets": ["n=4"]}
    assert dep["entrypoint"] == "flows.ops.schedule.run_pipeline"
    assert dep["global_concurrency_limit"]["limit"] == 1
    assert dep["concurrency_options"]["collision_strategy"] == "CANCEL_NEW"
    upcoming = wait_for(
        lambda: api("POST", f"{servers.prefect_url}/flow_runs/filter", {"deployments": {"id": {"any_": [dep["id"]]}}}),
        60,
        "scheduled runs",
    )
    assert {r["state_type"] for r in upcoming} == {"SCHEDULED"}
    assert all(r["expected_start_time"][11:16] in ("00:30", "23:30") for r in upcoming)  # 01:30 Berlin in UTC

    again = cli(servers, home, "schedule", str(path), "--cron", "0 3 * * 1", "--profile", "small")
    assert again.returncode == 0, again.stdout
    updated = cli(servers, home, "schedule", str(path), "--cron", "0 4 * * *")
    assert updated.returncode == 0, updated.stdout
    deps = deployments(servers)
    assert {"srv-nightly", "srv-nightly@small"} <= set(deps)
    assert [s["schedule"]["cron"] for s in deps["srv-nightly"]["schedules"]] == ["0 4 * * *"]
    assert deps["srv-nightly@small"]["parameters"]["profile"] == "small"

    listed = cli(servers, home, "schedule", "--list")
    assert listed.returncode == 0 and "srv-nightly@small" in listed.stdout and "0 3 * * 1" in listed.stdout

    bad = cli(servers, home, "schedule", str(path), "--cron", "61 * * *")
    assert bad.returncode == 2 and "invalid schedule cron='61 * * *'" in bad.stdout

    assert cli(servers, home, "schedule", "--remove", "srv-nightly", "--profile", "small").returncode == 0
    assert cli(servers, home, "schedule", "--remove", str(path)).returncode == 0
    assert not {"srv-nightly", "srv-nightly@small"} & set(deployments(servers))
    gone = cli(servers, home, "schedule", "--remove", "srv-nightly")
    assert gone.returncode == 1 and "no schedule named 'srv-nightly'" in gone.stdout


def flow_run_state(servers, run_id):
    return api("GET", f"{servers.prefect_url}/flow_runs/{run_id}")["state_type"]


def test_serve_runs_a_scheduled_pipeline_without_overlap(servers, tmp_path):
    started, release = tmp_path / "started", tmp_path / "release"
    path = write(
        tmp_path,
        f"""\
        name: srv-serve
        schedule: {{cron: "0 2 * * *"}}
        steps:
          wait: {{uses: {H}:hold, with: {{started: "{started}", release: "{release}"}}, cache: false}}
        """,
    )
    home = tmp_path / "home"
    assert cli(servers, home, "schedule", str(path)).returncode == 0
    dep = deployments(servers)["srv-serve"]
    server = cli(servers, home, "serve", wait=False, PREFECT_RUNNER_POLL_FREQUENCY="1", **THREADS)
    try:
        first = api("POST", f"{servers.prefect_url}/deployments/{dep['id']}/create_flow_run", {})
        wait_for(started.exists, 120, "the served run to start its step")
        second = api("POST", f"{servers.prefect_url}/deployments/{dep['id']}/create_flow_run", {})
        assert wait_for(
            lambda: flow_run_state(servers, second["id"]) in ("CANCELLED", "CANCELLING"),
            60,
            "the overlapping run to be cancelled",
        )
        assert flow_run_state(servers, first["id"]) == "RUNNING"
        release.write_text("go")
        wait_for(
            lambda: flow_run_state(servers, first["id"]) in ("COMPLETED", "FAILED", "CRASHED"),
            120,
            "the served run to finish",
        )
        assert flow_run_state(servers, first["id"]) == "COMPLETED"
    finally:
        os.killpg(server.pid, signal.SIGINT)
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
    assert started.read_text().count("\n") == 1  # the cancelled run never reached the step
    tops = [
        r
        for r in mlflow_runs(servers, "srv-serve")
        if "mlflow.parentRunId" not in r["tags"] and r["tags"].get("pipeline") == "srv-serve"
    ]
    parents = [r for r in tops if "bottlenecks.slot" not in r["tags"]]
    assert len(parents) == 1 and parents[0]["status"] == "FINISHED"
    slots = [(r["tags"]["bottlenecks.slot"], r["tags"]["prefect_flow_run_id"]) for r in tops if r not in parents]
    assert slots == [("skipped", second["id"])]  # the cancelled slot is a row of the history


@pytest.mark.parametrize("dying", ["mlflow", "prefect"])
def test_server_dying_mid_run_fails_clearly_and_rerun_resumes_from_cache(servers, tmp_path, dying):
    started, release = tmp_path / "started", tmp_path / "release"
    path = write(
        tmp_path,
        f"""\
        name: srv-dies-{dying}
        steps:
          first: {{uses: {C}:numbers}}
          wait: {{uses: {H}:hold, with: {{started: "{started}", release: "{release}"}}, needs: [first]}}
          last: {{uses: {C}:total, with: {{values: "${{first.values}}"}}, needs: [wait]}}
        """,
    )
    home = tmp_path / "home"
    server = getattr(servers, dying)
    # fewer retries a request than the product's three: the same failure, without a minute of
    # back-off per request (docs/deployment.md, "A server that dies mid-run": the settings a user sets);
    # Prefect's HTTP transport still tries each connection 4 times
    quick = {"MLFLOW_HTTP_REQUEST_MAX_RETRIES": "1", "PREFECT_CLIENT_MAX_RETRIES": "0"}
    proc = cli(servers, home, "run", str(path), wait=False, **quick, **THREADS)
    try:
        wait_for(started.exists, 120, "the step to start")
        server.stop(kill=True)
        if dying == "prefect":  # past the 5 s for which Prefect's client remembers that a tag has no concurrency limit
            time.sleep(6)
        release.write_text("go")
        output, _ = proc.communicate(timeout=240)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        server.start()
    assert proc.returncode == 1, output
    # the run ends with the CLI's own summary naming the lost server, not an uncaught exception
    if dying == "mlflow":
        assert f"step wait failed: MlflowException: API request to {servers.mlflow_url}" in output
    else:
        assert f"lost a server (Prefect API at {servers.prefect_url}" in output
    assert "fix the cause and rerun: finished steps come from the cache" in output
    assert "flows/cli/" not in output  # no traceback through the CLI (Prefect may still log its own)
    # the summary is the last word: no wait at exit for Prefect to deliver its queue to a server that is gone
    assert output.rstrip().splitlines()[-1] == "fix the cause and rerun: finished steps come from the cache", output

    again = cli(servers, home, "run", str(path), **THREADS)
    assert again.returncode == 0, again.stdout
    runs = mlflow_runs(servers, f"srv-dies-{dying}")
    computed = [r["name"] for r in runs if r["tags"].get("cached") == "false" and r["status"] == "FINISHED"]
    assert sorted(computed) == ["first", "last", "wait"], output  # a finished step is never computed twice
    reused = sorted(r["name"] for r in runs if r["tags"].get("cached") == "true")
    assert reused == (["first"] if dying == "mlflow" else ["first", "last", "wait"]), output


def test_two_runs_of_one_pipeline_at_once_share_the_cache_safely(servers, tmp_path):
    started, release = tmp_path / "started", tmp_path / "release"
    path = write(
        tmp_path,
        f"""\
        name: srv-twice
        steps:
          wait: {{uses: {H}:hold, with: {{started: "{started}", release: "{release}"}}}}
          nums: {{uses: {C}:numbers, with: {{n: 4}}, needs: [wait]}}
          sum: {{uses: {C}:total, with: {{values: "${{nums.values}}"}}}}
        """,
    )
    home = tmp_path / "home"
    procs = [cli(servers, home, "run", str(path), wait=False, **THREADS) for _ in range(2)]
    try:
        wait_for(started.exists, 120, "a run to start the step")
        # hold the step until the other run has begun too (its parent run exists), so it meets the
        # step's lock rather than a cached result; the lock itself is tested in test_cache_lock.py
        wait_for(
            lambda: len([r for r in mlflow_runs(servers, "srv-twice") if "mlflow.parentRunId" not in r["tags"]]) == 2,
            120,
            "the second run to start",
        )
        release.write_text("go")
        outputs = [p.communicate(timeout=180)[0] for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
    assert [p.returncode for p in procs] == [0, 0], outputs
    assert started.read_text().count("\n") == 1  # the step ran once across both runs
    runs = mlflow_runs(servers, "srv-twice")
    parents = [r for r in runs if "mlflow.parentRunId" not in r["tags"]]
    assert len(parents) == 2 and {p["status"] for p in parents} == {"FINISHED"}
    computed = sorted(r["name"] for r in runs if r["tags"].get("cached") == "false")
    assert computed == ["nums", "sum", "wait"]
    for record in (home / "cache").glob("*.json"):
        json.loads(record.read_text())  # every cache record is whole
    assert sorted(p.name for p in (home / "cache").glob("*")) == sorted(
        f"{r['tags']['cache_key']}.json" for r in runs if r["tags"].get("cached") == "false"
    )


def test_deploy_to_a_work_pool_and_a_worker_runs_it(servers, tmp_path):
    path = write(
        tmp_path,
        f"""\
        name: srv-pool
        schedule: {{cron: "0 2 * * *", timezone: UTC}}
        steps:
          nums: {{uses: {C}:numbers, with: {{n: 2}}}}
        """,
    )
    home = tmp_path / "home"
    missing = cli(servers, home, "deploy", str(path), "--work-pool", "no-such-pool")
    assert missing.returncode == 1 and "work pool 'no-such-pool' does not exist" in missing.stdout
    api("POST", f"{servers.prefect_url}/work_pools/", {"name": "gpu-test", "type": "process"})
    done = cli(servers, home, "deploy", str(path), "--work-pool", "gpu-test", "--working-dir", str(REPO))
    assert done.returncode == 0, done.stdout
    dep = deployments(servers)["srv-pool"]
    assert dep["work_pool_name"] == "gpu-test" and dep["job_variables"] == {"working_dir": str(REPO)}
    assert [s["schedule"]["cron"] for s in dep["schedules"]] == ["0 2 * * *"]

    worker_env = servers.client_env(home, PREFECT_WORKER_QUERY_SECONDS="1", **THREADS)
    worker = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "prefect",
            "worker",
            "start",
            "--pool",
            "gpu-test",
            "--type",
            "process",
            "--install-policy",
            "never",
        ],
        cwd=tmp_path,
        env=worker_env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        run = api("POST", f"{servers.prefect_url}/deployments/{dep['id']}/create_flow_run", {})
        wait_for(
            lambda: flow_run_state(servers, run["id"]) in ("COMPLETED", "FAILED", "CRASHED"),
            180,
            "the worker to run the deployment",
        )
    finally:
        os.killpg(worker.pid, signal.SIGINT)
        try:
            log = worker.communicate(timeout=30)[0]
        except subprocess.TimeoutExpired:
            os.killpg(worker.pid, signal.SIGKILL)
            log = worker.communicate()[0]
    assert flow_run_state(servers, run["id"]) == "COMPLETED", log[-3000:]
    parents = [r for r in mlflow_runs(servers, "srv-pool") if "mlflow.parentRunId" not in r["tags"]]
    assert len(parents) == 1 and parents[0]["status"] == "FINISHED"


def test_a_flow_run_whose_host_died_is_marked_crashed_by_the_heartbeat_automation(servers, tmp_path, monkeypatch):
    """The compose file's prefect-setup installs Prefect's heartbeat automation (once, however often
    it runs); a run killed with SIGKILL, as a host that loses power, is Crashed once its heartbeats
    stop, with nobody running a command. Installed here with the shortest silence Prefect allows (10 s)
    for the test's sake, then put back as the deployment has it."""
    from datetime import datetime, timedelta, timezone

    from flows.ops import heartbeats

    monkeypatch.setenv("PREFECT_API_AUTH_STRING", servers.credentials()["PREFECT_API_AUTH_STRING"])
    url = servers.prefect_url
    assert heartbeats.install(url).startswith("installed the heartbeat automation")
    assert heartbeats.install(url).startswith("the heartbeat automation is installed")
    assert len(heartbeats.installed(url)) == 1
    started, release = tmp_path / "started", tmp_path / "release"
    path = write(
        tmp_path,
        f"""\
        name: srv-heartbeat
        steps:
          wait: {{uses: {H}:hold, with: {{started: "{started}", release: "{release}"}}}}
        """,
    )
    proc = None
    try:
        assert heartbeats.install(url, within=10).startswith("replaced the heartbeat automation")
        assert [a["trigger"]["within"] for a in heartbeats.installed(url)] == [10.0]
        proc = cli(
            servers, tmp_path / "home", "run", str(path), wait=False, PREFECT_FLOWS_HEARTBEAT_FREQUENCY="30", **THREADS
        )
        wait_for(started.exists, 120, "the step to start")
        body = {"flow_runs": {"tags": {"all_": ["pipeline:srv-heartbeat"]}, "state": {"type": {"any_": ["RUNNING"]}}}}
        run = wait_for(lambda: api("POST", f"{url}/flow_runs/filter", body), 30, "the flow run")[0]
        since = (datetime.now(timezone.utc) - timedelta(minutes=10)).isoformat()
        beats = {
            "filter": {
                "event": {"name": ["prefect.flow-run.heartbeat"]},
                "resource": {"id": [f"prefect.flow-run.{run['id']}"]},
                "occurred": {"since": since},
            },
            "limit": 5,
        }
        wait_for(lambda: api("POST", f"{url}/events/filter", beats)["events"], 60, "a heartbeat to reach the server")
        os.killpg(proc.pid, signal.SIGKILL)  # the host dies: no final state is ever sent
        proc.wait(timeout=30)
        crashed = wait_for(
            lambda: (r := api("GET", f"{url}/flow_runs/{run['id']}"))["state_type"] == "CRASHED" and r,
            120,
            "the automation to mark the run Crashed",
        )
        assert "no heartbeat for 10 s" in crashed["state"]["message"], crashed["state"]
    finally:
        if proc is not None and proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        heartbeats.install(url)  # as the deployment has it, for the tests after this one
