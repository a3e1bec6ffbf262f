"""scrub removes every class of secret from every kind of field, and keeps what is not one.

Each class of ``test_scrub_secrets`` is generated and planted in each kind of field of a
small real trace (event names, args values and keys, ``cat``, metadata,
``distributedInfo``, stack frames, thread names, the scenario block, a list).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from steptrace.tools.scrub import scrub_document
from tests.conftest import gpu_trace, read_json
from tests.tools.scrub.test_api_secrets import (
    CLASSES,
    PLACES,
    Secret,
    all_strings,
    plant,
    survivors,
)

SETTINGS = settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@pytest.fixture(scope="module")
def small_doc() -> dict[str, Any]:
    """A real trace cut to its first 60 events, with its metadata."""
    doc: dict[str, Any] = read_json(gpu_trace("cpu_infer"))
    doc.pop("host_name", None)  # the only name it declares: a clean starting point
    return {**doc, "traceEvents": doc["traceEvents"][:60]}


@pytest.mark.parametrize("name", list(CLASSES))
@SETTINGS
@given(data=st.data())
def test_each_class_is_removed_from_every_kind_of_field(
    small_doc: dict[str, Any], name: str, data: st.DataObject
) -> None:
    secret: Secret = data.draw(CLASSES[name], label="secret")
    # a secret the trace already holds (a Bearer token ``record_s``, as in ``record_shapes``)
    # would be found after scrubbing whatever scrub did: not a planted one
    assume(survivors(small_doc, [secret]) == [])
    place = data.draw(st.sampled_from(list(PLACES)), label="place")
    planted = plant(small_doc, [(secret, place)])
    scrubbed, report = scrub_document(planted)
    assert survivors(scrubbed, [secret]) == []
    assert secret.reported(report.counts), report.counts
    if name == "URL credentials":  # the user and the password, never taken for an e-mail
        assert "email" not in report.counts
    again, second = scrub_document(scrubbed)
    assert (again, second.total) == (scrubbed, 0)


@pytest.mark.parametrize("place", list(PLACES))
def test_every_kind_of_field_is_reached(small_doc: dict[str, Any], place: str) -> None:
    """One e-mail per kind of field: the field reached, nothing else in the trace changed."""
    local = "".join(chr(ord("a") + n) for n in (1, 14, 1))  # assembled: no literal address
    secret = Secret("email", f"{local}@{local}-lab.example.org", (f"{local}@",))
    planted = plant(small_doc, [(secret, place)])
    scrubbed, report = scrub_document(planted)
    assert report.counts == {"email": 1}
    texts = [text.replace("<email-1>", secret.text) for text in all_strings(scrubbed)]
    assert texts == list(all_strings(planted))


# What scrub must keep: names of the format, of PyTorch, of kernels, of files, versions.
KEPT = [
    "aten::add",
    "c10::add",
    "c10d::allreduce_",
    "torch.nn.functional",
    "torch.distributed.ddp.reducer::copy_bucket_to_grad",
    "threading.local",
    "self.bn",
    "torch.mm",
    "model.layer1.0.conv1",
    "nn.Module: Linear_12",
    "/usr/lib/python3.12/site-packages/torch/nn/modules/module.py(1501): _call_impl",
    "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEENS_6detail5ArrayIPcLi1EEEEEviT0_T1_",
    "ampere_sgemm_128x64_nn",
    "cqaokwf2bph4egogzevc22vluasiyuui4i54zpemp6knbsggfbuu.py",
    "12.8.4.1",
    "cuBLAS 12.8.4.1",
    "libcublas-12-8=12.8.4.1-1",
    "nvidia-curand-cu12==10.3.5.147",
    "tiktoken==0.9.0",
    "version 11.10.3.66",
    "INFO:2024-04-11 13:30:02 3727853:3727853 CuptiActivityProfiler.cpp:665] 55: Memset",
    "<built-in method values of collections.OrderedDict object at 0x7f0bbc584590>",
    "c10::~TensorImpl()",
    "(Ubuntu 11.4.0-1ubuntu1~22.04) 11.4.0",
    "Qwen/Qwen1.5-0.5B-Chat",
    "hf_transfer",
    "max_tokens=512",
    "ProfilerStep#12",
    "Memcpy HtoD (Pageable -> Device)",
    "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__",
    "Bearer",
    "/home/shared/data",
    "/Users/Shared/x",
    "run as root on localhost",
    "array[::2]",
]


@pytest.mark.parametrize("text", KEPT)
def test_what_is_not_a_secret_is_kept(text: str) -> None:
    doc = {"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": text, "ts": 1, "dur": 1}]}
    scrubbed, report = scrub_document(doc)
    assert scrubbed == doc, report.counts


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("TOKENIZERS_PARALLELISM", "false"),
        ("HF_TOKEN_PATH", "/root/.cache/huggingface/token"),
        ("max_new_tokens", "128"),
        ("trace_id", "608603CCCD4948B49EBD57C446609168"),
        ("pg_name", "9f1e3c4d5a6b7c8d9e0f1a2b3c4d5e6f_1"),
        ("cuda_driver_version", "10.0.0.1"),
        ("dispatch_key", "AutogradCUDA"),
    ],
)
def test_fields_that_only_look_secret_are_kept(key: str, value: str) -> None:
    doc = {"traceEvents": [], key: value}
    assert scrub_document(doc) == (doc, scrub_document(doc)[1])
    assert scrub_document(doc)[1].total == 0


def test_declared_names_never_touch_operators_categories_or_keys() -> None:
    doc = {
        "username": "max",
        "host_name": "cuda",
        "traceEvents": [
            {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": 1, "dur": 1},
            {"ph": "X", "cat": "cpu_op", "name": "aten::max_pool2d", "ts": 2, "dur": 1},
            {"ph": "X", "cat": "kernel", "name": "run by max on cuda", "ts": 3, "dur": 1},
        ],
    }
    scrubbed, _ = scrub_document(doc)
    events = scrubbed["traceEvents"]
    assert [list(e) for e in events] == [list(e) for e in doc["traceEvents"]]
    assert [e["cat"] for e in events] == ["cuda_runtime", "cpu_op", "kernel"]
    assert events[1]["name"] == "aten::max_pool2d"
    assert events[2]["name"] == "run by <user-1> on cuda"  # a format word is never learned
    assert (scrubbed["username"], scrubbed["host_name"]) == ("<user-1>", "<host-1>")


def test_keys_the_analyses_read_are_never_renamed() -> None:
    name = "Input Dims"
    doc = {"username": name, "traceEvents": [{"ph": "X", "args": {name: [[1]]}, "ts": 0}]}
    scrubbed, _ = scrub_document(doc)
    assert scrubbed["traceEvents"][0]["args"] == {name: [[1]]}


def test_secrets_in_json_text_and_split_over_a_list() -> None:
    value, token = "q" + "7" * 5, "t0" + "k" * 6
    config = json.dumps({"api_key": value, "note": f"uses {value}"})
    doc = {
        "traceEvents": [],
        "config": config,  # a JSON object written as a string, as some writers do
        "headers": ["Authorization: Bearer", token],
        "argv": ["train.py", "--hf-token", token, "--lr", "0.1"],
    }
    scrubbed, report = scrub_document(doc)
    assert json.loads(scrubbed["config"]) == {"api_key": "<secret-2>", "note": "uses <secret-2>"}
    assert scrubbed["headers"] == ["Authorization: Bearer", "<secret-1>"]
    assert scrubbed["argv"] == ["train.py", "--hf-token", "<secret-1>", "--lr", "0.1"]
    assert report.counts == {"secret": 4}


def test_a_field_governs_its_own_value_only() -> None:
    """A user field holding a number, or an object that closed, says nothing of what follows."""
    doc = {"traceEvents": [{"username": 5}, "freddy"], "a": {"user": None}, "b": "zed"}
    assert scrub_document(doc) == (doc, scrub_document(doc)[1])
    assert scrub_document(doc)[1].total == 0
