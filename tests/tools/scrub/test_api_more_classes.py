"""scrub, the classes the second adversarial run found surviving (issues #36 and #37).

Each class is generated (no secret-shaped literal in the source) and planted in every kind
of field of ``test_scrub_secrets``, and also as two elements of a command line (``--user``
then the name), inside a nested list, and with its characters written as JSON ``\\u``
escapes; ``scrub --check`` finds each one.
"""

from __future__ import annotations

import base64
import copy
import json
import random
import re
import string
import tempfile
import urllib.parse
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from steptrace.cli import app
from steptrace.tools.scrub import scrub_document, scrub_text
from tests.conftest import gpu_trace, read_json
from tests.tools.scrub.test_api_secrets import (
    ALNUM,
    PLACES,
    Secret,
    all_strings,
    masked_strings,
    survivors,
    user_names,
)

SETTINGS = settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


def _random(rng: random.Random, alphabet: str, size: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(size))


def _label(rng: random.Random) -> str:
    return rng.choice(string.ascii_lowercase) + _random(rng, string.ascii_lowercase, 5)


@st.composite
def argv_users(draw: st.DrawFn) -> Secret:
    """``--user carlaz``: planted as one string, or as two elements of a command line."""
    user = draw(user_names())
    option = draw(st.sampled_from(["--user", "--username", "--login", "--owner"]))
    return Secret("user", f"{option} {user}", (), words=(user,))


@st.composite
def path_hosts(draw: st.DrawFn) -> Secret:
    """A host after ``//`` or ``\\``: UNC paths, ``//server/share``, ``x\\node12b.cs.edu``."""
    rng = random.Random(draw(st.integers(0, 2**32)))
    short = f"{_label(rng)}{rng.randrange(10, 99)}"
    full = f"{short}.{_label(rng)}.example.{rng.choice(['com', 'edu'])}"
    text, gone = draw(
        st.sampled_from(
            [
                (f"\\\\{short}\\share\\data.bin", short),
                (f"//{full}/share/run/x.py", full),
                (f"//{short}/share/run/x.py", short),
                (f"x\\{full}", full),
                (f"\\\\{full}\\c$\\logs", full),
            ]
        )
    )
    return Secret("host", text, (), words=(gone,))


@st.composite
def framed_ipv4(draw: st.DrawFn) -> Secret:
    """An IPv4 address in brackets (``ops@[10.0.0.9]``) or mapped into IPv6."""
    octets = draw(st.lists(st.integers(1, 254), min_size=3, max_size=3))
    address = ".".join(str(n) for n in (10, *octets))
    text = draw(
        st.sampled_from(
            [
                f"ops@[{address}]",
                f"[{address}]:29500",
                f"::ffff:{address}",
                f"peer ::ffff:{address} up",
                f"[::ffff:{address}]:80",
            ]
        )
    )
    return Secret("ip", text, (address,))


@st.composite
def sas_signatures(draw: st.DrawFn) -> Secret:
    """An Azure SAS ``sig=``, percent-encoded, in a URL or a bare query."""
    rng = random.Random(draw(st.integers(0, 2**32)))
    raw = base64.b64encode(bytes(rng.randrange(256) for _ in range(32))).decode()
    assume("+" in raw or "/" in raw)  # something to percent-encode
    signature = urllib.parse.quote(raw, safe="")
    query = f"sv=2022-11-02&se=2030-01-01&sr=b&sp=r&sig={signature}"
    account = _label(rng)
    text = draw(
        st.sampled_from(
            [
                f"https://{account}.blob.core.windows.net/c/model.bin?{query}",
                f"model.bin?{query}",
                f"blob {query}",
            ]
        )
    )
    return Secret("secret", text, (signature,), also=("base64-secret",))


@st.composite
def sendgrid_keys(draw: st.DrawFn) -> Secret:
    rng = random.Random(draw(st.integers(0, 2**32)))
    key = "S" + "G." + _random(rng, ALNUM + "_-", 22) + "." + _random(rng, ALNUM + "_-", 43)
    return Secret("token", draw(st.sampled_from([key, f"key={key}", f"({key})"])), (key,))


@st.composite
def short_pems(draw: st.DrawFn) -> Secret:
    """The head of a PEM block and a short body, cut before its END line."""
    rng = random.Random(draw(st.integers(0, 2**32)))
    body = _random(rng, ALNUM + "+/", draw(st.integers(4, 30)))
    kind = draw(st.sampled_from(["RSA PRIVATE KEY", "PRIVATE KEY", "EC PRIVATE KEY"]))
    head = draw(st.sampled_from([f"-----BEGIN {kind}-----", f"---- BEGIN SSH2 {kind} ----"]))
    return Secret("pem", f"{head}\n{body}", (body,))


@st.composite
def docker_auths(draw: st.DrawFn) -> Secret:
    """A Docker ``auth`` (base64 of ``user:password``), found again elsewhere."""
    rng = random.Random(draw(st.integers(0, 2**32)))
    pair = f"{_label(rng)}:{_random(rng, ALNUM, 10)}"
    value = base64.b64encode(pair.encode()).decode()
    fields = {"auths": {"https://index.docker.io/v1/": {"auth": value}}}
    return Secret("secret", f"registry auth {value}", (value,), fields=fields)


@st.composite
def numeric_passwords(draw: st.DrawFn) -> Secret:
    """``"password": 98765432``: a number under a secret field, and the same digits elsewhere."""
    value = draw(st.integers(10**6, 10**10 - 1))
    key = draw(st.sampled_from(["password", "PGPASSWORD", "db_pin_password"]))
    return Secret("secret", f"pin {value} set", (), words=(str(value),), fields={key: value})


@st.composite
def private_key_ids(draw: st.DrawFn) -> Secret:
    """A service account's ``private_key_id``, found again elsewhere."""
    rng = random.Random(draw(st.integers(0, 2**32)))
    value = _random(rng, "0123456789abcdef", draw(st.integers(8, 40)))
    fields = {"private_key_id": value}
    return Secret("secret", f"key id {value}", (), (value,), fields, also=("hex-secret",))


MORE_CLASSES: dict[str, st.SearchStrategy[Secret]] = {
    "argv user": argv_users(),
    "host after // or \\": path_hosts(),
    "bracketed or mapped IPv4": framed_ipv4(),
    "SAS signature": sas_signatures(),
    "SendGrid key": sendgrid_keys(),
    "short PEM": short_pems(),
    "Docker auth": docker_auths(),
    "numeric password": numeric_passwords(),
    "private_key_id": private_key_ids(),
}


def _argv(doc: dict[str, Any], text: str, n: int) -> None:
    """An option and its value as two elements of a command line."""
    words = text.split(" ", 1) if re.match(r"--?[a-z]", text) else [text]
    _args(doc)[f"argv{n}"] = ["python", "train.py", *words, "--epochs", "3"]


def _args(doc: dict[str, Any]) -> dict[str, Any]:
    event = next(e for e in doc["traceEvents"] if e.get("ph") == "X" and e.get("cat") == "cpu_op")
    args: dict[str, Any] = event.setdefault("args", {})
    return args


MORE_PLACES = {
    **PLACES,
    "argv": _argv,
    "nested list": lambda doc, text, n: _args(doc).update({f"deep{n}": [[1, [text]], "x"]}),
}


def plant(doc: dict[str, Any], secret: Secret, place: str) -> dict[str, Any]:
    copied = copy.deepcopy(doc)
    MORE_PLACES[place](copied, secret.text, 0)
    for key, value in secret.fields.items():
        copied.setdefault("system", {}).setdefault("env0", {})[key] = value
    return copied


def left(doc: Any, secret: Secret) -> list[str]:
    """What survives, numbers included (a numeric password is a number in its field)."""
    found = survivors(doc, [secret])
    text = json.dumps(doc)
    for word in secret.words:
        if word.isdigit() and re.search(rf"(?<![\w.]){word}(?![\w.])", text):
            found.append(word)
    return found


@pytest.fixture(scope="module")
def small_doc() -> dict[str, Any]:
    """A real trace cut to its first 60 events, with its metadata."""
    doc: dict[str, Any] = read_json(gpu_trace("cpu_infer"))
    doc.pop("host_name", None)  # the only name it declares: a clean starting point
    return {**doc, "traceEvents": doc["traceEvents"][:60]}


@pytest.mark.parametrize("name", list(MORE_CLASSES))
@SETTINGS
@given(data=st.data())
def test_each_class_is_removed_from_every_kind_of_field(
    small_doc: dict[str, Any], name: str, data: st.DataObject
) -> None:
    secret: Secret = data.draw(MORE_CLASSES[name], label="secret")
    assume(left(small_doc, secret) == [])
    place = data.draw(st.sampled_from(list(MORE_PLACES)), label="place")
    scrubbed, report = scrub_document(plant(small_doc, secret, place))
    assert left(scrubbed, secret) == []
    assert secret.reported(report.counts), report.counts
    again, second = scrub_document(scrubbed)
    assert (again, second.total) == (scrubbed, 0)


def test_a_docker_auth_that_reads_as_a_password_assignment_is_removed(
    small_doc: dict[str, Any],
) -> None:
    """Hypothesis found it: this auth's base64 holds ``pwd``, and before ``(12)`` in a stack
    frame it read as the name of a ``pwd=...`` assignment, whose name was kept whole."""
    value = base64.b64encode(b"gjpumj:g06PLiQItI").decode()
    assert "pwd" in value
    fields = {"auths": {"https://index.docker.io/v1/": {"auth": value}}}
    secret = Secret("secret", f"registry auth {value}", (value,), fields=fields)
    for place in MORE_PLACES:
        scrubbed, _ = scrub_document(plant(small_doc, secret, place))
        assert left(scrubbed, secret) == [], place


def _escaped(text: str, rng: random.Random) -> str:
    """JSON contents of ``text`` with some of its letters and digits written as ``\\u``
    escapes."""
    return "".join(
        f"\\u{ord(c):04x}"
        if c.isalnum() and c.isascii() and rng.random() < 0.5
        else json.dumps(c)[1:-1]
        for c in text
    )


@pytest.mark.parametrize("name", [*MORE_CLASSES, "AWS key"])
@SETTINGS
@given(data=st.data())
def test_each_class_is_found_written_with_json_escapes(
    small_doc: dict[str, Any], name: str, data: st.DataObject
) -> None:
    rng = random.Random(data.draw(st.integers(0, 2**32)))
    if name == "AWS key":
        key = "AK" + "IA" + _random(rng, string.ascii_uppercase + string.digits, 16)
        secret = Secret("token", f"aws {key}", (key,))
    else:
        secret = data.draw(MORE_CLASSES[name], label="secret")
    assume(left(small_doc, secret) == [])
    place = data.draw(st.sampled_from(list(MORE_PLACES)), label="place")
    text = json.dumps(plant(small_doc, secret, place))
    for piece in {*secret.text.split(" ", 1), secret.text} - {""}:  # argv splits it in two
        written = json.dumps(piece)[1:-1]
        text = text.replace(f'"{written}"', f'"{_escaped(piece, rng)}"')
        text = text.replace(written, _escaped(piece, rng))
    assert json.loads(text) == plant(small_doc, secret, place)  # the same document
    scrubbed, report = scrub_text(text.encode())
    assert left(json.loads(scrubbed), secret) == []
    assert secret.reported(report.counts), report.counts


@pytest.mark.parametrize("name", list(MORE_CLASSES))
@settings(SETTINGS, max_examples=5)
@given(data=st.data())
def test_scrub_check_finds_every_class(
    small_doc: dict[str, Any], name: str, data: st.DataObject
) -> None:
    secret: Secret = data.draw(MORE_CLASSES[name], label="secret")
    place = data.draw(st.sampled_from(list(MORE_PLACES)), label="place")
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder, "planted.json")
        path.write_text(json.dumps(plant(small_doc, secret, place)))
        done = CliRunner().invoke(app, ["scrub", "--check", str(path)])
    assert done.exit_code == 1, done.output
    assert "still look sensitive" in done.output
    assert any(f"  {kind} " in done.output for kind in {secret.kind, *secret.also}), done.output


def test_nothing_else_changes_around_an_argv_pair() -> None:
    doc = {"traceEvents": [], "argv": ["train.py", "--user", "qzvwxk", "--lr", "0.1"]}
    scrubbed, report = scrub_document(doc)
    assert scrubbed["argv"] == ["train.py", "--user", "<user-1>", "--lr", "0.1"]
    assert report.counts == {"user": 1}
    flag = {"traceEvents": [], "argv": ["train.py", "--user", "--lr", "0.1"]}
    assert scrub_document(flag)[0] == flag  # an option after an option is no value


def test_the_number_of_a_secret_field_becomes_a_placeholder_string() -> None:
    doc = {"traceEvents": [], "password": 98765432, "pins": {"PIN_PASSWORD": [1234567, 2]}}
    scrubbed, report = scrub_document(doc)
    assert scrubbed["password"] == "<secret-1>"
    assert scrubbed["pins"]["PIN_PASSWORD"] == ["<secret-2>", 2]  # 2: a count, not a secret
    assert report.counts == {"secret": 2}
    assert scrub_document({"traceEvents": [], "ts": 98765432})[1].total == 0
    assert all("98765432" not in text for text in all_strings(scrubbed))
    assert masked_strings(scrubbed)  # still a document
