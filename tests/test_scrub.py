"""scrub: planted secrets never survive, nothing else changes, the timing figures stay.

Secrets are planted in copies of the real traces of ../shared/traces. Tokens are built at
run time from pieces, so that no token-shaped literal sits in the source.
"""

from __future__ import annotations

import base64
import copy
import gzip
import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import steptrace
from steptrace.errors import TraceError
from steptrace.tools.scrub import ScrubReport, scrub_document, scrub_file
from tests.conftest import (
    NOT_A_TRACE,
    WriteTrace,
    gpu_trace,
    read_json,
    shared_file,
    trace_params,
)

Fill = Callable[[str, str], str]  # (kind, secret) -> what the planted document holds


def _repeat(piece: str, size: int) -> str:
    return (piece * size)[:size]


def _jwt(payload: dict[str, Any]) -> str:
    def part(value: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).decode().rstrip("=")

    return f"{part({'alg': 'HS256', 'typ': 'JWT'})}.{part(payload)}.{_repeat('Sg9x-', 43)}"


USER = "alice"
HOST = "gpu-node-17.corp.example.com"
SHORT_HOST = "gn17"
BUILD_HOST = "ci.build.internal"
EMAIL = "bob.smith@example.com"
OTHER_EMAIL = "carol+ml@research.example.org"
HF = "hf_" + _repeat("Qx7Lm2Vb", 34)
GHP = "gh" + "p_" + _repeat("K4nW8zRt", 36)
PAT = "github" + "_pat_" + _repeat("11ABCDEFG0", 22) + "_" + _repeat("zY9x", 59)
SK = "sk" + "-proj-" + _repeat("Rq5Tz8Lw", 40)
AKIA = "AK" + "IA" + _repeat("Z7QW", 16)
JWT = _jwt({"sub": "1234567890", "name": "Bob"})
HEX = _repeat("9f86d081884c7d65", 64)
B64 = _repeat("wJalrXUtnFEMIK7MDENGbPxRfiCY", 28) + "/" + _repeat("Ab3+", 12)
WANDB = "s3cr3t-wandb-value"
PASSWORD = "hunter2"
SECRETS = {
    USER: "user",
    HOST: "host",
    SHORT_HOST: "host",
    BUILD_HOST: "host",
    EMAIL: "email",
    OTHER_EMAIL: "email",
    HF: "token",
    GHP: "token",
    PAT: "token",
    SK: "token",
    AKIA: "token",
    JWT: "jwt",
    HEX: "hex-secret",
    B64: "base64-secret",
    WANDB: "secret",
    PASSWORD: "secret",
}


def plant(doc: dict[str, Any], fill: Fill) -> dict[str, Any]:
    """A copy of ``doc`` with every secret above in metadata, names and args."""
    planted = copy.deepcopy(doc)

    def put(secret: str) -> str:
        return fill(SECRETS[secret], secret)

    planted["host_name"] = put(HOST)
    planted["username"] = put(USER)
    planted["traceName"] = f"/home/{put(USER)}/runs/trace.json"
    planted["metadata"] = {
        "env": {
            "HF_TOKEN": put(HF),
            "WANDB_API_KEY": put(WANDB),
            "PASSWORD": put(PASSWORD),
            "HOSTNAME": put(SHORT_HOST),
            "TOKENIZERS_PARALLELISM": "false",
        },
        "command": f"wandb login {put(WANDB)} --relogin",
    }
    events = planted["traceEvents"]
    for event in events:
        if event.get("cat") == "python_function" and event["name"].startswith("t1_train.py"):
            event["name"] = f"/home/{put(USER)}/proj/{event['name']}"
    operators = [e for e in events if e.get("ph") == "X" and e.get("cat") == "cpu_op"]
    operators[0].setdefault("args", {})["planted"] = [
        f"mail {put(EMAIL)}; cc {put(OTHER_EMAIL)}",
        {"auth": f"Bearer {put(JWT)}", "keys": [put(GHP), put(PAT), put(SK), put(AKIA)]},
        f"hf={put(HF)} digest={put(HEX)} blob={put(B64)}",
    ]
    operators[1].setdefault("args", {})["kernel_file"] = (
        f"/tmp/torchinductor_{put(USER)}/qa/cqaokwf2bph4.py on {put(HOST)}"
    )
    operators[2].setdefault("args", {})["note"] = (
        f"run by {put(USER)} at https://{put(BUILD_HOST)}/42"
    )
    first = operators[0]
    for _ in range(2):  # two events that share a name must still share one
        events.append(
            {
                "ph": "i",
                "s": "t",
                "name": f"login {put(EMAIL)}",
                "ts": first["ts"],
                "pid": first["pid"],
                "tid": first["tid"],
            }
        )
    return planted


def keep(kind: str, secret: str) -> str:
    return secret


def label(kind: str, secret: str) -> str:
    return f"<{kind}>"


def strings(node: Any) -> Iterator[str]:
    """Every string value (never a key)."""
    if isinstance(node, str):
        yield node
    elif isinstance(node, dict):
        for child in node.values():
            yield from strings(child)
    elif isinstance(node, list):
        for child in node:
            yield from strings(child)


def unnumbered(node: Any) -> Any:
    """``<kind-N>`` placeholders as ``<kind>``, to compare with a document planted with labels."""
    if isinstance(node, str):
        return re.sub(r"<([a-z0-9-]+?)-\d+>", r"<\1>", node)
    if isinstance(node, dict):
        return {key: unnumbered(child) for key, child in node.items()}
    if isinstance(node, list):
        return [unnumbered(child) for child in node]
    return node


def survivors(scrubbed: Any, secrets: list[str]) -> list[str]:
    text = "\n".join(strings(scrubbed))
    return [secret for secret in secrets if secret in text]


@pytest.fixture(scope="module")
def cpu_doc() -> dict[str, Any]:
    doc: dict[str, Any] = read_json(gpu_trace("cpu_train_trace_all"))
    return doc


@pytest.fixture(scope="module")
def planted_and_scrubbed(cpu_doc: dict[str, Any]) -> tuple[dict[str, Any], Any, ScrubReport]:
    planted = plant(cpu_doc, keep)
    scrubbed, report = scrub_document(planted)
    return planted, scrubbed, report


def test_no_planted_secret_survives(planted_and_scrubbed: tuple[Any, Any, ScrubReport]) -> None:
    _, scrubbed, _ = planted_and_scrubbed
    assert survivors(scrubbed, list(SECRETS)) == []
    assert not any(re.search(rf"\b{USER}\b", text) for text in strings(scrubbed))


def test_only_the_secrets_changed(
    cpu_doc: dict[str, Any], planted_and_scrubbed: tuple[Any, Any, ScrubReport]
) -> None:
    _, scrubbed, _ = planted_and_scrubbed
    assert unnumbered(scrubbed) == plant(cpu_doc, label)


def test_the_same_secret_gets_the_same_placeholder(
    planted_and_scrubbed: tuple[Any, Any, ScrubReport],
) -> None:
    _, scrubbed, _ = planted_and_scrubbed
    logins = [e["name"] for e in scrubbed["traceEvents"] if e["name"].startswith("login ")]
    assert logins == ["login <email-1>", "login <email-1>"]
    user = scrubbed["username"]
    assert user == "<user-1>"
    assert scrubbed["traceName"] == f"/home/{user}/runs/trace.json"
    assert scrubbed["host_name"] == "<host-1>"
    args = next(e["args"] for e in scrubbed["traceEvents"] if "planted" in e.get("args", {}))
    assert args["planted"][0] == "mail <email-1>; cc <email-2>"
    keys = args["planted"][1]["keys"]
    assert len(set(keys)) == 4
    assert all(re.fullmatch(r"<token-\d+>", key) for key in keys)
    env = scrubbed["metadata"]["env"]
    assert args["planted"][2].startswith(f"hf={env['HF_TOKEN']} ")
    assert env["TOKENIZERS_PARALLELISM"] == "false"
    assert scrubbed["metadata"]["command"] == f"wandb login {env['WANDB_API_KEY']} --relogin"


def test_the_report_counts_each_replacement(
    planted_and_scrubbed: tuple[Any, Any, ScrubReport],
) -> None:
    planted, _, report = planted_and_scrubbed
    assert set(report.counts) == set(SECRETS.values())
    assert report.total == sum(report.counts.values())
    python_functions = sum(e["name"].startswith(f"/home/{USER}/") for e in planted["traceEvents"])
    assert python_functions > 0
    # username, traceName, kernel_file, note, and one per renamed python_function
    assert report.counts["user"] == 4 + python_functions
    assert report.counts["email"] == 4  # twice in args, once in each of two instant events


def test_scrubbing_is_pure_and_deterministic(cpu_doc: dict[str, Any]) -> None:
    planted = plant(cpu_doc, keep)
    before = json.dumps(planted)
    first, _ = scrub_document(planted)
    second, _ = scrub_document(planted)
    assert json.dumps(planted) == before
    assert first == second


# What the real traces hold that scrub replaces, each a true finding: the kinds, and the
# declared names that the event names hold (replaced there too, as whole words).
REAL_FINDINGS: dict[str, tuple[set[str], tuple[str, ...]]] = {  # first part in the name
    "cpu_only_gloo": ({"user"}, ()),  # username
    "cpu_": ({"host"}, ()),  # host_name "vm"
    "ddp_rank": ({"host"}, ()),  # host_name "vm"
    "triton": ({"user"}, ()),  # /tmp/torchinductor_<user>/ in args.kernel_file
    "gp100": ({"user"}, ()),  # traceName under /private/home/<user>/
    "kineto_v100": ({"user"}, ()),  # /home/<user>/ in every args."Call stack"
    # HF_TOKEN, HOSTNAME, STARTED_BY (also the first folder of 7 python_function names),
    # and the public host names of the os-release URLs
    "tracelens": ({"host", "token", "user"}, ("moca",)),
    "v100_1rank": ({"host", "user"}, ()),  # host_name (an FQDN), username, tw_user
}
_STRING = re.compile(r'("(?:[^"\\]|\\.)*":)|"(?:[^"\\]|\\.)*"')  # a key (kept) or a value


def skeleton(doc: Any) -> str:
    """The document as compact JSON with every string value blanked: keys, numbers, shape."""
    return _STRING.sub(r"\1", json.dumps(doc, separators=(",", ":")))


def timeline(doc: Any) -> list[tuple[Any, ...]]:
    return [tuple(e.get(f) for f in ("ph", "cat", "ts", "dur", "pid", "tid")) for e in doc]


@pytest.mark.parametrize("path", trace_params())
def test_real_traces_keep_every_name_and_number(path: Path) -> None:
    doc = read_json(path)
    scrubbed, report = scrub_document(doc)
    events, after = doc["traceEvents"], scrubbed["traceEvents"]
    if len(events) < 20_000:  # the larger ones: the cheaper checks below only
        assert skeleton(scrubbed) == skeleton(doc)
    assert list(scrubbed) == list(doc)
    assert timeline(after) == timeline(events)
    kinds, words = next((v for part, v in REAL_FINDINGS.items() if part in path.name), (set(), ()))
    assert set(report.counts) == kinds
    names = [e.get("name") for e in events]
    for word in words:
        pattern = re.compile(rf"(?<![A-Za-z0-9]){word}(?![A-Za-z0-9])")
        names = [pattern.sub("<user>", name) if name else name for name in names]
    assert [unnumbered(e.get("name")) for e in after] == names


def test_a_real_token_in_a_real_trace_is_removed() -> None:
    doc = read_json(gpu_trace("tracelens"))
    token = doc["metadata"]["system"]["env"]["HF_TOKEN"]
    scrubbed, _ = scrub_document(doc)
    assert token.startswith("hf_")
    assert survivors(scrubbed, [token]) == []
    assert scrubbed["metadata"]["system"]["env"]["HF_TOKEN"] == "<token-1>"
    assert scrubbed["trace_id"] == doc["trace_id"]  # the profiler's random id is kept


def test_the_scrubbed_file_gives_the_same_timing_figures(tmp_path: Path) -> None:
    source = tmp_path / "planted.json.gz"
    source.write_bytes(
        gzip.compress(json.dumps(plant(read_json(gpu_trace("amd_mi250")), keep)).encode())
    )
    target = tmp_path / "scrubbed.json.gz"
    report = scrub_file(source, target)
    assert report.total > 0
    assert target.read_bytes()[:2] == b"\x1f\x8b"
    assert survivors(read_json(target), list(SECRETS)) == []
    before, after = steptrace.analyze(source).analysis, steptrace.analyze(target).analysis
    assert before.steps and after.steps
    assert [s.wall_ms for s in after.steps] == [s.wall_ms for s in before.steps]
    assert [s.gpu.busy_ms if s.gpu else None for s in after.steps] == [
        s.gpu.busy_ms if s.gpu else None for s in before.steps
    ]
    assert after.kernels == before.kernels


def test_a_plain_target_gets_plain_json(tmp_path: Path) -> None:
    target = tmp_path / "scrubbed.json"
    scrub_file(gpu_trace("cpu_infer"), target)
    assert read_json(target)["host_name"] == "<host-1>"
    assert target.read_bytes()[:1] == b"{"


# Property: secrets of every format, embedded in arbitrary text, never survive.
SEPARATORS = st.sampled_from([" ", ", ", "; ", "(", ")", "[", "]", "<", ">", '"', "\t"])
ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
# generic user names scrub keeps, and the words of its own placeholders
KEPT_WORDS = {"root", "user", "shared", "admin", "ubuntu", "nobody", "guest", "runner"} | {
    "email", "jwt", "token", "host", "secret", "hex", "base64"
}  # fmt: skip


def _has_classes(text: str, *classes: str) -> bool:
    return all(any(char in chars for char in text) for chars in classes)


def _token(prefix: str, size: int) -> st.SearchStrategy[str]:
    return st.text(ALNUM, min_size=size, max_size=size + 8).map(lambda body: prefix + body)


SECRET_STRATEGIES = st.one_of(
    st.emails(),
    _token("hf_", 34),
    _token("gh" + "p_", 36),
    _token("github" + "_pat_", 82),
    _token("sk" + "-", 48),
    st.text("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", min_size=16, max_size=16).map(
        lambda body: "AK" + "IA" + body
    ),
    st.tuples(*(st.text(ALNUM + "-_", min_size=8, max_size=40) for _ in range(3))).map(
        lambda parts: f"eyJ{parts[0]}.eyJ{parts[1]}.{parts[2]}"
    ),
    st.binary(min_size=16, max_size=40)
    .map(bytes.hex)
    .filter(lambda h: _has_classes(h, "0123456789", "abcdef")),
    st.binary(min_size=30, max_size=60)
    .map(lambda raw: base64.b64encode(raw).decode())
    .filter(lambda b: _has_classes(b, ALNUM[:26], ALNUM[26:52], ALNUM[52:])),
)


@pytest.fixture(scope="module")
def small_doc() -> dict[str, Any]:
    """The first 100 events of a real trace, with its metadata."""
    doc: dict[str, Any] = read_json(gpu_trace("cpu_infer"))
    return {**doc, "traceEvents": doc["traceEvents"][:100]}


@settings(
    max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    secret=SECRET_STRATEGIES,
    before=st.text(max_size=12),
    after=st.text(max_size=12),
    left=SEPARATORS,
    right=SEPARATORS,
    user=st.from_regex(r"[a-z][a-z0-9_-]{2,11}", fullmatch=True).filter(
        lambda name: name not in KEPT_WORDS
    ),
)
def test_generated_secrets_never_survive(
    small_doc: dict[str, Any],
    secret: str,
    before: str,
    after: str,
    left: str,
    right: str,
    user: str,
) -> None:
    text = f"{before}{left}{secret}{right}{after}"
    args = {"values": [text, {"path": f"/home/{user}/x.py", "by": f"by {user}"}]}
    event = {"ph": "i", "s": "t", "name": text, "ts": 0, "pid": 1, "tid": 1, "args": args}
    doc = {**small_doc, "traceEvents": [*small_doc["traceEvents"], event]}
    scrubbed, report = scrub_document(doc)
    assert survivors(scrubbed, [secret]) == []
    word = re.compile(rf"(?<![A-Za-z0-9]){re.escape(user)}(?![A-Za-z0-9])")
    assert not any(word.search(value) for value in strings(scrubbed))
    assert report.total >= 2


# Bad input: a one-line TraceError naming the file; the input and any existing file untouched.
def assert_error(source: Path, target: Path, problem: str, named: Path) -> None:
    with pytest.raises(TraceError) as caught:
        scrub_file(source, target)
    message = str(caught.value)
    assert "\n" not in message
    assert str(named) in message
    assert problem in message


def test_missing_input(tmp_path: Path) -> None:
    source = tmp_path / "missing.json"
    assert_error(source, tmp_path / "out.json", "no such file", source)
    assert not (tmp_path / "out.json").exists()


def test_existing_output_is_refused_and_untouched(tmp_path: Path) -> None:
    target = tmp_path / "out.json"
    target.write_bytes(b"keep me")
    assert_error(gpu_trace("cpu_infer"), target, "exists already", target)
    assert target.read_bytes() == b"keep me"


def test_the_input_is_never_the_output(write_trace: WriteTrace) -> None:
    source = write_trace(read_json(gpu_trace("cpu_infer")))
    before = source.read_bytes()
    assert_error(source, source, "input itself", source)
    assert source.read_bytes() == before


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (b"{not json", "invalid or truncated JSON"),
        (b"  ", "empty file"),
        (b"[[1, 2]]", "not a torch"),
    ],
)
def test_invalid_input(
    write_trace: WriteTrace, tmp_path: Path, content: bytes, problem: str
) -> None:
    source = write_trace(content)
    target = tmp_path / "out.json"
    assert_error(source, target, problem, source)
    assert not target.exists()


def test_broken_gzip_and_non_trace_files(tmp_path: Path, write_trace: WriteTrace) -> None:
    packed = gpu_trace("cpu_infer").read_bytes()
    broken = write_trace(packed[: len(packed) // 2], name="cut.json.gz")
    assert_error(broken, tmp_path / "a.json", "broken gzip", broken)
    timeline = shared_file(f"gpu/{NOT_A_TRACE}")
    assert_error(timeline, tmp_path / "b.json", "not a torch.profiler trace", timeline)


def test_declared_names_never_touch_operators_or_categories() -> None:
    from steptrace.tools.scrub import scrub_document

    doc = {
        "username": "max",
        "host_name": "cuda",
        "traceEvents": [
            {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": 1, "dur": 1},
            {"ph": "X", "cat": "cpu_op", "name": "aten::max_pool2d", "ts": 2, "dur": 1},
            {"ph": "X", "cat": "cpu_op", "name": "run by max on cuda", "ts": 3, "dur": 1},
        ],
    }
    scrubbed, _ = scrub_document(doc)
    events = scrubbed["traceEvents"]
    assert [e["cat"] for e in events] == ["cuda_runtime", "cpu_op", "cpu_op"]
    assert events[1]["name"] == "aten::max_pool2d"
    assert "max" not in events[2]["name"].split() and "cuda" not in events[2]["name"].split()
