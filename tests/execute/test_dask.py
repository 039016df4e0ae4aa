"""Two simulated hosts: a Dask scheduler and two workers on 127.0.0.1 with different working
directories, a shared state folder, and real MLflow and Prefect servers (on Postgres)."""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.support.servers import Server, TeamServers, free_port, pg_bin

pytestmark = [
    pytest.mark.slow,
    pytest.mark.server,
    pytest.mark.skipif(
        pg_bin() is None, reason="needs Postgres server binaries (Debian package 'postgresql'); CI installs them"
    ),
]
REPO = Path(__file__).resolve().parents[2]
C = "tests.support.engine_components"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    root = tmp_path_factory.mktemp("dask")
    team = TeamServers(root / "servers")
    procs: list[Server] = []
    try:
        team.start()
        port = free_port()
        address = f"tcp://127.0.0.1:{port}"
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "MLFLOW_", "BOTTLENECKS_"))}
        env.update(
            {
                "PYTHONPATH": str(REPO),
                "MLFLOW_TRACKING_URI": team.mlflow_url,
                "DASK_DISTRIBUTED__SCHEDULER__ALLOWED_FAILURES": "0",
                # a worker tracks its step to MLflow itself, with its own login (as docker-compose.yml's)
                **team.credentials(),
            }
        )
        scheduler = Server(
            "scheduler",
            [
                sys.executable,
                "-m",
                "distributed.cli.dask_scheduler",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--dashboard-address",
                ":0",
            ],
            env,
            "",
            root / "scheduler.log",
        )
        scheduler.spawn()
        procs.append(scheduler)
        workers = []
        # "host a" offers a CPU, "host b" a (pretend) GPU: the consumer must run on the other host
        for name, resources, visible in (("a", "CPU=1", ""), ("b", "GPU=1", "0")):
            cwd = root / f"host-{name}"
            cwd.mkdir()
            cmd = [
                sys.executable,
                "-m",
                "distributed.cli.dask_worker",
                address,
                "--nworkers",
                "1",
                "--nthreads",
                "1",
                "--resources",
                resources,
                "--local-directory",
                str(cwd / "dask"),
                "--no-dashboard",
                "--name",
                f"host-{name}",
            ]
            worker = Server(
                f"worker-{name}", cmd, {**env, "CUDA_VISIBLE_DEVICES": visible}, "", root / f"worker-{name}.log"
            )
            with open(worker.log, "a") as fh:
                worker.proc = subprocess.Popen(
                    cmd, env=worker.env, cwd=cwd, stdout=fh, stderr=subprocess.STDOUT, start_new_session=True
                )
            procs.append(worker)
            workers.append(cwd)
        from distributed import Client

        with Client(address, timeout="60s") as client:
            client.wait_for_workers(2, timeout=120)
        yield {"address": address, "team": team, "hosts": workers, "root": root}
    finally:
        for proc in reversed(procs):
            proc.stop()
        team.stop()


def test_a_consumer_on_another_host_reads_its_producers_files(cluster, tmp_path):
    shared = cluster["root"] / "shared-home"
    path = tmp_path / "p.yaml"
    path.write_text(
        textwrap.dedent(f"""\
        name: dask-two-hosts
        settings: {{executor: dask, cluster: {{address: "{cluster["address"]}"}}}}
        steps:
          make: {{uses: "{C}:numbers", with: {{n: 4}}}}
          use:
            uses: {C}:read
            with: {{path: "${{make.file}}"}}
            resources: {{gpu: 1}}
        """)
    )
    env = cluster["team"].client_env(shared, COLUMNS="250")
    exe = Path(sys.executable).parent / "bottlenecks"
    out = subprocess.run(
        [str(exe), "run", str(path)],
        cwd=REPO,
        env=env,
        text=True,
        timeout=400,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    assert out.returncode == 0, out.stdout
    records = [json.loads(p.read_text()) for p in (shared / "cache").glob("*.json")]
    by_step = {r["step"]: r for r in records}
    assert by_step["use"]["outputs"]["text"] == "0\n1\n2\n3"
    hosts = [str(h) for h in cluster["hosts"]]
    assert by_step["use"]["outputs"]["cwd"] == hosts[1]  # ran on "host b"
    assert by_step["make"]["outputs"]["file"].startswith(str(shared.resolve()) + os.sep)
    for record in records:  # nothing points into a worker's own folder
        assert not any(h in json.dumps(record["outputs"]) for h in hosts[:1]), record


def test_remote_executor_refuses_a_local_tracking_store(cluster, tmp_path):
    path = tmp_path / "p.yaml"
    path.write_text(
        textwrap.dedent(f"""\
        name: dask-local-store
        settings: {{executor: dask, cluster: {{address: "{cluster["address"]}"}}}}
        steps:
          make: {{uses: "{C}:numbers"}}
        """)
    )
    env = {
        **os.environ,
        "BOTTLENECKS_HOME": str(tmp_path / "home"),
        "MLFLOW_TRACKING_URI": f"sqlite:///{tmp_path / 'm.db'}",
    }
    env.pop("PREFECT_API_URL", None)
    exe = Path(sys.executable).parent / "bottlenecks"
    out = subprocess.run(
        [str(exe), "run", str(path)],
        cwd=REPO,
        env=env,
        text=True,
        timeout=120,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    assert out.returncode == 1
    text = " ".join(out.stdout.split())
    assert "needs an MLflow tracking server its workers can reach, not sqlite:///" in text
    assert "nothing was run" in text
