"""scripts/wheelhouse.sh: the pip commands it runs for a target and the requirements it writes.

pip is replaced by a recorder (no index is reached): each call's arguments are kept and the wheels
pip would have fetched are written as empty files, so the script's own logic (torch pinned first,
the target flags on every download, torch held by a constraint, the requirements file) is what is
checked. The real build and the offline install were run by hand, as docs/offline.md records.
"""

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

FAKE = """#!/usr/bin/env bash
# a python3 whose `-m pip` records its arguments and writes the wheels it would fetch
if [[ "$1" != "-m" ]]; then exec {python} "$@"; fi
shift 2
{python} -c 'import json, sys; open(sys.argv[1], "a").write(json.dumps(sys.argv[2:]) + "\\n")' "$PIP_LOG" "$@"
dest=""
prev=""
for a in "$@"; do
  if [[ "$prev" == "--dest" || "$prev" == "--wheel-dir" ]]; then dest="$a"; fi
  if [[ "$prev" == "--constraint" ]]; then cat "$a" > "$PIP_LOG.constraint"; fi
  prev="$a"
done
case "$1" in
  wheel) touch "$dest/bottlenecks-0.1.0-py3-none-any.whl" ;;
  download)
    if [[ " $* " == *" --no-deps "* ]]; then
      touch "$dest/torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl"
    else
      touch "$dest/typing_extensions-4.12.2-py3-none-any.whl" "$dest/PyYAML-6.0.2-cp311-cp311-manylinux_2_17_x86_64.whl"
    fi ;;
esac
"""


def run_script(tmp_path, **env):
    fake = tmp_path / "python3"
    fake.write_text(FAKE.format(python=sys.executable))
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    log = tmp_path / "pip.log"
    out = tmp_path / "wheelhouse"
    base = {
        k: v for k, v in os.environ.items() if k not in ("PY_VERSION", "PLATFORM", "TORCH", "TORCH_INDEX", "EXTRAS")
    }
    done = subprocess.run(
        ["bash", str(REPO / "scripts" / "wheelhouse.sh"), str(out)],
        env={**base, "PYTHON": str(fake), "PIP_LOG": str(log), **env},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    calls = [json.loads(line) for line in log.read_text().splitlines()]
    return calls, out, done.stdout


def value_of(args, flag):
    return [args[i + 1] for i, a in enumerate(args) if a == flag]


def test_torch_is_pinned_first_and_every_download_is_for_the_target(tmp_path):
    calls, out, said = run_script(tmp_path, PY_VERSION="3.12", PLATFORM="manylinux_2_28_aarch64")
    assert [c[0] for c in calls] == ["download", "wheel", "download"]
    torch, project, deps = calls
    assert torch[-1] == "torch==2.13.0+cpu" and "--no-deps" in torch  # exactly the pin, nothing resolved
    for call in (torch, deps):
        assert "--only-binary=:all:" in call
        assert value_of(call, "--python-version") == ["3.12"]
        assert value_of(call, "--abi") == ["cp312"] and value_of(call, "--implementation") == ["cp"]
        assert value_of(call, "--platform") == ["manylinux_2_28_aarch64"]
        assert value_of(call, "--dest") == [str(out)]
    assert "--no-deps" in project and project[-1] == str(REPO)
    assert deps[-1] == str(out / "bottlenecks-0.1.0-py3-none-any.whl")  # the project's own wheel
    assert value_of(deps, "--find-links") == [str(out)]  # so the torch wheel of step 1 satisfies it
    assert "--extra-index-url" not in torch + deps
    assert "Python 3.12" in said and "4 wheels" in said


def test_the_requirements_file_is_the_exact_set_of_wheels(tmp_path):
    _, out, _ = run_script(tmp_path)
    assert (out / "requirements.txt").read_text().splitlines() == [
        "bottlenecks==0.1.0",
        "PyYAML==6.0.2",
        "torch==2.13.0+cpu",
        "typing-extensions==4.12.2",
    ]


def test_a_glibc_host_downloads_manylinux_wheels(tmp_path):
    calls, _, _ = run_script(tmp_path, PLATFORM="linux_x86_64")
    platforms = value_of(calls[0], "--platform")
    assert "manylinux_2_28_x86_64" in platforms and "manylinux2014_x86_64" in platforms
    assert platforms[-1] == "linux_x86_64"


def test_a_cuda_torch_comes_from_its_index_and_extras_travel_with_the_project(tmp_path):
    calls, out, _ = run_script(
        tmp_path, TORCH="torch==2.13.0+cu128", TORCH_INDEX="https://example.invalid/whl/cu128", EXTRAS="gpu"
    )
    torch, _, deps = calls
    assert torch[-1] == "torch==2.13.0+cu128"
    for call in (torch, deps):
        assert value_of(call, "--extra-index-url") == ["https://example.invalid/whl/cu128"]
    assert deps[-1] == f"bottlenecks[gpu] @ file://{out / 'bottlenecks-0.1.0-py3-none-any.whl'}"
    assert (tmp_path / "pip.log.constraint").read_text().split() == ["torch==2.13.0+cu128"]  # torch held
    assert not Path(value_of(deps, "--constraint")[0]).exists()  # a temporary file, removed at the end
