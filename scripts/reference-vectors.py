#!/usr/bin/env python3
"""Reference vectors for src/rules/fedavg.ts and src/rules/kmeans.ts (issue 43).

Runs the reference's own code, Zolli-Labs/flashml at REFERENCE_COMMIT, on
seeded inputs and writes test/fixtures/reference-vectors.json: the inputs
and what the reference returned or raised. It imports the reference rather
than copying it, from a checkout or a git directory:

    python3 scripts/reference-vectors.py --reference PATH/TO/flashml

The four files it needs are checked against their SHA-256 at that commit, so
a checkout at another commit fails loudly instead of writing other vectors.
Run again with the same reference, Python 3.11 and numpy, it rewrites the
file byte for byte.

    flashruntime/flashml_workloads/fedavg_weights.py  reduce_deltas_with_report, apply_delta
    flashruntime/flashml_workloads/fedavg_driver.py   run_fedavg (one round, over an in-memory coordinator)
    flashruntime/flashml_workloads/kmeans_driver.py   run_kmeans (one iteration), shard_and_upload
    flashruntime/flashml_workloads/kmeans_shard.py    run_shard: the partials K-means reduces

Floats are JSON numbers as Python's repr writes them, the shortest text that
reads back to the same double (JSON.parse included, -0.0 too), with the
exponent spelled as the repo's formatter spells it (1e-05 as 1e-5: the same
number). NaN and the infinities, which JSON cannot hold, are written as
{"$float": "nan" | "inf" | "-inf"}. The file is laid out the way
`biome format` lays it out, so the formatter leaves it alone.
"""

from __future__ import annotations

import argparse
import atexit
import copy
import hashlib
import importlib
import json
import math
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path, PurePosixPath

import numpy as np

REFERENCE_REPO = "Zolli-Labs/flashml"
REFERENCE_COMMIT = "d5b29ddfe823487c2b26c9ffdddf9a18d7bca446"
REFERENCE_FILES = {
    "flashruntime/flashml_workloads/fedavg_weights.py": "b1514276ee6d113ef8b8cc2f6ba7fae5bf35db165c1cff38cdc27d3a5eae6f47",
    "flashruntime/flashml_workloads/fedavg_driver.py": "742cd47031bbd57fa2799311ab86c438ea0bd0b51d03c97b262b81e721da165c",
    "flashruntime/flashml_workloads/kmeans_driver.py": "17992b990d44c6a6d53b5656132f3d164de69424b9ec7c1edd90fca0d37fb2b6",
    "flashruntime/flashml_workloads/kmeans_shard.py": "92d0c10e80b8d5e4ea198c7147e0a6e217aae4ebbe2cd854e5c815bd7c1dfddd",
}
OUT = Path(__file__).resolve().parent.parent / "test" / "fixtures" / "reference-vectors.json"
SEED = 43
JOB = "job-000"
BASE_URL = "http://coordinator.invalid"
WIDTH = 120


# -- the reference ----------------------------------------------------------


def load_reference(path: Path):
    """Import the reference's modules from a checkout or a git directory, checked by hash."""
    sources = {}
    for name, digest in REFERENCE_FILES.items():
        if (path / name).is_file():
            text = (path / name).read_bytes()
        else:
            text = subprocess.run(
                ["git", "--git-dir", str(path), "show", f"{REFERENCE_COMMIT}:{name}"],
                check=True, capture_output=True,
            ).stdout
        if hashlib.sha256(text).hexdigest() != digest:
            sys.exit(f"{path / name} is not the file at {REFERENCE_REPO}@{REFERENCE_COMMIT}")
        sources[name] = text
    root = Path(tempfile.mkdtemp(prefix="flashml-reference-"))
    atexit.register(shutil.rmtree, root, ignore_errors=True)
    package = root / "flashml_workloads"
    package.mkdir()
    (package / "__init__.py").write_text("")
    for name, text in sources.items():
        (package / Path(name).name).write_bytes(text)
    sys.path.insert(0, str(root))
    names = ("fedavg_weights", "fedavg_driver", "kmeans_driver", "kmeans_shard")
    return [importlib.import_module(f"flashml_workloads.{n}") for n in names]


# -- inputs -----------------------------------------------------------------

rng = np.random.default_rng(SEED)

SHAPES = {"fc1.weight": [4, 3], "fc1.bias": [4], "fc2.weight": [2, 2, 2]}


def floats(n: int, scale: float) -> list[float]:
    return [float(v) for v in rng.normal(0.0, scale, n)]


def blob(scale: float, shapes: dict = SHAPES) -> dict:
    return {name: {"shape": list(shape), "data": floats(math.prod(shape), scale)} for name, shape in shapes.items()}


def scaled(b: dict, factor: float) -> dict:
    return {name: {"shape": p["shape"], "data": [factor * v for v in p["data"]]} for name, p in b.items()}


def metrics(samples, loss: float, shard: int, delta_file: str | None = "delta.json") -> dict:
    """A task's metrics.json as fedavg_worker writes it (sorted keys)."""
    m = {"local_steps": 5, "loss": loss, "round": 0, "samples": samples, "shard": shard}
    if delta_file is not None:
        m["delta_file"] = delta_file
    return dict(sorted(m.items()))


# -- running the reference --------------------------------------------------


def outcome(call, raises: str | None, reason: str | None, mentions: list[str] | None):
    """What the reference returned, or the error it raised; checked against what the case says."""
    try:
        value = call()
    except Exception as exc:  # noqa: BLE001 - recorded, and checked against `raises`
        if raises is None:
            raise
        if type(exc).__name__ != raises:
            raise AssertionError(f"expected {raises}, the reference raised {type(exc).__name__}: {exc}") from exc
        return {"error": {"reason": reason, "python": f"{type(exc).__name__}: {exc}", "mentions": mentions or []}}
    if raises is not None:
        raise AssertionError(f"expected {raises}, the reference returned {value!r}")
    return value


def fedavg_reduce_cases(fw) -> list[dict]:
    cases = []

    def case(name, contributions, clip_factor=None, raises=None, reason=None, mentions=None):
        kwargs = {} if clip_factor is None else {"clip_factor": clip_factor}

        def call():
            reduced, events = fw.reduce_deltas_with_report(copy.deepcopy(contributions), **kwargs)
            return {"reduced": reduced, "clipped": [e._asdict() for e in events]}

        entry = {"name": name}
        if clip_factor is not None:
            entry["clip_factor"] = clip_factor
        entry["contributions"] = [{"delta": d, "samples": n} for d, n in contributions]
        entry["expect"] = outcome(call, raises, reason, mentions)
        cases.append(entry)

    honest = [(blob(0.01), n) for n in (120, 80, 200, 57)]
    case("an honest round of four, varied sample counts, three parameters: nothing clipped", honest)

    five = [(blob(0.02), n) for n in (300, 310, 290, 305)] + [(scaled(blob(0.02), 100.0), 295)]
    case("one contribution a hundred times the others is scaled to 3x the median norm", five[:2] + five[4:] + five[2:4])

    small = [(blob(0.01), 64), (blob(0.01), 64)]
    case(
        "an even count: the median is the mean of the two middle norms, and only the far outlier is clipped",
        small + [(scaled(blob(0.01), 10.0), 64), (scaled(blob(0.01), 1000.0), 64)],
    )

    huge = blob(1.0)
    huge["fc1.bias"]["data"][1] = 1e200
    case(
        "squares that overflow give an infinite norm, scaled by cap/inf = 0 to zeros (-0.0 for negative values)",
        [(blob(0.5), 10), (blob(0.5), 11), (huge, 12)],
    )
    case("a lone contribution is its own median and never clipped", [(blob(5.0), 1)])
    zeros = {name: {"shape": p["shape"], "data": [0.0] * len(p["data"])} for name, p in blob(1.0).items()}
    zeros["fc1.bias"]["data"][2] = -0.0
    case("all-zero deltas put the cap at 0 and clip nothing", [(zeros, 3), (copy.deepcopy(zeros), 4)])
    tiny = {"w": {"shape": [4], "data": [5e-324, -1e-310, 2.5e-308, 1e-160]}}
    case("subnormal values whose squares underflow", [(tiny, 7), (scaled(tiny, 3.0), 9), (scaled(tiny, 0.5), 1)])
    ints = {"w": {"shape": [2, 2], "data": [0, 3, -4, 12]}, "b": {"shape": [2], "data": [1, -1]}}
    case(
        "JSON integers in the data (squared and summed exactly by the reference) agree below 2^53",
        [(ints, 5), ({"w": {"shape": [2, 2], "data": [0.5, 3, -4.25, 12]}, "b": {"shape": [2], "data": [1, -1.5]}}, 6),
         ({"w": {"shape": [2, 2], "data": [9000, 1, 2, 3]}, "b": {"shape": [2], "data": [0.1, 0.2]}}, 2)],
    )
    a, b, c = blob(0.1), blob(0.1), blob(0.1)
    b = {name: b[name] for name in reversed(list(b))}
    case(
        "each norm sums its own blob's parameters in its own order; the mean follows the first blob's order",
        [(a, 9), (b, 13), (scaled(c, 50.0), 11)],
    )
    shaped = {"scale": {"shape": [], "data": [0.75]}, "empty": {"shape": [0], "data": []},
              "m": {"shape": [3, 1], "data": floats(3, 1.0)}}
    case(
        "a scalar (shape []) and an empty parameter (shape [0])",
        [(shaped, 2), ({"scale": {"shape": [], "data": [-1.5]}, "empty": {"shape": [0], "data": []},
                        "m": {"shape": [3, 1], "data": floats(3, 1.0)}}, 3)],
    )
    many = [(blob(0.03), int(n)) for n in rng.integers(1, 100_000, 6)]
    many.insert(3, (scaled(blob(0.03), 7.0), 40_000))
    case("seven contributions with sample counts up to 100000, one clipped", many)
    case("a smaller clip factor (1.0) clips everything above the median",
         [(blob(0.01), 10), (blob(0.02), 20), (blob(0.03), 30), (blob(0.04), 40), (blob(0.05), 50)], clip_factor=1.0)

    # -- refused, in the reference's order of checks
    two = [(blob(0.01), 5), (blob(0.01), 6)]
    for factor in (0.0, -1.0, math.nan, math.inf):
        case(f"a clip factor of {factor!r} is refused", two, clip_factor=factor,
             raises="ValueError", reason="clip_factor", mentions=["clip_factor"])
    case("no contributions", [], raises="ValueError", reason="no_contributions")
    case("a negative total sample count", [(blob(0.01), -5)], raises="ValueError", reason="negative_total")
    case("a zero total sample count", [(blob(0.01), 0), (blob(0.01), 0)], raises="ValueError", reason="zero_total")
    case("a NaN sample count", [(blob(0.01), 3), (blob(0.01), math.nan)],
         raises="ValueError", reason="samples_not_finite", mentions=["contribution 1"])
    case("an infinite sample count", [(blob(0.01), math.inf), (blob(0.01), 2)],
         raises="ValueError", reason="samples_not_finite", mentions=["contribution 0"])
    case("a fractional sample count", [(blob(0.01), 2.5), (blob(0.01), 3)],
         raises="ValueError", reason="samples_not_integer", mentions=["contribution 0"])
    case("a zero sample count among positive ones", [(blob(0.01), 5), (blob(0.01), 0), (blob(0.01), 4)],
         raises="ValueError", reason="samples_not_positive", mentions=["contribution 1"])
    case("a negative sample count with a positive total", [(blob(0.01), 5), (blob(0.01), -2)],
         raises="ValueError", reason="samples_not_positive", mentions=["contribution 1"])
    nan_first = blob(0.01)
    nan_first["fc1.bias"]["data"][0] = math.nan
    case("the sample counts are checked before any delta", [(nan_first, 5), (blob(0.01), 0)],
         raises="ValueError", reason="samples_not_positive", mentions=["contribution 1"])
    missing = blob(0.01)
    del missing["fc2.weight"]
    case("a delta missing a parameter", [(blob(0.01), 5), (missing, 6)],
         raises="WeightShapeMismatch", reason="shape_mismatch", mentions=["contribution 1", "fc2.weight"])
    reshaped = blob(0.01)
    reshaped["fc1.weight"]["shape"] = [3, 4]
    case("a parameter of another shape", [(blob(0.01), 5), (reshaped, 6)],
         raises="WeightShapeMismatch", reason="shape_mismatch", mentions=["contribution 1", "fc1.weight"])
    short = blob(0.01)
    short["fc1.bias"]["data"].pop()
    short["fc1.bias"]["data"][0] = math.nan
    case("data shorter than its shape (checked before its NaN)", [(short, 5), (blob(0.01), 6)],
         raises="WeightShapeMismatch", reason="shape_mismatch", mentions=["contribution 0", "fc1.bias"])
    for label, value in (("NaN", math.nan), ("Infinity", math.inf), ("a string", "0.5"), ("null", None)):
        bad = blob(0.01)
        bad["fc2.weight"]["data"][2] = value
        case(f"{label} in a delta's data", [(blob(0.01), 5), (bad, 6), (blob(0.01), 7)],
             raises="NonFiniteWeights", reason="not_finite", mentions=["contribution 1", "fc2.weight", "index 2"])
    reshaped = blob(0.01)
    reshaped["fc1.weight"]["shape"] = [3, 4]
    case("an earlier contribution's NaN is reported before a later one's shape", [(nan_first, 5), (reshaped, 6)],
         raises="NonFiniteWeights", reason="not_finite", mentions=["contribution 0", "fc1.bias", "index 0"])
    case("a delta that is a list, not an object", [([1.0, 2.0], 5)],
         raises="AttributeError", reason="malformed_weights", mentions=["contribution 0"])
    no_data = blob(0.01)
    del no_data["fc1.bias"]["data"]
    case("a parameter without data", [(blob(0.01), 5), (no_data, 6)],
         raises="KeyError", reason="malformed_weights", mentions=["contribution 1", "fc1.bias", "data"])
    text_shape = blob(0.01)
    text_shape["fc1.bias"]["shape"] = 4
    case("a shape that is not a list", [(text_shape, 5)],
         raises="TypeError", reason="malformed_weights", mentions=["contribution 0", "fc1.bias", "shape"])
    return cases


def fedavg_apply_cases(fw) -> list[dict]:
    cases = []

    def case(name, base, delta, raises=None, reason=None, mentions=None):
        cases.append({"name": name, "base": base, "delta": delta, "expect": outcome(
            lambda: {"weights": fw.apply_delta(copy.deepcopy(base), copy.deepcopy(delta))}, raises, reason, mentions)})

    base = blob(1.0)
    case("weights plus a delta, parameter by parameter", base, blob(0.01))
    flipped = blob(0.01)
    case("the result keeps the base's parameter order", blob(1.0), {name: flipped[name] for name in reversed(list(flipped))})
    case("negative zeros: -0.0 + -0.0 stays -0.0", {"w": {"shape": [3], "data": [-0.0, -0.0, 0.0]}},
         {"w": {"shape": [3], "data": [-0.0, 0.0, -0.0]}})
    reshaped = blob(0.01)
    reshaped["fc1.bias"]["shape"] = [2, 2]
    case("a delta of another shape", blob(1.0), reshaped,
         raises="WeightShapeMismatch", reason="shape_mismatch", mentions=["fc1.bias"])
    case("a sum that overflows", {"w": {"shape": [2], "data": [1.5, 1.7e308]}}, {"w": {"shape": [2], "data": [1.0, 1.7e308]}},
         raises="NonFiniteWeights", reason="not_finite", mentions=["apply_delta", "'w'", "index 1"])
    return cases


class Coordinator:
    """The coordinator run_fedavg talks to, in memory: every listed task committed and COMPLETED."""

    def __init__(self, fw_driver, committed: list[dict]):
        self.missing = fw_driver.ArtifactNotFound
        self.store = {}
        for t in committed:
            self.store[f"jobs/{JOB}/{t['task_id']}/metrics.json"] = t["metrics"]
            self.store[f"jobs/{JOB}/{t['task_id']}/{t['metrics'].get('delta_file', 'delta.json')}"] = t["delta"]
        self.completed = [t["task_id"] for t in committed]

    def submit(self, body):
        return {"job_id": JOB}

    def job_state(self, job_id):
        return "RUNNING"

    def artifacts(self, job_id):
        return [{"key": key} for key in self.store]

    def tasks(self, job_id):
        return [{"task_id": t, "state": "COMPLETED"} for t in self.completed]

    def get_artifact(self, key):
        if key not in self.store:
            raise self.missing(key)
        return copy.deepcopy(self.store[key])

    def put_artifact(self, key, body):
        pass


def fedavg_round_cases(fd) -> list[dict]:
    cases = []

    def case(name, weights, task_ids, committed, raises=None, reason=None, mentions=None):
        def call():
            history = []
            result = fd.run_fedavg(
                Coordinator(fd, committed), rounds=1, num_shards=len(task_ids), min_participants=len(committed),
                worker_params={}, initial_weights=copy.deepcopy(weights), poll_seconds=0.0, round_timeout_s=5.0,
                build_round=lambda r, uri: {"body": {}, "task_ids": task_ids}, on_round=history.append,
            )
            (round_result,) = history
            return {"weights": result["weights"], "participants": round_result["participants"],
                    "mean_loss": round_result["mean_loss"], "clipped": round_result["clipped"]}

        cases.append({"name": name, "weights": weights, "task_ids": task_ids, "committed": committed,
                      "expect": outcome(call, raises, reason, mentions)})

    def task(task_id, shard, samples, delta, delta_file="delta.json"):
        return {"task_id": task_id, "metrics": metrics(samples, float(rng.uniform(0.1, 2.5)), shard, delta_file),
                "delta": delta}

    ids = [f"shard-{i:03d}" for i in range(4)]
    case(
        "a first round from no weights: 3 of 4 shards, listed out of order, the reduced deltas are the weights",
        {}, ids,
        [task("shard-003", 3, 250, blob(0.2)), task("shard-000", 0, 260, blob(0.2)),
         task("shard-002", 2, 240, scaled(blob(0.2), 40.0))],
    )
    ids = [f"task-{i:03d}" for i in range(5)]
    case(
        "a later round applies the reduced delta; delta files by other names; clips reported by task id",
        blob(1.0), ids,
        [task("task-004", 4, 31, blob(0.05), "update.json"), task("task-001", 1, 29, scaled(blob(0.05), 9.0)),
         task("task-000", 0, 33, blob(0.05), "d-0.json"), task("task-002", 2, 30, blob(0.05))],
    )
    ids = ["a", "a-b", "a.b", "b\uff01", "b\U0001f600"]
    case(
        "tasks are reduced in their metrics keys' code-point order: a-b/ and a.b/ before a/, U+FF01 before U+1F600",
        blob(1.0), ids,
        [task(t, i, int(rng.integers(10, 1000)), blob(0.3)) for i, t in enumerate(reversed(ids))],
    )
    case(
        "a delta_file outside the task's own prefix is refused",
        blob(1.0), ["shard-000", "shard-001"],
        [task("shard-000", 0, 5, blob(0.1)), task("shard-001", 1, 5, blob(0.1), "../shard-000/delta.json")],
        raises="ValueError", reason="unsafe_delta_file", mentions=["../shard-000/delta.json"],
    )
    case(
        "a task reporting zero samples fails the round",
        blob(1.0), ["shard-000", "shard-001"],
        [task("shard-000", 0, 5, blob(0.1)), task("shard-001", 1, 0, blob(0.1))],
        raises="ValueError", reason="samples_not_positive", mentions=["contribution 1"],
    )
    reshaped = blob(0.1)
    reshaped["fc1.bias"] = {"shape": [5], "data": floats(5, 0.1)}
    case(
        "deltas of another model than the weights",
        blob(1.0), ["shard-000", "shard-001"],
        [task("shard-000", 0, 5, reshaped), task("shard-001", 1, 6, copy.deepcopy(reshaped))],
        raises="WeightShapeMismatch", reason="shape_mismatch", mentions=["fc1.bias"],
    )
    # Eleven weights of 1/11, each rounded up, times the largest double: their sum rounds past it.
    ids = [f"shard-{i:03d}" for i in range(11)]
    case(
        "first weights that overflow are refused",
        {}, ids,
        [task(t, i, 1, {"w": {"shape": [2], "data": [1.0, sys.float_info.max]}}) for i, t in enumerate(ids)],
        raises="NonFiniteWeights", reason="not_finite", mentions=["bootstrap weights", "'w'", "index 1"],
    )
    return cases


def kmeans_cases(kd, ks) -> list[dict]:
    cases = []

    def shards_of(points: np.ndarray, n_shards: int) -> list[bytes]:
        """The CSV bytes shard_and_upload would put, one per shard."""
        put = []
        saved = kd._http
        kd._http = lambda method, url, data=None, ctype=None: put.append(data)
        try:
            kd.shard_and_upload(BASE_URL, points.tolist(), n_shards, "data")
        finally:
            kd._http = saved
        return put

    def partials_of(points, n_shards, centroids):
        out = []
        with tempfile.TemporaryDirectory() as tmp:
            for s, csv_bytes in enumerate(shards_of(points, n_shards)):
                path = Path(tmp) / f"shard-{s:03d}.csv"
                path.write_bytes(csv_bytes)
                task_id = f"it00-shard-{s:03d}"
                spec = {"task_id": task_id, "params": {"centroids": centroids}, "inputs": {"shard": str(path)}}
                # As the worker commits it: json.dumps(..., sort_keys=True).
                out.append({"task_id": task_id, "metrics": json.loads(json.dumps(ks.run_shard(spec), sort_keys=True))})
        return out

    def case(name, centroids, shards, partials, raises=None, reason=None, mentions=None):
        store = {f"jobs/{JOB}/{p['task_id']}/metrics.json": p["metrics"] for p in partials}

        def http(method, url, data=None, ctype="application/json"):
            path = url[len(BASE_URL):]
            if method == "POST" and path == "/v1alpha1/jobs":
                return {"job_id": JOB}
            if path == f"/v1alpha1/jobs/{JOB}":
                return {"state": "SUCCEEDED"}
            if path == f"/v1alpha1/jobs/{JOB}/artifacts":
                # The reference coordinator lists sorted(Path.rglob("*")): path order, component by component.
                return [{"key": k} for k in sorted(store, key=lambda k: PurePosixPath(k).parts)]
            return copy.deepcopy(store[path[len("/v1alpha1/artifacts/"):]])

        def call():
            saved = kd._http
            kd._http = http
            try:
                uris = [f"artifact://data/shard-{s:03d}.csv" for s in range(shards)]
                result = kd.run_kmeans(BASE_URL, uris, copy.deepcopy(centroids), iterations=1, poll_seconds=0.0)
            finally:
                kd._http = saved
            return {"centroids": result["centroids"], "inertia": result["inertia_history"][0]}

        cases.append({"name": name, "centroids": centroids, "shards": shards, "partials": partials,
                      "expect": outcome(call, raises, reason, mentions)})

    def blobs(k, dims, per_cluster):
        centers = rng.uniform(-10.0, 10.0, (k, dims))
        return np.concatenate([c + rng.normal(0.0, 1.5, (per_cluster, dims)) for c in centers]), centers

    points, centers = blobs(4, 3, 40)
    points = points[rng.permutation(len(points))]
    start = [[float(v) for v in row] for row in centers + rng.normal(0.0, 2.0, centers.shape)]
    parts = partials_of(points, 3, start)
    case("three shards, four clusters in three dimensions, every cluster populated", start, 3, parts)
    case("partials listed out of order are summed in task-id order", start, 3, [parts[2], parts[0], parts[1]])

    points, centers = blobs(2, 2, 30)
    far = [[float(v) for v in centers[0]], [1000, -1000], [float(v) for v in centers[1]]]
    case("an empty cluster keeps its centroid exactly as given (integers too)", far, 4, partials_of(points, 4, far))
    points, centers = blobs(3, 5, 25)
    start = [[float(v) for v in row] for row in centers]
    case("one shard", start, 1, partials_of(points, 1, start))
    few = partials_of(points, 3, start)
    case("fewer partials than shards", start, 4, few, raises="RuntimeError", reason="partial_count")
    no_counts = copy.deepcopy(few)
    del no_counts[1]["metrics"]["counts"]
    case("a partial without counts", start, 3, no_counts,
         raises="KeyError", reason="malformed_partial", mentions=["partial 1", "counts"])
    short = copy.deepcopy(few)
    short[2]["metrics"]["sums"][1] = short[2]["metrics"]["sums"][1][:-1]
    case("a sums row shorter than the centroids", start, 3, short,
         raises="IndexError", reason="malformed_partial", mentions=["partial 2", "sums[1]"])
    text = copy.deepcopy(few)
    text[0]["metrics"]["sums"][0][0] = "1.5"
    case("a sum that is a string", start, 3, text,
         raises="TypeError", reason="malformed_partial", mentions=["partial 0", "sums[0][0]"])
    return cases


# -- writing ----------------------------------------------------------------


def encode(value):
    """Non-finite floats as markers; tuples as lists."""
    if isinstance(value, float) and not math.isfinite(value):
        return {"$float": "nan" if math.isnan(value) else "inf" if value > 0 else "-inf"}
    if isinstance(value, dict):
        return {k: encode(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [encode(v) for v in value]
    return value


def number(value) -> str:
    text = repr(value)
    if "e" in text:
        mantissa, exponent = text.split("e")
        sign = "-" if exponent.startswith("-") else ""
        text = f"{mantissa}e{sign}{exponent.lstrip('+-').lstrip('0') or '0'}"
    return text


def is_marker(value) -> bool:
    return isinstance(value, dict) and list(value) == ["$float"]


def flat(value) -> str | None:
    """The value on one line, or None when it holds an object the formatter keeps expanded."""
    if is_marker(value):
        return '{ "$float": ' + json.dumps(value["$float"]) + " }"
    if isinstance(value, dict):
        return "{}" if not value else None
    if isinstance(value, list):
        items = [flat(v) for v in value]
        return None if None in items else "[" + ", ".join(items) + "]"
    if isinstance(value, (bool, str)) or value is None:
        return json.dumps(value)
    return number(value)


def layout(value, column: int, indent: int, tail: str) -> str:
    """`value` starting at `column`, `tail` after it on its line: as `biome format` prints JSON."""
    one_line = flat(value)
    if one_line is not None and (column + len(one_line) + len(tail) <= WIDTH or not isinstance(value, list)):
        return one_line
    inner = " " * (indent + 2)
    if isinstance(value, dict):
        lines = []
        for i, (key, item) in enumerate(value.items()):
            comma = "," if i < len(value) - 1 else ""
            prefix = json.dumps(key) + ": "
            lines.append(inner + prefix + layout(item, indent + 2 + len(prefix), indent + 2, comma) + comma)
        return "{\n" + "\n".join(lines) + "\n" + " " * indent + "}"
    if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value):
        # Numbers fill each line.
        lines, line = [], ""
        for i, item in enumerate(value):
            text = number(item) + ("," if i < len(value) - 1 else "")
            if line and len(line) + 1 + len(text) <= WIDTH:
                line += " " + text
            else:
                if line:
                    lines.append(line)
                line = inner + text
        lines.append(line)
        return "[\n" + "\n".join(lines) + "\n" + " " * indent + "]"
    lines = []
    for i, item in enumerate(value):
        comma = "," if i < len(value) - 1 else ""
        lines.append(inner + layout(item, indent + 2, indent + 2, comma) + comma)
    return "[\n" + "\n".join(lines) + "\n" + " " * indent + "]"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reference", required=True, type=Path,
                        help=f"a checkout of {REFERENCE_REPO}, or its git directory")
    args = parser.parse_args()
    if sys.version_info[:2] != (3, 11):
        # The reference runs on 3.11 (its service and API images pin it). From
        # 3.12 on, sum() of floats is compensated (Neumaier), which moves the
        # last bits of every L2 norm: these vectors would no longer be its.
        sys.exit(f"run this with Python 3.11, not {sys.version.split()[0]}")
    fw, fd, kd, ks = load_reference(args.reference)
    doc = {
        "about": "Inputs and outputs of the reference's federated-averaging and k-means reduce "
                 "(scripts/reference-vectors.py writes this file; do not edit it by hand).",
        "reference": {"repo": REFERENCE_REPO, "commit": REFERENCE_COMMIT, "python": "3.11", "seed": SEED},
        "floats": "JSON numbers, read back to the same double; NaN and the infinities as "
                  '{"$float": "nan" | "inf" | "-inf"}',
        "fedavg": {
            "reduce": fedavg_reduce_cases(fw),
            "apply": fedavg_apply_cases(fw),
            "rounds": fedavg_round_cases(fd),
        },
        "kmeans": {"iterations": kmeans_cases(kd, ks)},
    }
    doc = encode(doc)
    json.dumps(doc, allow_nan=False)  # nothing non-finite left unmarked
    OUT.write_text(layout(doc, 0, 0, "") + "\n")
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
