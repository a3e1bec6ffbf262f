"""Collective instances of one trace, in each vocabulary Kineto has written."""

from __future__ import annotations

from steptrace.analysis.communication.collectives import Instance, collective_instances
from steptrace.analysis.time.links import cpu_tree, gpu_links
from steptrace.trace.load import load_trace
from tests.conftest import WriteTrace
from tests.tracegen import cpu, document, kernel, label, launch, step


def instances(
    write_trace: WriteTrace, events: list[dict[str, object]], gpu: bool = True
) -> tuple[Instance, ...]:
    trace = load_trace(write_trace(document(events, gpu_devices=gpu)), progress=False)
    tree = cpu_tree(trace.events)
    return collective_instances(trace.events, tree, gpu_links(trace.events, tree), 0)


RPC = {
    "Collective name": "allreduce",
    "Process Group Name": "7",
    "Seq": 4,
    "In msg nelems": 1000,
    "dtype": "BFloat16",
    "Group size": 2,
    "Process Group Ranks": "[0, 1]",
}


def test_record_param_comms_with_its_kernel(write_trace: WriteTrace) -> None:
    (found,) = instances(
        write_trace,
        [
            step(1, 0, 1000),
            cpu("c10d::allreduce_", 10, 100),
            cpu("record_param_comms", 20, 80, **RPC),
            launch(30, 10, correlation=5),
            kernel(
                "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
                50,
                400,
                stream=20,
                correlation=5,
            ),
            cpu("record_param_comms", 500, 5, **{"Collective name": "wait"}),
        ],
    )
    assert (found.kind, found.process_group, found.seq, found.source) == (
        "all_reduce",
        "7",
        4,
        "record_param_comms",
    )
    assert (found.start_ns, found.end_ns, found.issued_ns) == (50_000, 450_000, 20_000)
    assert (found.nbytes, found.group_size, found.group_ranks) == (2000, 2, (0, 1))
    assert found.blocking


def test_collective_args_written_as_other_json_types(write_trace: WriteTrace) -> None:
    """A group name written as a number, counts as strings: read as the text and the number
    they spell, in whichever row order the args come."""
    written = {**RPC, "Process Group Name": 7, "Seq": "4", "In msg nelems": "1000", "dtype": 3}
    trace = load_trace(
        write_trace(
            document(
                [
                    step(1, 0, 1000),
                    cpu("record_param_comms", 20, 80, **written),
                    cpu("record_param_comms", 10, 5, **RPC),
                ]
            )
        ),
        progress=False,
    )
    events = trace.events

    def texts(field: str) -> list[str | None]:
        return [events.text(int(i)) for i in events.sparse_column(field).values]

    def numbers(field: str) -> list[int]:
        return events.sparse_column(field).values.tolist()  # type: ignore[no-any-return]

    assert texts("process_group") == ["7", "7"]
    assert texts("dtype") == ["BFloat16", "3"]
    assert numbers("seq") == [4, 4] and numbers("in_nelems") == [1000, 1000]
    assert numbers("out_nelems") == [-1, -1]


def test_c10d_operator_and_a_kernel_alone_in_either_vocabulary(write_trace: WriteTrace) -> None:
    found = instances(
        write_trace,
        [
            step(1, 0, 1000),
            cpu("c10d::broadcast_", 10, 100),
            launch(30, 10, correlation=5),
            kernel(
                "ncclKernel_Broadcast_RING_LL_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)",
                50,
                100,
                stream=20,
                correlation=5,
            ),
            kernel("ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)", 300, 50, stream=21),
            kernel("NCCLDEVKERNEL_ALLGATHER_RING_LL", 400, 50, stream=21),
        ],
    )
    assert [(i.kind, i.source, i.lane) for i in found] == [
        ("broadcast", "c10d", "stream 20"),
        ("send_recv", "nccl_kernel", "stream 21"),
        ("all_gather", "nccl_kernel", "stream 21"),
    ]


def test_gloo_events_stand_for_their_cpu_operators(write_trace: WriteTrace) -> None:
    found = instances(
        write_trace,
        [
            step(1, 0, 1000),
            cpu("c10d::allreduce_", 10, 20),
            label("gloo:all_reduce", 15, 300, tid=7),
            label("gloo:barrier", 400, 30, tid=8),
        ],
        gpu=False,
    )
    assert [(i.kind, i.source, i.start_ns, i.end_ns, i.blocking) for i in found] == [
        ("all_reduce", "gloo", 15_000, 315_000, True),  # ts 0 is the step's start
        ("barrier", "gloo", 400_000, 430_000, True),
    ]
