"""Fuzz `bottlenecks check` with random mutants of the shipped pipelines and count what it does.

    python benchmarks/fuzz_check.py                         # 1,000 mutants, seed 0, 5 s a check
    python benchmarks/fuzz_check.py -n 5000 --seed 7 --failures fuzz-failures

Each mutant is a shipped pipeline with one to three edits a person, a bad merge or a broken disk
makes: a line deleted, duplicated, moved or re-indented, two values swapped, a value replaced by
one of another kind (a list, a mapping, null, a negative or huge number, text), random bytes
inserted, the file cut short; a share of them (``--sets``) instead keep the file and add random
``--set`` overrides. Each is checked the way `bottlenecks check` checks a file (``plan.build``), in
a worker process that is replaced when a check runs past ``--limit`` seconds. The outcome of each:

* ``ok``: accepted; ``refused``: ``PipelineInvalid``, every line ``FILE:LINE:COL: message``;
* ``traceback``: any other exception (a bug: check must accept or refuse);
* ``timeout``: the check ran past the limit (a bug: check must answer in about a second);
* ``leak``: refused, but a line is not located or names an internal class (``YList``, ``NoneType``...).

Prints the counts, the slowest checks (CPU and wall seconds) and, with ``--failures DIR``, writes
each traceback, timeout and leak there as the mutant, its ``--set`` list and what happened.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import random
import re
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

# an internal class, a Python repr, or a library's own wording (pydantic's framing): a message a pipeline
# author cannot act on as written. A mapping or list is shown in YAML's flow style, whose quoting of
# odd text ({'={a': '1}'}) a pattern cannot tell from Python's; the tests pin those messages instead.
INTERNAL = re.compile(
    r"YList|YMap|YScalar|Ref\(|NoneType|<class|Traceback|object at 0x"
    r"|Value error,|Input should|validation error|\[type=|errors\.pydantic|Assertion failed,"
    r"|\b(got|is|key|axis|name|param) (None|True|False)\b|\((None|True|False)\)"  # Python's null, booleans
)
QUOTED = re.compile(r"'[^']*'")
VALUES = [
    "[]",
    "{}",
    "null",
    "-1",
    "0",
    "1e309",
    "99999999999999999999",
    "-0.5",
    "1.5",
    "true",
    "'x'",
    "[1, [2]]",
    "{a: 1}",
    "'${params.nope}'",
    "'${x.y}'",
    "'${matrix.q}'",
    '""',
    "~",
    "&a 1",
    "*a",
    "!!binary aGk=",
    "2024-01-01",
    ".nan",
    ".inf",
    "'\\u2028'",
    "0o17",
    "0x1F",
    "[[[",
    "{{",
    "'",
    '"\\x00"',
]
SET_KEYS = [
    "seeds",
    "steps",
    "lags",
    "x",
    "train.steps",
    "train.lr",
    "mt.batch_size",
    "data.n_train",
    "a.b.c",
    "",
    "=",
    "seeds.0",
    "bleu.checkpoints",
    "grad.length",
]


# -- mutations --------------------------------------------------------------------------------------
def _lines(text: str) -> list[str]:
    return text.splitlines(keepends=True) or [""]


def delete_line(text: str, rng: random.Random) -> str:
    lines = _lines(text)
    del lines[rng.randrange(len(lines))]
    return "".join(lines)


def duplicate_line(text: str, rng: random.Random) -> str:
    lines = _lines(text)
    i = rng.randrange(len(lines))
    lines.insert(rng.randrange(len(lines) + 1), lines[i])
    return "".join(lines)


def move_line(text: str, rng: random.Random) -> str:
    lines = _lines(text)
    line = lines.pop(rng.randrange(len(lines)))
    lines.insert(rng.randrange(len(lines) + 1), line)
    return "".join(lines)


def reindent(text: str, rng: random.Random) -> str:
    lines = _lines(text)
    i = rng.randrange(len(lines))
    body = lines[i].lstrip(" ")
    lines[i] = " " * max(0, len(lines[i]) - len(body) + rng.choice([-4, -2, -1, 1, 2, 4, 8])) + body
    return "".join(lines)


_VALUE = re.compile(r"(?<=: )[^\s{}\[\],#][^,{}\[\]#\n]*|(?<=[\[, ])-?\d+(\.\d+)?(?=[,\]])")


def swap_values(text: str, rng: random.Random) -> str:
    found = list(_VALUE.finditer(text))
    if len(found) < 2:
        return text
    a, b = sorted(rng.sample(found, 2), key=lambda m: m.start())
    return text[: a.start()] + b.group() + text[a.end() : b.start()] + a.group() + text[b.end() :]


def change_kind(text: str, rng: random.Random) -> str:
    found = list(_VALUE.finditer(text))
    if not found:
        return text
    m = rng.choice(found)
    return text[: m.start()] + rng.choice(VALUES) + text[m.end() :]


def random_bytes(text: str, rng: random.Random) -> bytes:
    data = text.encode()
    i = rng.randrange(len(data) + 1)
    noise = bytes(rng.randrange(256) for _ in range(rng.randint(1, 8)))
    return data[:i] + noise + data[i:]


def cut_short(text: str, rng: random.Random) -> str:
    return text[: rng.randrange(len(text) + 1)]


MUTATIONS = [delete_line, duplicate_line, move_line, reindent, swap_values, change_kind, random_bytes, cut_short]


def random_sets(rng: random.Random) -> list[str]:
    """One to three ``--set`` texts, well formed or not."""
    out = []
    for _ in range(rng.randint(1, 3)):
        key, value = rng.choice(SET_KEYS), rng.choice([*VALUES, "[0, 1]", "5", "abc", "a=b", ""])
        out.append(rng.choice([f"{key}={value}", key, f"{key}=={value}", f"{value}"]))
    return out


def mutant(shipped: dict[str, str], rng: random.Random, sets_share: float) -> tuple[str, bytes, list[str], str]:
    """(pipeline name, file bytes, --set list, what was done) for one random case."""
    name = rng.choice(sorted(shipped))
    text: str | bytes = shipped[name]
    if rng.random() < sets_share:
        return name, text.encode(), random_sets(rng), "sets"
    done = []
    for _ in range(rng.choice([1, 1, 2, 3])):
        edit = rng.choice(MUTATIONS)
        text = edit(text if isinstance(text, str) else text.decode("utf-8", "replace"), rng)
        done.append(edit.__name__)
    return name, text if isinstance(text, bytes) else text.encode(), [], "+".join(done)


# -- checking in a worker ---------------------------------------------------------------------------
def _classify(e, path: str) -> tuple[str, str]:
    """``refused`` or ``leak`` (a line that is not located, or names an internal class)."""
    # text the file wrote is quoted in a message ('x None y'): the user's words, not a leak
    bad = [str(x) for x in e.errors if x.file not in (path, "--set") or INTERNAL.search(QUOTED.sub("''", x.message))]
    return ("leak", "\n".join(bad[:5])) if bad else ("refused", "")


def _worker(conn, folder: str) -> None:
    import traceback

    from flows.language.errors import PipelineInvalid
    from flows.plan.build import build

    path = os.path.join(folder, "pipeline.yaml")
    while (case := conn.recv()) is not None:
        data, sets = case
        Path(path).write_bytes(data)
        cpu, wall = time.process_time(), time.perf_counter()
        try:
            build(path, sets=sets)
            outcome, detail = "ok", ""
        except PipelineInvalid as e:
            outcome, detail = _classify(e, path)
        except Exception:  # noqa: BLE001 - counting these is the point
            outcome, detail = "traceback", traceback.format_exc()
        conn.send((outcome, detail, time.process_time() - cpu, time.perf_counter() - wall))


class Checker:
    """A worker process that checks one case at a time; replaced when one runs past ``limit``."""

    def __init__(self, limit: float):
        self.limit = limit
        self.folder = tempfile.mkdtemp(prefix="fuzz-check-")
        self.proc = None
        self._start()

    def _start(self) -> None:
        ctx = mp.get_context("fork")
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=_worker, args=(child, self.folder), daemon=True)
        self.proc.start()

    def check(self, data: bytes, sets: list[str]) -> tuple[str, str, float, float]:
        self.conn.send((data, sets))
        if self.conn.poll(self.limit):
            try:
                return self.conn.recv()
            except EOFError:  # the worker died (a crash of the interpreter itself)
                outcome = ("traceback", f"the checking process died (exit code {self.proc.exitcode})")
        else:
            outcome = ("timeout", f"no answer in {self.limit} s")
        self.proc.kill()
        self.proc.join()
        self._start()
        return (*outcome, float("nan"), self.limit)

    def close(self) -> None:
        self.conn.send(None)
        self.proc.join(5)


# -- the run ----------------------------------------------------------------------------------------
def run(n: int, seed: int, limit: float, sets_share: float, failures: Path | None) -> dict:
    shipped = {p.name: p.read_text(encoding="utf-8") for p in sorted((REPO / "pipelines").glob("*.yaml"))}
    rng = random.Random(seed)
    checker = Checker(limit)
    counts: Counter = Counter()
    times: list[tuple[float, float, str]] = []
    start = time.perf_counter()
    for i in range(n):
        name, data, sets, how = mutant(shipped, rng, sets_share)
        outcome, detail, cpu, wall = checker.check(data, sets)
        counts[outcome] += 1
        times.append((wall, cpu, f"#{i} {name} {how}"))
        if failures is not None and outcome in ("traceback", "timeout", "leak"):
            failures.mkdir(parents=True, exist_ok=True)
            (failures / f"{i:05d}-{outcome}.yaml").write_bytes(data)
            (failures / f"{i:05d}-{outcome}.txt").write_text(f"{name} {how}\n--set {json.dumps(sets)}\n\n{detail}\n")
    checker.close()
    times.sort(reverse=True)
    return {
        "cases": n,
        "seed": seed,
        "limit_s": limit,
        "counts": {k: counts.get(k, 0) for k in ("ok", "refused", "traceback", "timeout", "leak")},
        "slowest": [{"wall_s": round(w, 3), "cpu_s": round(c, 3), "case": what} for w, c, what in times[:5]],
        "seconds": round(time.perf_counter() - start, 1),
        "load": [round(x, 2) for x in os.getloadavg()],
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-n", type=int, default=1000, help="number of mutants (default 1000)")
    ap.add_argument("--seed", type=int, default=0, help="random seed: the same seed gives the same mutants")
    ap.add_argument("--limit", type=float, default=5.0, help="seconds a check may take (default 5)")
    ap.add_argument("--sets", type=float, default=0.2, help="share of cases that add random --set texts instead")
    ap.add_argument("--failures", type=Path, help="write each traceback, timeout and leak case to this folder")
    args = ap.parse_args(argv)
    report = run(args.n, args.seed, args.limit, args.sets, args.failures)
    c = report["counts"]
    print(
        f"{report['cases']} mutants (seed {report['seed']}, {report['limit_s']} s a check) in {report['seconds']} s, "
        f"load {report['load']}"
    )
    print(f"ok {c['ok']}  refused {c['refused']}  traceback {c['traceback']}  timeout {c['timeout']}  leak {c['leak']}")
    for row in report["slowest"]:
        print(f"  {row['wall_s']:7.3f} s wall  {row['cpu_s']:7.3f} s CPU  {row['case']}")
    return 1 if c["traceback"] or c["timeout"] or c["leak"] else 0


if __name__ == "__main__":
    sys.exit(main())
