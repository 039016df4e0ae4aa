"""The environment a run records: what moved a figure, without naming the host."""

import json
import platform
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from flows.track import environment

REPO = Path(__file__).resolve().parents[2]

CPUINFO = """processor\t: 0
vendor_id\t: AuthenticAMD
cpu family\t: 25
model\t\t: 17
model name\t: AMD EPYC 9654
stepping\t: 1
flags\t\t: fpu sse4_2 avx avx2 fma avx512f amx_tile lm

processor\t: 1
model name\t: Another CPU that must not be read
"""


def test_describe_is_json_and_names_what_numbers_depend_on(monkeypatch):
    host = socket.gethostname()
    monkeypatch.setattr(socket, "gethostname", lambda: "bn-host-that-must-not-leak")
    monkeypatch.setattr(platform, "node", lambda: "bn-host-that-must-not-leak")
    env = environment.describe()
    assert json.loads(json.dumps(env)) == env
    for key in ("cpu_model", "cores", "torch", "cuda", "cudnn", "python", "torch_threads", "git_commit", "machine"):
        assert key in env, key
    assert env["torch"].startswith("2.")
    assert set(environment.LIBRARIES) <= set(env["libraries"])
    assert env["libraries"]["numpy"]  # installed, so a version
    assert env["cores"] >= 1 and env["torch_threads"] >= 1
    text = json.dumps(env)
    assert "bn-host-that-must-not-leak" not in text
    # the real name as a whole word: a short one ("vm", "dev") may be part of a version or a flag
    assert host not in re.split(r"[^\w.-]+", text)


def test_cpu_info_reads_the_first_processor_and_its_vector_flags():
    info = environment.cpu_info(CPUINFO)
    assert info["cpu_model"] == "AMD EPYC 9654"
    assert info["cpu_family_model_stepping"] == "25/17/1"
    assert info["cpu_vector_flags"] == ["amx_tile", "avx", "avx2", "avx512f", "fma", "sse4_2"]


def test_machine_id_is_a_stable_salted_hash(tmp_path):
    f = tmp_path / "machine-id"
    f.write_text("0123456789abcdef0123456789abcdef\n")
    first = environment.machine_id(str(f))
    assert first == environment.machine_id(str(f)) and len(first) == 12
    assert "0123456789" not in first
    f.write_text("fedcba9876543210fedcba9876543210\n")
    assert environment.machine_id(str(f)) != first
    assert environment.machine_id(str(tmp_path / "absent")) is None


def test_git_commit_and_dirty_follow_the_repository(tmp_path):
    assert environment.git_commit(tmp_path) is None and environment.git_dirty(tmp_path) is None
    git = ["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@example.org"]
    subprocess.run([*git, "init", "-q"], check=True)
    (tmp_path / "a.txt").write_text("one\n")
    subprocess.run([*git, "add", "a.txt"], check=True)
    subprocess.run([*git, "commit", "-qm", "one"], check=True)
    head = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    assert environment.git_commit(tmp_path) == head and len(head) == 40
    assert environment.git_dirty(tmp_path) is False
    (tmp_path / "untracked.txt").write_text("x\n")
    assert environment.git_dirty(tmp_path) is False  # untracked files do not make the tree dirty
    (tmp_path / "a.txt").write_text("two\n")
    assert environment.git_dirty(tmp_path) is True


def test_differences_name_only_the_fields_that_move_figures():
    a = environment.describe()
    b = json.loads(json.dumps(a))
    b["git_commit"], b["torch_threads"] = "0" * 40, 99  # code and threads are not the environment
    assert environment.differences(a, b) == {}
    b["cpu_model"] = "Intel Xeon"
    b["libraries"]["numpy"] = "0.0.1"
    diff = environment.differences(a, b)
    assert diff == {"cpu_model": (a["cpu_model"], "Intel Xeon"), "libraries.numpy": (a["libraries"]["numpy"], "0.0.1")}


@pytest.mark.parametrize(
    ("a", "b", "expected"), [(None, None, {}), ({}, {"x": 1}, {"environment": (None, "recorded")})]
)
def test_a_run_without_a_recorded_environment_counts_as_a_difference(a, b, expected):
    assert environment.differences(a, b) == expected


def test_the_light_description_reads_torch_without_importing_it():
    code = (
        "import json, sys; from flows.track import environment as e; d = e.describe(import_torch=False); "
        "print(json.dumps([d['torch'], 'torch' in sys.modules]))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO)
    version, imported = json.loads(out.stdout.strip().splitlines()[-1])
    import torch

    assert version == torch.__version__ and imported is False


def test_tags_round_trip_and_compare_as_text():
    env = environment.describe(import_torch=False)
    tags = environment.as_tags(env)
    assert tags["env.libraries.numpy"] == env["libraries"]["numpy"] and tags["env.cores"] == str(env["cores"])
    back = environment.from_tags({**tags, "pipeline": "p"})
    assert environment.differences(env, back) == {}  # 2 and "2" are the same record
    full = environment.describe()  # cpu_capability known here, None in the light record: unknown, not different
    assert environment.differences(back, full) == {}
    assert environment.from_tags({"pipeline": "p"}) == {}


def test_components_ask_the_context_which_the_engine_answers(tmp_path):
    from components import Context
    from flows.track.runs import MlflowContext

    assert Context(tmp_path).environment() is None  # made without the engine: nothing recorded, no guess
    assert Context(tmp_path, environment_source=lambda: {"cores": 2}).environment() == {"cores": 2}
    engine = MlflowContext(tracker=None, run_id="r", work_dir=tmp_path / "step")
    assert engine.environment_source is environment.describe
